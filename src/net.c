/* net.c - the net for driver functions that no table names (docs/design.md
 * rule 17).
 *
 * hooks.def and hooks.skip decide every function of the newest CUDA 13 headers
 * cubatch was checked against (src/driver_api.list names them all).  A newer
 * driver has functions nobody decided about, and one of them may order itself
 * against a stream's work: were the program to get it unchanged, it would
 * overtake the copies cubatch holds.  So whatever the driver hands out for a
 * name the list lacks (dlsym, cuGetProcAddress), or for a cudaVersion past the
 * list's when that gives another function than the list's version does (a new
 * ABI of an old name), the program gets a trampoline instead: it submits every
 * pending wait and every run, as a context-wide call of hooks.def does (the
 * CONTEXT action), then jumps to the real function with the program's
 * registers and stack untouched, so no signature need be known.
 *
 * Cost: a flush of every run at each call of such a function, and nothing
 * anywhere else (a driver no newer than the list hands out no such function).
 * Safe during a capture: a flush of every run submits only what a flush before
 * cuMemFree would (nothing is deferred on a capturing stream, nor on the legacy
 * stream while a capture is under way: rules 2, 3 and 13), and the trampoline
 * itself makes no driver call.  Its error, if a submission fails, cannot be the
 * unknown function's (whose return type cubatch does not know): it is kept for
 * the stream's next call (the flush_unknown reason of stats.def).
 *
 * The trampolines are a fixed pool (x86-64 assembly, below).  Where there is
 * none left, or no pool on this architecture, deferral is switched off for the
 * process instead (as cubatch_set_enabled(0) does), with a warning: nothing can
 * overtake a run that does not exist. */
#include "internal.h"
#include "waits.h"
#include "stats.h"

#include <dlfcn.h>
#include <string.h>

#include "driver_api.h" /* cb_api_names[], CB_API_VERSION: from src/driver_api.list */

/* The trampolines handed out: slot i's real function, and its name for the
 * report (stats.c counts its calls).  A slot is filled under the lock, then
 * published by the count. */
static _Atomic(void *) cb_net_real[CB_NET_SLOTS];
static atomic_int cb_net_used;
static pthread_mutex_t cb_net_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int cb_net_gave_up; /* no trampoline left: deferral was switched off */

#if defined(__x86_64__) && defined(__ELF__)
#define CB_NET_HAS_POOL 1
/* Slot i: 16 bytes at cb_net_tramps + 16 * i, which put i in r11 (scratch in
 * the x86-64 calling convention, never an argument) and jump to the common
 * part.  That saves every register that may carry an argument (rdi, rsi, rdx,
 * rcx, r8, r9, xmm0-7, and rax: a variadic call's count of vector registers),
 * calls cb_net_enter(i) with the stack aligned, restores them and jumps to the
 * real function, whose return then goes straight back to the program. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl cb_net_tramps\n"
        ".hidden cb_net_tramps\n"
        ".hidden cb_net_enter\n"
        "cb_net_tramps:\n"
        ".irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
        "    .p2align 4\n"
        "    movl $\\i, %r11d\n"
        "    jmp cb_net_common\n"
        ".endr\n"
        "cb_net_common:\n"
        "    pushq %rdi\n"
        "    pushq %rsi\n"
        "    pushq %rdx\n"
        "    pushq %rcx\n"
        "    pushq %r8\n"
        "    pushq %r9\n"
        "    pushq %rax\n"          /* 7 pushes after the return address: aligned */
        "    subq $144, %rsp\n"     /* xmm0-7 and the real function's address */
        "    movdqu %xmm0, 0(%rsp)\n"
        "    movdqu %xmm1, 16(%rsp)\n"
        "    movdqu %xmm2, 32(%rsp)\n"
        "    movdqu %xmm3, 48(%rsp)\n"
        "    movdqu %xmm4, 64(%rsp)\n"
        "    movdqu %xmm5, 80(%rsp)\n"
        "    movdqu %xmm6, 96(%rsp)\n"
        "    movdqu %xmm7, 112(%rsp)\n"
        "    movl %r11d, %edi\n"
        "    call cb_net_enter\n"
        "    movq %rax, 128(%rsp)\n"
        "    movdqu 0(%rsp), %xmm0\n"
        "    movdqu 16(%rsp), %xmm1\n"
        "    movdqu 32(%rsp), %xmm2\n"
        "    movdqu 48(%rsp), %xmm3\n"
        "    movdqu 64(%rsp), %xmm4\n"
        "    movdqu 80(%rsp), %xmm5\n"
        "    movdqu 96(%rsp), %xmm6\n"
        "    movdqu 112(%rsp), %xmm7\n"
        "    movq 128(%rsp), %r11\n"
        "    addq $144, %rsp\n"
        "    popq %rax\n"
        "    popq %r9\n"
        "    popq %r8\n"
        "    popq %rcx\n"
        "    popq %rdx\n"
        "    popq %rsi\n"
        "    popq %rdi\n"
        "    jmp *%r11\n");
