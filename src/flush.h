/* flush.h - what the copy path reads of flush.c on every copy, inline: apart
 * from internal.h, which every file includes, since the files below flush.c
 * must not read its words (tests/package/check_layers.py). */
#ifndef CUBATCH_FLUSH_H
#define CUBATCH_FLUSH_H

#include "internal.h"
#include "notes.h"
#include "run.h"

/* After the final flush at exit nothing is deferred. */
extern atomic_int cb_flush_closed_flag;
static inline int cb_flush_closed(void) { return atomic_load_explicit(&cb_flush_closed_flag, memory_order_acquire); }
/* Between cubatch_set_enabled(0) and (1) nothing is deferred. */
extern atomic_int cb_flush_paused_flag;
static inline int cb_flush_paused(void) { return atomic_load_explicit(&cb_flush_paused_flag, memory_order_acquire); }

/* cb_flush_stream would do nothing, whatever the stream: no run holds anything
 * in the process and this thread has no burst or spell a call naming a stream
 * ends.  What a launch between runs finds, answered without a call: the
 * wrapper's path stays within a few cache lines of its own (a launch is where
 * a program with no copies pays for cubatch). */
static inline int cb_flush_stream_idle(void) { return !cb_runs_active() && cb_runs_nothing_named_here(); }

#endif /* CUBATCH_FLUSH_H */
