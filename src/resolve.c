/* resolve.c - handing out wrappers: the exported dlsym and cuGetProcAddress.
 *
 * The CUDA runtime, PyTorch and CuPy never call cuMemcpyAsync by symbol: they
 * dlopen libcuda.so.1, dlsym cuGetProcAddress_v2, and fetch every function
 * through it (docs/design.md section 1).  So cubatch exports dlsym and the three
 * cuGetProcAddress entry points; each calls the real resolver first, keeps its
 * return code, NULL results and symbolStatus, and replaces the returned pointer
 * only if it is *identical* to the real address of a function in hooks.def.
 * The driver picks the variant for the caller's version and flags; we only swap
 * it for our wrapper of that same variant.  No name guessing. */
#include "internal.h"
#include "init.h"
#include "stats.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#define real_dlsym cb_real_dlsym

/* dlsym is called by sanitizer runtimes while they initialise, before their shadow
 * memory exists: the code on that path must not be instrumented. */
#define CB_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined", "thread")))

/* real address -> wrapper, sorted by real address for bsearch; made once, after
 * initialisation (cb_real is filled then). */
struct cb_swap_entry { uintptr_t real; void *wrapper; };
static struct cb_swap_entry cb_swap_table[CB_HOOK_COUNT];
static size_t cb_swap_count;
static pthread_once_t cb_swap_once = PTHREAD_ONCE_INIT;

static int swap_cmp(const void *a, const void *b)
{
    uintptr_t x = ((const struct cb_swap_entry *)a)->real, y = ((const struct cb_swap_entry *)b)->real;
    return x < y ? -1 : x > y;
}

static void swap_table(void)
{
    for (size_t i = 0; i < CB_HOOK_COUNT; i++)
        if (cb_real[i] && cb_real[i] != cb_wrappers[i])
            cb_swap_table[cb_swap_count++] = (struct cb_swap_entry){(uintptr_t)cb_real[i], cb_wrappers[i]};
    qsort(cb_swap_table, cb_swap_count, sizeof cb_swap_table[0], swap_cmp);
    cb_log(CB_LOG_NOTICE, "%zu driver functions wrapped", cb_swap_count);
}

/* The wrapper for a real driver address, or the address itself (cubatch
 * initialised). */
static void *cb_swap(void *p)
{
    pthread_once(&cb_swap_once, swap_table);
    struct cb_swap_entry key = {(uintptr_t)p, NULL};
    const struct cb_swap_entry *e = bsearch(&key, cb_swap_table, cb_swap_count, sizeof key, swap_cmp);
    return e ? e->wrapper : p;
}

/* What the program gets for the driver's p, which it asked for by name: our
 * wrapper, or the net's trampoline when no table names the function (rule 17;
 * only the driver's own code: dlsym may find a cu* name elsewhere), or p. */
static void *hand_out(const char *name, void *p)
{
    void *w = cb_swap(p);
    if (w != p || cb_net_knows(name) || !cb_net_is_driver_code(p))
        return w;
    return cb_net_wrap(name, p);
}

/* Does the driver give p for symbol at the version the tables were checked
 * against?  A caller of a newer cudaVersion may get a newer ABI of a known
 * name, which nobody decided about. */
static int same_at_checked_version(const char *symbol, cuuint64_t flags, void *p)
{
    void *q = NULL;
    CUresult r;
    if (CB_REAL(cuGetProcAddress_v2))
        r = CB_REAL(cuGetProcAddress_v2)(symbol, &q, cb_net_version_checked(), flags, NULL);
    else if (CB_REAL(cuGetProcAddress))
        r = CB_REAL(cuGetProcAddress)(symbol, &q, cb_net_version_checked(), flags);
    else
        return 1;
    return r == CUDA_SUCCESS && q == p;
}

/* ... and what it gets from cuGetProcAddress (the driver's answer, p). */
static void *hand_out_proc(const char *symbol, int version, cuuint64_t flags, void *p)
{
    void *w = cb_swap(p);
    if (w != p || !symbol)
        return w;
    if (!cb_net_knows(symbol) || (version > cb_net_version_checked() && !same_at_checked_version(symbol, flags, p)))
        return cb_net_wrap(symbol, p);
    return p;
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
        cb_own[i] = (uintptr_t)cb_wrappers[i];
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
 * directory) holding the loader's lock, and did so on every dlsym of a driver
 * name: threads of a program without CUDA doing dlopen/dlsym waited on each
 * other (bench/dl_threads.c; bench/RESULTS.md, "dlopen/dlsym from threads").  The list of loaded
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
    if (!p || cb_init_running())
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
    return hand_out(name, p);
}

/* The resolvers (the RESOLVER rows of hooks.def) differ only in arity: ask the
 * real one, keep its answer, swap the pointer if (and only if) it is a function
 * we wrap, or one no table names (the net). */
#define CB_ON_RESOLVER(name, ptsz, action, aarg, params, args)                 \
    CB_EXPORT CUresult CUDAAPI name params                               \
    {                                                                    \
        cb_init();                                                       \
        cb_bump(&cb_stats_thread()->calls[CB_ID_##name], 1);             \
        if (!CB_REAL(name))                                              \
            return cb_absent(CB_ID_##name);                              \
        CUresult r = CB_REAL(name) args;                                 \
        if (r == CUDA_SUCCESS && pfn && *pfn)                            \
            *pfn = hand_out_proc(symbol, cudaVersion, flags, *pfn);      \
        return r;                                                        \
    }
#include "hooks_each.h"
