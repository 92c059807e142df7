/* ptds.h - per-thread default streams and contexts (ptds.c). */
#ifndef CUBATCH_PTDS_H
#define CUBATCH_PTDS_H

#include "copies.h"

/* ---- ptds.c: per-thread default streams and contexts ----------------------------- */
/* Make ctx current for the duration of a submission from any thread. */
struct cb_ctx_guard { int pushed; };
CUresult cb_ctx_enter(CUcontext ctx, struct cb_ctx_guard *g);
void cb_ctx_leave(struct cb_ctx_guard *g);
/* The context's pool of cubatch events (created with CU_EVENT_DISABLE_TIMING):
 * get (ctx current; NULL when none can be made), and put back one no call
 * will name again (a wait already enqueued on it keeps its state). */
CUevent cb_ctx_event_get(CUcontext ctx);
void cb_ctx_event_put(CUcontext ctx, CUevent e);
/* The context's non-blocking side stream, created on first use (ctx current). */
CUresult cb_ctx_side_stream(CUcontext ctx, CUstream *out);
/* The owner opens a run: record ev_start on its per-thread stream. */
CUresult cb_fence_open(struct cb_stream_facts *f);
/* The run went out on the owner's stream (or never opened): give ev_start back. */
void cb_fence_release(struct cb_stream_facts *f);
/* A copy passed through on the owner's stream after the run opened: later
 * queued copies may depend on it, so ev_start moves past it. */
CUresult cb_fence_rerecord(struct cb_stream_facts *f);
/* The owner's stream waits for an earlier side submission (before its next call). */
CUresult cb_fence_owner_join(struct cb_stream_facts *f);
/* The legacy stream waits for it (right before the next legacy-ordered call). */
CUresult cb_fence_legacy_join(struct cb_stream_facts *f);
/* Side submission: begin (context current, side stream waits for ev_start),
 * then the copies go to *side (NULL: no side stream could be had), then end
 * (ev_join recorded on the side stream unless begin failed). */
CUresult cb_side_begin(struct cb_stream_facts *f, CUstream *side, struct cb_ctx_guard *g);
CUresult cb_side_end(struct cb_stream_facts *f, CUstream side, CUresult begun, struct cb_ctx_guard *g);
/* A legacy-stream run on the side stream (the batch API cannot run on the
 * legacy stream itself; ctx current): begin makes the side stream wait for the
 * legacy stream's work so far (*side NULL on failure: nothing was fenced), end
 * makes the legacy stream wait for the side stream's, at once (a legacy run is
 * never open while a capture is under way). */
CUresult cb_side_legacy_begin(const struct cb_stream_facts *f, CUstream *side);
CUresult cb_side_legacy_end(const struct cb_stream_facts *f, CUstream side);
/* A context is gone: its helpers (side stream, events) died with it. */
void cb_forget_context_helpers(CUcontext ctx);
void cb_ptds_atfork_prepare(void); /* the helpers' lock held across fork */
void cb_ptds_atfork_parent(void);
void cb_ptds_atfork_child(void); /* the child has no CUDA state of its own */

#endif /* CUBATCH_PTDS_H */
