/* resolve.c - finding the real driver, and handing out wrappers.
 *
 * The CUDA runtime, PyTorch and CuPy never call cuMemcpyAsync by symbol: they
 * dlopen libcuda.so.1, dlsym cuGetProcAddress_v2, and fetch every function
 * through it (DESIGN.md section 1).  So cubatch exports dlsym and the three
 * cuGetProcAddress entry points; each calls the real resolver first, keeps its
 * return code, NULL results and symbolStatus, and replaces the returned pointer
 * only if it is *identical* to the real address of a function in hooks.def.
 * The driver picks the variant for the caller's version and flags; we only swap
 * it for our wrapper of that same variant.  No name guessing. */
#include "internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

void *cb_real[CB_HOOK_COUNT];
struct cb_driver cb_drv;
atomic_int cb_init_done;
const char *cb_batching_reason = "not initialised";
int cb_batching;
static int cb_driver_found; /* libcuda.so.1 could be opened at initialisation */

/* Not static: the x86-64 entry of dlsym (below) jumps through it. */
CB_HIDDEN void *(*cb_real_dlsym)(void *, const char *);
#define real_dlsym cb_real_dlsym
static pthread_mutex_t cb_init_lock = PTHREAD_MUTEX_INITIALIZER;
static CB_TLS int cb_in_init;

/* real address -> wrapper, sorted by real address for bsearch */
struct cb_swap_entry { uintptr_t real; void *wrapper; };
static struct cb_swap_entry cb_swap_table[CB_HOOK_COUNT];
static size_t cb_swap_count;

/* dlsym is called by sanitizer runtimes while they initialise, before their shadow
 * memory exists: the code on that path must not be instrumented. */
#define CB_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined", "thread")))

CB_HIDDEN CB_UNINSTRUMENTED void cb_real_dlsym_init(void);
CB_UNINSTRUMENTED void cb_real_dlsym_init(void)
{
    /* Never call the public dlsym here: it is ours.  RTLD_NEXT finds libc's
     * unless something (a sanitizer runtime initialising before us) stands
     * between; then ask libc itself. */
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5"};
    void *p = NULL;
    for (int i = 0; i < 2 && !p; i++)
        p = dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    if (!p) {
        void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
        for (int i = 0; i < 2 && libc && !p; i++)
            p = dlvsym(libc, "dlsym", versions[i]);
    }
    real_dlsym = (void *(*)(void *, const char *))p;
}

static int swap_cmp(const void *a, const void *b)
{
    uintptr_t x = ((const struct cb_swap_entry *)a)->real, y = ((const struct cb_swap_entry *)b)->real;
    return x < y ? -1 : x > y;
}

/* The wrapper for a real driver address, or the address itself. */
static void *cb_swap(void *p)
{
    struct cb_swap_entry key = {(uintptr_t)p, NULL};
    const struct cb_swap_entry *e = bsearch(&key, cb_swap_table, cb_swap_count, sizeof key, swap_cmp);
    return e ? e->wrapper : p;
}

/* The real function behind p, if p is one of our own wrappers (a driver whose
 * resolver went through the global symbol scope would hand those back), else p:
 * cubatch must never call its own wrappers, or a submission would flush itself. */
static void *cb_unwrap(void *p)
{
    for (size_t i = 0; i < CB_HOOK_COUNT; i++)
        if (p == cb_hooks[i].wrapper)
            return cb_real[i];
    return p;
}

static void *sym(void *h, const char *name) { return h ? real_dlsym(h, name) : NULL; }

static void decide_batching(void)
{
    cb_batching = 0;
#if CUDA_VERSION >= 13000
    int v = 0;
    if (!cb_drv.DriverGetVersion || cb_drv.DriverGetVersion(&v) != CUDA_SUCCESS) {
        cb_batching_reason = "cuDriverGetVersion failed";
        return;
    }
    if (v < 13000) {
        cb_batching_reason = "driver older than CUDA 13.0";
        cb_log(CB_LOG_NOTICE, "driver reports version %d (< 13000): pure pass-through", v);
        return;
    }
    void *p = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!cb_drv.GetProcAddress_v2 ||
        cb_drv.GetProcAddress_v2("cuMemcpyBatchAsync", &p, 13000, 0, &st) != CUDA_SUCCESS || !p) {
        cb_batching_reason = "driver has no CUDA 13.0 cuMemcpyBatchAsync entry point";
        return;
    }
    cb_drv.MemcpyBatchAsync = (__typeof__(cb_drv.MemcpyBatchAsync))cb_unwrap(p);
    if (!cb_opt(CB_OPT_enable)) {
        cb_batching_reason = "switched off (CUBATCH_ENABLE=0)";
        return;
    }
    cb_batching = 1;
    cb_batching_reason = "ok";
