/* stream.h - which stream a handle names (stream.c): the handle the driver is
 * given for it, the thread that owns it, whether it synchronizes with the
 * legacy stream.  The one place these are derived: the store of runs (run.h's
 * key), the engines and smwork.c's busy streams all ask here.  The kind itself
 * is cb_stream_kind (internal.h). */
#ifndef CUBATCH_STREAM_H
#define CUBATCH_STREAM_H

#include "copies.h"

/* The handle that names a stream of kind sk: the legacy stream's and a
 * per-thread one's are the special handles, whatever the program passed. */
static inline CUstream cb_stream_handle(CUstream s, enum cb_stream_kind sk)
{
    return sk == CB_SK_LEGACY ? CU_STREAM_LEGACY : sk == CB_SK_PER_THREAD ? CU_STREAM_PER_THREAD : s;
}
/* The thread that owns a per-thread stream (only it can name that stream);
 * 0 for any other kind. */
static inline uintptr_t cb_stream_owner(enum cb_stream_kind sk)
{
    return sk == CB_SK_PER_THREAD ? (uintptr_t)pthread_self() : 0;
}
/* The kind of a run's stream, and its handle, from what the run learned. */
static inline enum cb_stream_kind cb_facts_kind(const struct cb_stream_facts *f)
{
    return f->ptds ? CB_SK_PER_THREAD : f->legacy ? CB_SK_LEGACY : CB_SK_CREATED;
}
static inline CUstream cb_facts_handle(const struct cb_stream_facts *f)
{
    return cb_stream_handle(f->stream, cb_facts_kind(f));
}
/* Does the stream synchronize with the legacy stream (rule 3)?  The legacy
 * stream and per-thread ones do; a created one unless made non-blocking. */
int cb_stream_blocking(CUstream s, enum cb_stream_kind sk);
/* A created stream s (its kind checked by the caller) made non-blocking: its
 * flags say CU_STREAM_NON_BLOCKING.  Asks the driver: only while no capture can
 * begin (capture.c's lock held). */
int cb_stream_nonblocking(CUstream s);

#endif /* CUBATCH_STREAM_H */
