/* futex.c - the slow paths of futex.h's lock. */
#include "futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Spin briefly, as the holder is usually done within a microsecond, then
 * sleep on the word marked 2 ("waiters"), so that the unlock knows to wake one. */
void cb_futex_wait(atomic_int *mu)
{
    for (int i = 0; i < 100; i++) {
        int free_ = 0;
        if (atomic_load_explicit(mu, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_weak_explicit(mu, &free_, 1, memory_order_acquire, memory_order_relaxed))
            return;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    while (atomic_exchange_explicit(mu, 2, memory_order_acquire) != 0)
        syscall(SYS_futex, mu, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

void cb_futex_wake(atomic_int *mu) { syscall(SYS_futex, mu, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); }
