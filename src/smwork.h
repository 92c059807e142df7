/* smwork.h - which streams may still be running SM work that fills the GPU
 * (smwork.c): what the engine choice asks before a run of host memory copies
 * takes the copy kernel (rule 12). */
#ifndef CUBATCH_SMWORK_H
#define CUBATCH_SMWORK_H

#include "copies.h"

/* At initialisation (engine.c): track launches only when the engine choice
 * will ask (CUBATCH_ENGINE=auto with the copy kernel usable); learn the
 * smallest SM count of the devices. */
void cb_smwork_init(int track);
/* After a successful launch on stream s (as the program passed it, through an
 * entry whose NULL stream is per-thread when ptsz): a grid of `blocks` blocks
 * of `threads` threads and `smem` bytes of dynamic shared memory running f
 * (NULL: unknown, such as a graph).  Counts the stream when the launch may
 * occupy every SM (or nobody can tell). */
void cb_smwork_note_launch(CUstream s, int ptsz, CUfunction f, uint64_t blocks, uint64_t threads, uint64_t smem);
extern int cb_smwork_tracking;
extern atomic_uint cb_smwork_min_sms;
/* A grid of fewer blocks than the smallest device has SMs leaves SMs free
 * (a block runs on one SM), whatever its occupancy: the small launches of a
 * launch-bound program are answered here, without a call. */
static inline void cb_smwork_launch(CUstream s, int ptsz, CUfunction f, uint64_t blocks, uint64_t threads,
                                    uint64_t smem)
{
    if (!cb_smwork_tracking || (f && blocks < atomic_load_explicit(&cb_smwork_min_sms, memory_order_relaxed)))
        return;
    cb_smwork_note_launch(s, ptsz, f, blocks, threads, smem);
}
/* After a successful context synchronize, and before a context is destroyed,
 * released or reset: nothing of ctx (NULL: the current context) runs, or will
 * be asked about. */
void cb_smwork_ctx_synced(CUcontext ctx);
/* Before the program destroys stream s: it is never asked about again (a query
 * of a destroyed stream may crash the real driver). */
void cb_smwork_forget_stream(CUstream s);
/* Before a run of f's stream goes out, with f->ctx current: 1 when another
 * stream of the context may still be running such work that the run's copies
 * would not have waited for without cubatch (asking the driver about each
 * counted stream, one query each, and forgetting those found idle).  The
 * answer is kept in f->sm_busy (its one writer), and a kept answer is given
 * again while it holds (smwork.c). */
int cb_smwork_note_busy(struct cb_stream_facts *f);
/* After a "busy" answer: the answers the verdict has left, taken (copy.c's
 * pass spell gives them to the stream's next copies; the question after them
 * is asked anew). */
unsigned cb_smwork_busy_claim(struct cb_stream_facts *f);
void cb_smwork_atfork_child(void);

#endif /* CUBATCH_SMWORK_H */