#else
    cb_batching_reason = "built against CUDA headers older than 13.0";
#endif
}

void cb_init_slow(void)
{
    if (cb_in_init)
        return; /* re-entered from libcuda's own dlsym calls while we load it */
    pthread_mutex_lock(&cb_init_lock);
    if (atomic_load(&cb_init_done)) {
        pthread_mutex_unlock(&cb_init_lock);
        return;
    }
    cb_in_init = 1;
    if (!real_dlsym)
        cb_real_dlsym_init();
    cb_config_load();
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libcuda.so.1", RTLD_LAZY);
    for (size_t i = 0; i < CB_HOOK_COUNT; i++) {
        cb_real[i] = sym(h, cb_hooks[i].name);
        if (cb_real[i] && cb_real[i] != cb_hooks[i].wrapper)
            cb_swap_table[cb_swap_count++] = (struct cb_swap_entry){(uintptr_t)cb_real[i], cb_hooks[i].wrapper};
    }
    qsort(cb_swap_table, cb_swap_count, sizeof cb_swap_table[0], swap_cmp);
    cb_drv.GetProcAddress_v2 = CB_REAL(cuGetProcAddress_v2);
    cb_drv.DriverGetVersion = sym(h, "cuDriverGetVersion");
    cb_drv.PointerGetAttributes = sym(h, "cuPointerGetAttributes");
    cb_drv.StreamIsCapturing = sym(h, "cuStreamIsCapturing");
    cb_drv.StreamIsCapturing_ptsz = sym(h, "cuStreamIsCapturing_ptsz");
    cb_drv.StreamGetFlags = sym(h, "cuStreamGetFlags");
    cb_drv.StreamGetCtx = sym(h, "cuStreamGetCtx");
    cb_drv.StreamGetDevice = sym(h, "cuStreamGetDevice");
    cb_drv.CtxGetCurrent = sym(h, "cuCtxGetCurrent");
    cb_drv.CtxSetCurrent = sym(h, "cuCtxSetCurrent");
    cb_drv.CtxGetDevice = sym(h, "cuCtxGetDevice");
    cb_drv.CtxPushCurrent = sym(h, "cuCtxPushCurrent_v2");
    cb_drv.CtxPopCurrent = sym(h, "cuCtxPopCurrent_v2");
    cb_drv.CtxGetApiVersion = sym(h, "cuCtxGetApiVersion");
    cb_drv.DevicePrimaryCtxGetState = sym(h, "cuDevicePrimaryCtxGetState");
    cb_drv.DevicePrimaryCtxRetain = sym(h, "cuDevicePrimaryCtxRetain");
    cb_drv.DevicePrimaryCtxRelease = CB_REAL(cuDevicePrimaryCtxRelease_v2);
    cb_drv.StreamCreate = sym(h, "cuStreamCreate");
    cb_drv.EventCreate = sym(h, "cuEventCreate");
    cb_drv.EventRecord = CB_REAL(cuEventRecord);
    cb_drv.EventRecord_ptsz = CB_REAL(cuEventRecord_ptsz);
    cb_drv.StreamWaitEvent = CB_REAL(cuStreamWaitEvent);
    cb_drv.StreamWaitEvent_ptsz = CB_REAL(cuStreamWaitEvent_ptsz);
    cb_driver_found = h != NULL;
    if (h) {
        decide_batching();
    } else {
        cb_batching_reason = "libcuda.so.1 not found";
    }
    if (!cb_batching && (cb_opt(CB_OPT_overlap) || cb_opt(CB_OPT_src_order) != CB_SRC_ORDER_STREAM))
        cb_warn("CUBATCH_OVERLAP / CUBATCH_SRC_ORDER cannot be honoured: batching is unavailable (%s)",
                cb_batching_reason);
    if (!cb_batching && cb_opt(CB_OPT_stats) != CB_STATS_OFF)
        cb_log(CB_LOG_WARN, "batching unavailable (%s): every copy passes through", cb_batching_reason);
    cb_log(CB_LOG_NOTICE, "batching %s (%s); %zu driver functions wrapped", cb_batching ? "on" : "off",
           cb_batching_reason, cb_swap_count);
    cb_config_describe();
    cb_api_init();
    atomic_store_explicit(&cb_init_done, 1, memory_order_release);
    cb_in_init = 0;
    pthread_mutex_unlock(&cb_init_lock);
}

