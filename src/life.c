/* life.c - process and thread life (rule 10, and rule 4's owners): flush
 * everything at exit, and flush a per-thread-stream run when its owner thread
 * exits; fork is fork.c's.
 *
 * The exit and fork handlers are registered at the first deferred copy, so after
 * the CUDA runtime's own exit handlers (atexit runs last-registered first): the
 * final flush runs while the driver and contexts are still alive.  A process
 * that never defers a copy registers nothing. */
#include "internal.h"
#include "waits.h"

#include <stdlib.h>

static atomic_int cb_armed; /* atexit/atfork registered */
static pthread_key_t cb_owner_key;
static pthread_once_t cb_owner_key_once = PTHREAD_ONCE_INIT;

static void at_exit(void)
{
    cb_waits_issue_all(); /* rule 16: nothing the program asked for is left out */
    cb_flush_exit();
}

void cb_life_arm(void)
{
    if (CB_LIKELY(atomic_load_explicit(&cb_armed, memory_order_relaxed)))
        return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&cb_armed, &expected, 1))
        return;
    atexit(at_exit);
    cb_fork_arm(); /* fork.c: its handlers */
}

/* At the owner's exit its run is flushed through the side stream. */
static void owner_gone(void *arg)
{
    (void)arg;
    cb_flush_thread_gone();
}
static void make_owner_key(void) { pthread_key_create(&cb_owner_key, owner_gone); }

void cb_life_watch_thread(void)
{
    pthread_once(&cb_owner_key_once, make_owner_key);
    pthread_setspecific(cb_owner_key, (void *)1);
}