extern const char cb_net_tramps[];
_Static_assert(CB_NET_SLOTS == 32, "the .irp list above has one entry per slot");
#else
#define CB_NET_HAS_POOL 0
#endif

/* Called by slot i's trampoline, before the real function: everything held
 * goes out first.  Returns the real function. */
CB_HIDDEN void *cb_net_enter(int i);
CB_HIDDEN void *cb_net_enter(int i)
{
    cb_stat_unknown_call(i);
    CUresult fe = cb_waits_issue_all();
    fe = cb_first_error(fe, cb_flush_all(CB_WHY_flush_unknown));
    if (fe != CUDA_SUCCESS)
        cb_log(CB_LOG_NOTICE, "a wait issued before %s failed: %d", cb_stat_unknown_name(i), (int)fe);
    return atomic_load_explicit(&cb_net_real[i], memory_order_acquire);
}

static int name_cmp(const void *key, const void *elem) { return strcmp(key, *(const char *const *)elem); }

int cb_net_knows(const char *name)
{
    if (bsearch(name, cb_api_names, sizeof cb_api_names / sizeof cb_api_names[0], sizeof cb_api_names[0], name_cmp))
        return 1;
    for (size_t i = 0; i < CB_HOOK_COUNT; i++)
        if (!strcmp(cb_hook_rows[i].name, name))
            return 1; /* cuGetProcAddress_v2_ptsz: exported, in no header */
    return 0;
}

int cb_net_version_checked(void) { return CB_API_VERSION; }

/* No trampoline for real: switch deferral off for good, once. */
static void *give_up(const char *name, void *real)
{
    if (!atomic_exchange(&cb_net_gave_up, 1)) {
        cb_warn("%s is a driver function no table of cubatch names, and %s: deferral is switched off for this process",
                name, CB_NET_HAS_POOL ? "every trampoline of the net is taken" : "this architecture has no net");
        cb_flush_set_enabled(0);
    }
    return real;
}

void *cb_net_wrap(const char *name, void *real)
{
#if CB_NET_HAS_POOL
    pthread_mutex_lock(&cb_net_mu);
    int n = atomic_load(&cb_net_used), i;
    for (i = 0; i < n && atomic_load(&cb_net_real[i]) != real; i++)
        ;
    if (i == n && n < CB_NET_SLOTS) {
        atomic_store_explicit(&cb_net_real[n], real, memory_order_release);
        cb_stat_unknown_name_set(n, name);
        atomic_store(&cb_net_used, n + 1);
        cb_log(CB_LOG_NOTICE, "%s: a driver function no table names; calls of it submit every run first", name);
    }
    pthread_mutex_unlock(&cb_net_mu);
    if (i < CB_NET_SLOTS)
        return (void *)(cb_net_tramps + 16 * i);
#endif
    return give_up(name, real);
}

/* Is p the driver's?  dlsym may find a cu* name in any object; only the
 * driver's functions are the net's business. */
int cb_net_is_driver_code(void *p)
{
    Dl_info info;
    if (!dladdr(p, &info) || !info.dli_fname)
        return 0;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return !strncmp(base, "libcuda.so", 10);
}
