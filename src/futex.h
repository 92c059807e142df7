/* futex.h - a lock of one word for the locks taken on every copy or record
 * (a run's, the event table's): taken and released inline, an uncontended
 * pair being two atomic instructions and no call; a waiter spins briefly,
 * then sleeps in the kernel (futex.c).  The word: 0 free, 1 taken, 2 taken
 * with waiters, so that only an unlock that finds 2 makes a system call. */
#ifndef CUBATCH_FUTEX_H
#define CUBATCH_FUTEX_H

#include "internal.h"

void cb_futex_wait(atomic_int *mu);
void cb_futex_wake(atomic_int *mu);

static inline void cb_futex_lock(atomic_int *mu)
{
    int free_ = 0;
    if (CB_UNLIKELY(!atomic_compare_exchange_strong_explicit(mu, &free_, 1, memory_order_acquire,
                                                             memory_order_relaxed)))
        cb_futex_wait(mu);
}

/* 1: taken; 0: held by another, and nothing changed (no waiter mark, so its
 * unlock stays free of a system call). */
static inline int cb_futex_trylock(atomic_int *mu)
{
    int free_ = 0;
    return atomic_compare_exchange_strong_explicit(mu, &free_, 1, memory_order_acquire, memory_order_relaxed);
}

static inline void cb_futex_unlock(atomic_int *mu)
{
    if (CB_UNLIKELY(atomic_exchange_explicit(mu, 0, memory_order_release) == 2))
        cb_futex_wake(mu);
}

#endif /* CUBATCH_FUTEX_H */