/* A wrapper called with no real function behind it.  Without cubatch the
 * program could not have reached a function the driver lacks (its dlsym would
 * say NULL, its -lcuda link would not load), so there is no answer to copy; the
 * answer is quiet and the same every time: CUDA_ERROR_STUB_LIBRARY when no
 * driver could be loaded at all (what every function of the toolkit's stub
 * libcuda answers), CUDA_ERROR_NOT_SUPPORTED when the driver lacks just this
 * function.  A notice (log level 2) tells it once per function. */
CUresult cb_absent(int id)
{
    static atomic_uchar told[CB_HOOK_COUNT];
    CUresult rc = cb_driver_found ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_STUB_LIBRARY;
    if (!atomic_exchange(&told[id], 1))
        cb_log(CB_LOG_NOTICE, "%s called, but %s: it returns %d", cb_hooks[id].name,
               cb_driver_found ? "the driver does not export it" : "no CUDA driver could be loaded", (int)rc);
    return rc;
}

/* Driver functions are named cu + an upper-case letter; only those are ours to
 * look at (curl_*, cuserid and the rest are not). */
static int is_driver_name(const char *name)
{
    return name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z';
}

/* Our own wrappers' addresses, sorted: was a lookup answered by cubatch? */
static uintptr_t cb_own[CB_HOOK_COUNT];
static pthread_once_t cb_own_once = PTHREAD_ONCE_INIT;

static int addr_cmp(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

static void own_table(void)
{
    for (size_t i = 0; i < CB_HOOK_COUNT; i++)
        cb_own[i] = (uintptr_t)cb_hooks[i].wrapper;
    qsort(cb_own, CB_HOOK_COUNT, sizeof cb_own[0], addr_cmp);
}

static int is_own_wrapper(void *p)
{
    pthread_once(&cb_own_once, own_table);
    uintptr_t key = (uintptr_t)p;
    return bsearch(&key, cb_own, CB_HOOK_COUNT, sizeof key, addr_cmp) != NULL;
}

/* Is the driver already in the process?  Only then may dlsym initialise
 * cubatch: a process that never loads CUDA must not have it loaded behind its
 * back.  dlopen("libcuda.so.1", RTLD_NOLOAD) would say, but when the driver is
 * not there that call searches for it (the loader cache, every system
 * directory: about 9 system calls, 20 us) holding the loader's lock, and did so on
 * every dlsym of a driver name: threads of a program without CUDA doing
 * dlopen/dlsym waited on each other (bench/dl_threads.c).  The list of loaded
 * objects changes only when one is loaded, which dl_iterate_phdr counts: the
 * names are read again only after a load. */
static atomic_ullong cb_adds_without_driver = ULLONG_MAX; /* loads counted when it was last missing */

struct cb_scan { unsigned long long adds; int first, known, found; };

static int scan_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct cb_scan *sc = arg;
    if (sc->first) {
        sc->first = 0;
        sc->known = size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds;
        sc->adds = sc->known ? info->dlpi_adds : 0;
        if (sc->known && sc->adds == atomic_load(&cb_adds_without_driver))
            return 1; /* nothing loaded since it was missing */
    }
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name ? info->dlpi_name : "";
    if (!strncmp(base, "libcuda.so", 10)) {
        sc->found = 1;
        return 1;
    }
    return 0;
}

static int libcuda_loaded(void)
{
    struct cb_scan sc = {0, 1, 0, 0};
    dl_iterate_phdr(scan_object, &sc);
    if (!sc.found && sc.known)
        atomic_store(&cb_adds_without_driver, sc.adds);
    return sc.found;
}

/* dlsym(RTLD_NEXT, name) means "the next definition after the CALLER's object";
 * glibc finds the caller from its return address.  Were our C wrapper to call the
 * real dlsym, the caller would be libcubatch, and a library loaded after us (a
 * sanitizer runtime, another interposer) asking for its next malloc or mmap would
 * get its own function back: endless recursion.  So on x86-64 the exported dlsym
 * is a few instructions that jump (not call) to the real dlsym for RTLD_NEXT
 * and for every name that is not a driver function's (cu + an upper-case
 * letter), leaving the caller's return address in place, and jump to
 * cb_dlsym_impl for driver names only.  A caller after us thereby bypasses
 * cubatch, as RTLD_NEXT asks; a program asking for the next cu* function after
 * itself gets our wrapper, since we come right after it; and every other lookup
 * is libc's own, from the caller's own scope, at libc's own cost.  Elsewhere the
 * C function is dlsym, with RTLD_NEXT resolved relative to libcubatch
 * (documented limit). */
