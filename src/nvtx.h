/* nvtx.h - what cubatch shows a profiler (Nsight Systems): one NVTX range per
 * submission of a run, on the submitting thread, naming its copies, the engine
 * and why the run went out; a marker where a call ended a run.
 *
 * NVTX v3 is the toolkit's header-only API: its calls do nothing until a tool
 * injects itself (NVTX_INJECTION64_PATH).  cubatch builds no text either unless
 * that variable is set: without a tool a submission pays one load and branch.
 * Built without the nvtx3 headers (or with ./configure --disable-nvtx), these
 * calls compile away.
 *
 * Called from ONE place each: flush.c's cb_flush_run() says why a run goes out
 * (cb_nvtx_flush), engine.c's submit_on() brackets the submission with the
 * engine it chose (cb_nvtx_submit_begin / _end). */
#ifndef CUBATCH_NVTX_H
#define CUBATCH_NVTX_H

#include "copies.h"

#if CB_NVTX
/* A run goes out for this reason (on this thread): remembered for the range of
 * its submission; a marker when the reason's row says so (CB_FD_MARK, stats.def:
 * not for a chunk, the timer or the pace rule). */
void cb_nvtx_flush(enum cb_flush_why why);
/* The range of one submission of c's copies by the named engine; queued: the
 * copies the program made, when c merged them (rule 18) into fewer. */
void cb_nvtx_submit_begin(const struct cb_copies *c, size_t queued, const char *engine);
void cb_nvtx_submit_end(void);
#else
static inline void cb_nvtx_flush(enum cb_flush_why why) { (void)why; }
static inline void cb_nvtx_submit_begin(const struct cb_copies *c, size_t queued, const char *engine)
{
    (void)c, (void)queued, (void)engine;
}
static inline void cb_nvtx_submit_end(void) {}
#endif

#endif /* CUBATCH_NVTX_H */
