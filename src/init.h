/* init.h - what every entry point calls first: cheap once initialised (init.c). */
#ifndef CUBATCH_INIT_H
#define CUBATCH_INIT_H

#include "internal.h"

static CB_ALWAYS_INLINE void cb_init(void)
{
    if (CB_LIKELY(atomic_load_explicit(&cb_init_done, memory_order_acquire)))
        return;
    cb_init_slow();
}

#endif /* CUBATCH_INIT_H */