#if defined(__x86_64__) && defined(__ELF__)
#define CB_DLSYM_IMPL cb_dlsym_impl
#define CB_DLSYM_VISIBILITY CB_HIDDEN
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "    cmpq $-1, %rdi\n"              /* RTLD_NEXT is ((void *) -1l) */
        "    je 3f\n"
        "    testq %rsi, %rsi\n"
        "    je 3f\n"
        "    cmpb $0x63, (%rsi)\n"         /* 'c' */
        "    jne 3f\n"
        "    cmpb $0x75, 1(%rsi)\n"        /* 'u' */
        "    jne 3f\n"
        "    movzbl 2(%rsi), %eax\n"
        "    subl $0x41, %eax\n"            /* 'A'..'Z' */
        "    cmpl $25, %eax\n"
        "    jbe cb_dlsym_impl\n"
        "3:  movq cb_real_dlsym(%rip), %rax\n"
        "    testq %rax, %rax\n"
        "    jne 1f\n"
        "    pushq %rdi\n"
        "    pushq %rsi\n"
        "    subq $8, %rsp\n"               /* keep the stack 16-byte aligned */
        "    call cb_real_dlsym_init\n"
        "    addq $8, %rsp\n"
        "    popq %rsi\n"
        "    popq %rdi\n"
        "    movq cb_real_dlsym(%rip), %rax\n"
        "    testq %rax, %rax\n"
        "    je 2f\n"
        "1:  jmp *%rax\n"
        "2:  xorl %eax, %eax\n"
        "    ret\n"
        ".size dlsym, .-dlsym\n");
#else
#define CB_DLSYM_IMPL dlsym
#define CB_DLSYM_VISIBILITY CB_EXPORT
#endif

CB_DLSYM_VISIBILITY CB_UNINSTRUMENTED void *CB_DLSYM_IMPL(void *handle, const char *name)
{
    if (CB_UNLIKELY(!real_dlsym)) {
        cb_real_dlsym_init();
        if (!real_dlsym)
            return NULL; /* cannot happen with glibc; never crash for it */
    }
    if (handle == RTLD_NEXT || !name || !is_driver_name(name))
        return real_dlsym(handle, name); /* only without the x86-64 entry above */
    void *p = real_dlsym(handle, name);
    if (!p || cb_in_init)
        return p;
    if (is_own_wrapper(p)) {
        /* The lookup found cubatch's export (RTLD_DEFAULT, or a handle whose
         * scope holds us): answer as if cubatch were not there.  Only when a
         * definition exists past us (the driver, loaded globally) is the
         * wrapper the right answer; otherwise NULL, with dlerror set, as the
         * program would get without cubatch: a program that looks for the
         * driver this way is not fooled, and calls no wrapper that has no real
         * function behind it. */
        return real_dlsym(RTLD_NEXT, name) ? p : NULL;
    }
    if (!atomic_load_explicit(&cb_init_done, memory_order_acquire)) {
        if (!libcuda_loaded())
            return p;
        cb_init_slow();
        dlerror(); /* names the driver lacks, looked up by cb_init: not the program's errors */
        if (!atomic_load_explicit(&cb_init_done, memory_order_acquire))
            return p;
    }
    return cb_swap(p);
}

/* The three resolvers differ only in arity: ask the real one, keep its answer,
 * swap the pointer if (and only if) it is a function we wrap. */
#define CB_RESOLVER(name, params, args)                                  \
    CB_EXPORT CUresult CUDAAPI name params                               \
    {                                                                    \
        cb_init();                                                       \
        cb_stats_thread()->calls[CB_ID_##name]++;                        \
        if (!CB_REAL(name))                                              \
            return cb_absent(CB_ID_##name);                              \
        CUresult r = CB_REAL(name) args;                                 \
        if (r == CUDA_SUCCESS && pfn && *pfn)                            \
            *pfn = cb_swap(*pfn);                                        \
        return r;                                                        \
    }

CB_RESOLVER(cuGetProcAddress, (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags),
            (symbol, pfn, cudaVersion, flags))
CB_RESOLVER(cuGetProcAddress_v2,
            (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
             CUdriverProcAddressQueryResult *symbolStatus),
            (symbol, pfn, cudaVersion, flags, symbolStatus))
CB_RESOLVER(cuGetProcAddress_v2_ptsz,
            (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
             CUdriverProcAddressQueryResult *symbolStatus),
            (symbol, pfn, cudaVersion, flags, symbolStatus))
