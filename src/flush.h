/* flush.h - what the copy path reads of flush.c on every copy, inline: apart
 * from internal.h, which every file includes, since the files below flush.c
 * must not read its words (tests/package/check_layers.py). */
#ifndef CUBATCH_FLUSH_H
#define CUBATCH_FLUSH_H

#include "internal.h"

/* After the final flush at exit nothing is deferred. */
extern atomic_int cb_flush_closed_flag;
static inline int cb_flush_closed(void) { return atomic_load_explicit(&cb_flush_closed_flag, memory_order_acquire); }
/* Between cubatch_set_enabled(0) and (1) nothing is deferred. */
extern atomic_int cb_flush_paused_flag;
static inline int cb_flush_paused(void) { return atomic_load_explicit(&cb_flush_paused_flag, memory_order_acquire); }

#endif /* CUBATCH_FLUSH_H */
