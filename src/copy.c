/* copy.c - the body shared by the copy wrappers (cuMemcpyAsync,
 * cuMemcpy{HtoD,DtoH,DtoD}Async_v2 and their _ptsz twins): every rule that
 * decides whether this copy may be deferred (docs/design.md rules 1-3, 5, 12 and the size
 * and pace policies), in one place, each refusal counted under one reason.  A
 * deferred copy joins its stream's run; any other is issued at once, unchanged,
 * after whatever it must follow. */
#include "run.h"
#include "flush.h"
#include "waits.h"
#include "smwork.h"
#include "capture.h"
#include "stats.h"

/* ---- what the copy is ---------------------------------------------------------- */

static int host_side(enum cb_kind k) { return k == CB_MEM_HOST || k == CB_MEM_MANAGED; }
static int dev_side(enum cb_kind k) { return k == CB_MEM_DEVICE || k == CB_MEM_MANAGED; }

/* Direction of a copy between two classified (non-pageable) pointers; managed
 * memory counts as device memory, as the driver migrates it on demand. */
static enum cb_direction direction(enum cb_kind d, enum cb_kind s)
{
    int dh = d == CB_MEM_HOST, sh = s == CB_MEM_HOST;
    return sh ? (dh ? CB_D_H2H : CB_D_H2D) : (dh ? CB_D_D2H : CB_D_D2D);
}

/* Does the entry point's own direction agree with the memory?  The explicit
 * HtoD/DtoH/DtoD entries are issued as themselves on pass-through, so a batch may
 * only stand in for them when the pointers are what the entry expects. */
static int entry_agrees(enum cb_direction entry, enum cb_kind d, enum cb_kind s)
{
    switch (entry) {
    case CB_D_H2D: return dev_side(d) && host_side(s);
    case CB_D_D2H: return host_side(d) && dev_side(s);
    case CB_D_D2D: return dev_side(d) && dev_side(s);
    default: return 1;
    }
}

/* Rules 1 and 5 of the memory: 0 when both sides may be deferred, else the
 * counter of the reason. */
static enum cb_stat_id memory_verdict(const struct cb_copy_req *rq, enum cb_direction entry)
{
    if (rq->dcls.kind == CB_MEM_UNKNOWN || rq->scls.kind == CB_MEM_UNKNOWN)
        return CB_ST_pass_pageable; /* rule 1: the driver stages or synchronizes these */
    if (!entry_agrees(entry, rq->dcls.kind, rq->scls.kind) ||
        (rq->dcls.end && rq->bytes > rq->dcls.end - rq->dst) || (rq->scls.end && rq->bytes > rq->scls.end - rq->src) ||
        (rq->dcls.kind == CB_MEM_DEVICE && rq->scls.kind == CB_MEM_DEVICE && rq->dcls.device != rq->scls.device))
        return CB_ST_pass_foreign; /* let the driver say what it says about these */
    return 0;
}

/* Does the policy defer a copy of this size?  The sizes a first band from 0 or
 * 1 byte holds, and those above every band, are answered from one word each
 * (policy.c), without a call. */
static int policy_defers(enum cb_direction d, size_t bytes)
{
    if (bytes && bytes <= cb_policy_sure[d])
        return 1;
    return bytes <= cb_policy_top[d] && cb_policy_defer(d, bytes);
}

/* ---- the pace of a stream ------------------------------------------------------ */

/* ---- deferring ------------------------------------------------------------------ */

/* May the copy kernel execute this copy on a stream of context ctx?  Both
 * sides are memory that context's kernels may touch at these addresses
 * (classify.c), and with CUBATCH_ENGINE=auto the copy is small enough for the
 * kernel to pay over the copy engines. */
static int kernel_may_in(const struct cb_copy_req *rq, CUcontext ctx)
{
    return cb_kernel_usable && ctx && rq->dcls.kctx == ctx && rq->scls.kctx == ctx &&
           (cb_opt(CB_OPT_engine) == CB_ENGINE_KERNEL || rq->bytes <= CB_KERNEL_AUTO_MAX);
}
/* ... on the run's stream. */
static int kernel_may(const struct cb_copy_req *rq, const struct cb_run *run)
{
    return kernel_may_in(rq, run->facts.ctx);
}

/* From pinned host memory to the device (or managed memory). */
static int upload(const struct cb_copy_req *rq) { return rq->scls.kind == CB_MEM_HOST && rq->dcls.kind != CB_MEM_HOST; }

/* Rule 12 for host-to-device copies: while another stream may be running a
 * kernel that fills the GPU, they pass through as the program issued them.  The
 * copy kernel would wait for SMs, and beside cuBLAS matrix products the batch
 * API ran host-to-device runs slower than the program's loop (docs/design.md,
 * rule 12); device-to-host copies still go to the batch API.  No submission asks
 * while copies pass through, so the copy path asks (at most one stream query
 * per busy stream every 200 us: smwork.c). */
static int busy_upload(const struct cb_copy_req *rq, struct cb_run *run)
{
    if (!run->facts.sm_busy || !upload(rq) || !kernel_may(rq, run))
        return 0;
    return cb_smwork_note_busy(&run->facts);
}

/* The tag of an upload that busy_upload would ask about on a stream of the
 * context it names (a pass spell's uploads share it); 0: any other copy. */
static uintptr_t upload_tag(const struct cb_copy_req *rq)
{
    return upload(rq) && kernel_may_in(rq, rq->dcls.kctx) ? (uintptr_t)rq->dcls.kctx : 0;
}

/* The allocation of the copy's host side (its end: classify.c), which the
 * measured choice counts changes of. */
static uintptr_t host_alloc(const struct cb_copy_req *rq)
{
    return rq->scls.kind == CB_MEM_HOST ? rq->scls.end : rq->dcls.kind == CB_MEM_HOST ? rq->dcls.end : 0;
}

/* A segment of the stream's copies begins with this one (the run empty, its
 * stream learned): what the measured choice gives it to (choose.c).  Host
 * memory copies on a created stream are measured whenever the copy kernel may
 * not take them: another stream may be filling the GPU (rule 12), or the copy
 * is outside the kernel's reach.  The rest keep the fixed rules. */
static enum cb_arm choose(const struct cb_copy_req *rq, struct cb_run *run)
{
    struct cb_stream_facts *f = &run->facts;
    enum cb_direction d = direction(rq->dcls.kind, rq->scls.kind);
    if (!cb_choose_enabled() || f->legacy || f->ptds || (d != CB_D_H2D && d != CB_D_D2H)) {
        cb_segment_none(&run->seg);
        return CB_ARM_STATIC;
    }
    struct cb_choice_in in = {f->ctx, f->stream, d, rq->bytes, cb_smwork_note_busy(f), kernel_may(rq, run),
                              cb_run_burst_first_segment(run), (unsigned)cb_engine_chunk(0, d == CB_D_H2D ? CB_CHUNK_H2D : 0, 0)};
    enum cb_arm arm = cb_choose(&run->seg, &in);
    cb_run_set_arm(run, arm);
    return arm;
}

/* ---- the legacy stream ----------------------------------------------------------- */

/* Rule 3: the batch API refuses the legacy stream, so copies there are
 * deferred only into runs of the copy kernel, and never while a stream is
 * being captured: a launch on the legacy stream then would break that capture. */
static int legacy_deferrable(void)
{
    return cb_kernel_usable && !cb_captures_active() && cb_drv.cuCtxGetCurrent;
}

/* Each legacy stream is its context's: its run is keyed by the current one,
 * asked only when a run is looked up (a lone copy passes on its thread's note
 * without it: defer()).  0: the thread has no current context. */
static int legacy_ctx(struct cb_copy_req *rq)
{
    return rq->ctx || (cb_drv.cuCtxGetCurrent(&rq->ctx) == CUDA_SUCCESS && rq->ctx);
}

/* Rule 13: no legacy run may be pending while a capture runs (a launch on the
 * legacy stream, or a question about a capturing stream that the legacy run's
 * rule-3 ordering asks, would invalidate it).  legacy_deferrable() found no
 * capture, but one may have been counted since, and its begin flushes only the
 * legacy runs it sees non-empty.  So, the copy just appended: the run is
 * counted non-empty first (a sequentially consistent increment), then the
 * captures are read again (a sequentially consistent load): in one total order
 * with cb_flush_capture_begin's increment and look.  A capture counted now
 * saw this run non-empty unless this copy made it so; then the copy is taken
 * back (the run is empty again) and issued as it came.  1: taken back. */
static int legacy_run_raced_a_capture(struct cb_run *run)
{
    cb_run_set_queued(run);
    if (atomic_load(&cb_captures_n) == 0 || run->q.n != 1)
        return 0;
    cb_run_clear(run, NULL);
    cb_run_set_active(run);
    return 1;
}

/* Rules 2, 3 (stream), 5 (hazards) and the pace, then the copy joins the run.
 * The first copy of a burst (the stream's first since a call named it, or since
 * the timer found it quiet) goes out at once instead: an isolated copy costs
 * nothing more than without cubatch, and the GPU starts on a burst at once.
 * Returns 1 (deferred; *rc: an earlier error to report now, if any) or 0 (the
 * caller issues the copy: its stream's run went first; *rc: that flush's
 * error). */
static int defer(struct cb_copy_req *rq, CUresult *rc)
{
    struct cb_run_key key = cb_run_key_of(rq->stream, rq->sk, rq->ctx);
    enum cb_stat_id why = CB_ST_pass_nomem;
    int opened = 0, created;
    unsigned spell = 0; /* the stream's next copies that may pass by this one's spell */
    *rc = CUDA_SUCCESS;
    if (cb_runs_locked_here()) { /* re-entered from a submission: just pass through */
        CB_COUNT(pass_query);
        return 0;
    }
    /* the stream's copies pass through for now (the measured choice, or the
     * load): this one too, decided from this thread's spell, without the run */
    if (CB_UNLIKELY(cb_run_spells_here()) && rq->sk == CB_SK_CREATED && !cb_flush_closed() && !cb_flush_paused()) {
        int spelled = cb_run_spell_here(&key, host_alloc(rq), upload_tag(rq));
        if (spelled) {
            cb_bump(&cb_stats_thread()->v[spelled], 1);
            CB_COUNT(pass_spelled);
            return 0;
        }
    }
    if (rq->sk == CB_SK_LEGACY) {
        if (!legacy_ctx(rq)) { /* no current context: the driver says what it says */
            CB_COUNT(pass_legacy);
            *rc = cb_flush_legacy(); /* rule 3 */
            return 0;
        }
        key = cb_run_key_of(rq->stream, rq->sk, rq->ctx);
    }
    /* Whatever happens to this copy, it follows what rule 3 orders it after:
     * other streams' runs, flushed before this one's lock is taken (run.c). */
    if (CB_UNLIKELY(cb_runs_cross_pending(rq->sk)))
        *rc = cb_flush_cross(rq->stream, rq->sk);
    struct cb_run *run = cb_run_lock_key(&key, 1, &created);
    if (!run) {
        cb_bump(&cb_stats_thread()->v[why], 1);
        return 0;
    }
    if (created && run->facts.ptds)
        cb_life_watch_thread();
    if (CB_UNLIKELY(run->pending != CUDA_SUCCESS) && *rc == CUDA_SUCCESS) {
        /* a flush nobody waited for kept its error (flush.c): this copy is the
         * stream's next call (one error a call: with the cross flush's, it
         * waits for the next; set_active follows on every path below) */
        *rc = cb_run_take_pending(run);
    }
    if (run->feed.chunk_due && run->q.n > 0) {
        *rc = cb_first_error(*rc, cb_flush_run(run, CB_WHY_flush_full));
        cb_run_chunk_sent(run);
    }
    if (cb_flush_closed() || cb_flush_paused()) {
        why = CB_ST_pass_disabled;
        goto pass;
    }
    if (run->pace.slow && cb_run_still_slow(run)) {
        why = CB_ST_pass_slow; /* issued now, after whatever the run holds (pass:) */
        goto pass;
    }
    if (run->q.n == 0 && !cb_run_in_burst(run)) {
        cb_run_burst_begins(run);
        why = CB_ST_pass_first;
        goto pass;
    }
    struct cb_segment *sg = &run->seg;
    if (sg->arm == CB_ARM_PASS && sg->open) {
        /* the measured choice passes this segment's copies through */
        cb_segment_fold(sg);
        if (sg->copies < sg->limit) {
            cb_segment_copy(sg, host_alloc(rq));
            spell = sg->slot ? 0 : sg->limit - sg->copies; /* a timed segment counts each copy */
            why = CB_ST_pass_chosen;
            goto pass;
        }
        cb_segment_end(sg, run->facts.stream); /* all issued: a new choice below */
    }
    if (run->q.n > 0 && cb_run_hazard(run, rq))
        *rc = cb_first_error(*rc, cb_flush_run(run, CB_WHY_flush_hazard));
    if (run->q.n > 0 && run->facts.ptds) { /* (a legacy run is keyed by the current context) */
        CUcontext cur = NULL;
        if (cb_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != run->facts.ctx)
            *rc = cb_first_error(*rc, cb_flush_run(run, CB_WHY_flush_stream)); /* the thread switched context */
    }
    if (run->q.n == 0) {
        if (cb_run_open(run, rq->stream)) {
            why = CB_ST_pass_query;
            goto pass;
        }
        if (run->facts.capturing) {
            why = CB_ST_pass_capture; /* rule 2: captured as before, never batched */
            goto pass;
        }
        opened = 1;
    }
    /* Device memory must belong to the stream's device (peer copies pass). */
    if ((rq->dcls.kind == CB_MEM_DEVICE && rq->dcls.device != run->facts.device) ||
        (rq->scls.kind == CB_MEM_DEVICE && rq->scls.device != run->facts.device)) {
        why = CB_ST_pass_foreign;
        goto pass;
    }
    if (run->q.n == 0 && !sg->open && choose(rq, run) == CB_ARM_PASS) {
        cb_segment_copy(sg, host_alloc(rq));
        spell = sg->slot ? 0 : sg->limit - sg->copies;
        why = CB_ST_pass_chosen;
        goto pass;
    }
    if (run->q.arm == CB_ARM_STATIC && busy_upload(rq, run)) {
        /* the verdict's remaining answers go to the spell: the copy after it asks again */
        spell = run->q.n == 0 ? cb_smwork_busy_claim(&run->facts) : 0;
        why = CB_ST_pass_busy;
        goto pass;
    }
    rq->kernel_ok = kernel_may(rq, run);
    if (run->facts.legacy && !rq->kernel_ok) {
        why = CB_ST_pass_legacy; /* only the copy kernel may run on the legacy stream */
        goto pass;
    }
    if (opened)
        cb_run_opened(run); /* it joins: from here on the run has an age */
    if (cb_run_append(run, rq))
        goto pass;
    if (CB_UNLIKELY(run->facts.legacy) && legacy_run_raced_a_capture(run)) {
        why = CB_ST_pass_capture; /* taken back: issued now, as it came */
        goto pass;
    }
    if (sg->open)
        cb_segment_copy(sg, host_alloc(rq));
    if (opened)
        cb_timer_arm(run->looks.look_ns);
    /* pipelining: a run that reached its chunk size goes out now, the GPU
     * copies it while the program issues the next; one that holds event
     * records goes out when the stream's next copy comes, so that the records
     * made after this copy ride with it */
    if (cb_run_feed_copy(run) && run->q.nmarks == 0) {
        *rc = cb_first_error(*rc, cb_flush_run(run, CB_WHY_flush_full));
        cb_run_chunk_sent(run);
    }
    cb_run_set_queued(run);
    cb_run_unlock(run);
    cb_life_arm();
    return 1;

pass:
    /* The copy passes through; whatever is queued on its stream goes first.
     * An empty per-thread run may still hold the join of a side submission
     * (another thread's flush, the timer's): the owner's stream waits for it
     * before this copy, as before any other call naming the stream (rule 4),
     * or the copy could run before side-submitted copies it follows. */
    if (run->q.n > 0 || run->facts.fence.ev_join)
        *rc = cb_first_error(*rc, cb_flush_run(run, CB_WHY_flush_passthrough));
    else if (run->facts.ptds && run->facts.fence.ev_start)
        cb_fence_release(&run->facts);
    cb_run_set_active(run);
    if (spell)
        cb_run_spell_begin(run, spell, why, why == CB_ST_pass_chosen, host_alloc(rq), upload_tag(rq));
    cb_bump(&cb_stats_thread()->v[why], 1);
    cb_run_unlock(run);
    return 0;
}

/* ---- the decision ------------------------------------------------------------------ */

/* Every copy is counted once, by its entry point; the counters block is
 * returned for the reason the caller counts next. */
static inline struct cb_tstats *count_copy(unsigned entry)
{
    struct cb_tstats *t = cb_stats_thread();
    cb_bump(&t->calls[cb_entry_hook(entry)], 1);
    cb_bump(&t->v[CB_ST_copies], 1);
    return t;
}

/* Batching off for good (rule 2's version rule, CUBATCH_ENABLE=0) or switched
 * off (cubatch_set_enabled(0)): the copy, counted, goes out as it came.
 * Switched off, a run may still hold something of its stream's: copies the
 * switch's flush has not reached yet, or a per-thread run's side submission
 * its stream must wait for (rule 4).  That goes first, as before any call
 * naming the stream; nothing to do while no run holds anything.  Kept out of
 * copy_one, whose every copy would pay for this call's registers. */
static __attribute__((noinline)) CUresult issue_unbatched(unsigned entry, CUdeviceptr dst, CUdeviceptr src,
                                                          size_t bytes, CUstream stream)
{
    struct cb_tstats *t = count_copy(entry);
    cb_bump(&t->v[!cb_batching && cb_opt(CB_OPT_enable) ? CB_ST_pass_version : CB_ST_pass_disabled], 1);
    cb_bump(&t->v[CB_ST_copies_unknown], 1);
    CUresult fe = cb_flush_stream(stream, cb_entry_ptsz(entry), CB_WHY_flush_passthrough);
    return cb_first_error(fe, cb_issue_copy(cb_entry_hook(entry), dst, src, bytes, stream));
}

/* The full path: every rule, for any copy copy_first did not pass. */
static __attribute__((noinline)) CUresult copy_one(unsigned entry, CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                                   CUstream stream)
{
    if (!cb_batching || cb_flush_paused())
        return issue_unbatched(entry, dst, src, bytes, stream);
    int hook = cb_entry_hook(entry), ptsz = cb_entry_ptsz(entry);
    struct cb_tstats *t = count_copy(entry);
    /* every member set here or before its first use: no zeroing of the whole */
    struct cb_copy_req rq;
    rq.hook = hook;
    rq.dst = dst;
    rq.src = src;
    rq.bytes = bytes;
    rq.stream = stream;
    rq.ctx = NULL;
    rq.kernel_ok = 0;
    rq.sk = cb_stream_kind(stream, ptsz);
    if (rq.sk == CB_SK_LEGACY && !legacy_deferrable()) {
        /* Rule 3: it waits for every blocking stream, so their runs go first. */
        cb_bump(&t->v[CB_ST_pass_legacy], 1);
        cb_bump(&t->v[CB_ST_copies_unknown], 1);
        CUresult fe = cb_flush_legacy();
        return cb_first_error(fe, cb_issue_copy(hook, dst, src, bytes, stream));
    }
    if (bytes == 0) {
        /* The batch API refuses 0-byte entries; the copy touches no memory and
         * waits for nothing, so it need not follow the queued run either. */
        cb_bump(&t->v[CB_ST_pass_zero], 1);
        cb_bump(&t->v[CB_ST_copies_unknown], 1);
        return cb_issue_copy(hook, dst, src, bytes, stream);
    }
    enum cb_stat_id why;
    if (cb_classify_pair(dst, src, &rq.dcls, &rq.scls))
        why = CB_ST_pass_query;
    else
        why = memory_verdict(&rq, cb_entry_dir(entry));
    if (!why) {
        enum cb_direction d = direction(rq.dcls.kind, rq.scls.kind);
        cb_bump(&t->v[cb_direction_stat(d)], 1);
        if (!policy_defers(d, bytes)) {
            /* Eligible memory, just not worth batching.  This copy is asynchronous
             * and holds the host to nothing, so issuing it ahead of the queued run
             * is unobservable unless their ranges overlap (rule 5): only then must
             * the run go first.  Interleaved copies of both kinds keep batching. */
            cb_bump(&t->v[bytes > cb_opt(CB_OPT_max_copy) ? CB_ST_pass_size : CB_ST_pass_policy], 1);
            if (rq.sk == CB_SK_LEGACY)
                (void)legacy_ctx(&rq); /* its run (none without a context: the driver refuses the copy) */
            return cb_issue_ahead_of_run(&rq);
        }
        CUresult rc = CUDA_SUCCESS;
        if (defer(&rq, &rc)) {
            cb_bump(&t->v[CB_ST_deferred], 1);
            return rc;
        }
        /* defer() counted its reason and flushed the stream already */
        return cb_first_error(rc, cb_issue_copy(hook, dst, src, bytes, stream));
    }
    cb_bump(&t->v[CB_ST_copies_unknown], 1);
    cb_bump(&t->v[why], 1);
    CUresult fe = cb_flush_stream(stream, ptsz, CB_WHY_flush_passthrough);
    return cb_first_error(fe, cb_issue_copy(hook, dst, src, bytes, stream));
}

/* The stream's pending waits (rule 16), then the copy. */
static __attribute__((noinline)) CUresult copy_waited(unsigned entry, CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                                      CUstream stream)
{
    CUresult waited = cb_waits_issue_of(stream);
    return cb_first_error(waited, copy_one(entry, dst, src, bytes, stream));
}

/* ---- a burst's first copy ----------------------------------------------------------- */

/* Rule 8: the first copy after a call on this thread named the stream, the
 * common case of a lone copy, goes out before its memory is asked about.  It
 * passes through whatever its memory is, so nothing classification learns
 * could change what happens to it.  The note alone decides, without the run,
 * while no run anywhere holds anything and no wait is pending (a per-thread
 * stream's run may hold a fence to give back: run.c's note_fast, which the
 * stream's kind answers sooner).  A legacy copy's context is not asked yet:
 * any context's note will do (run.h); a legacy note exists only where the
 * copy kernel took the stream's copies, and the full path passes the next
 * copy while a capture forbids that.  Only sizes that every direction's
 * policy surely defers begin a burst here (not 0 bytes): a copy the policy
 * would pass leaves the note to the stream's next copy, as on the full path.
 * Any other copy takes the full path, as does this one when the note says no. */
static __attribute__((noinline)) CUresult copy_first(unsigned entry, CUdeviceptr dst, CUdeviceptr src,
                                                     size_t bytes, CUstream stream)
{
    int ptsz = cb_entry_ptsz(entry);
    enum cb_stream_kind sk = cb_stream_kind(stream, ptsz);
    struct cb_run_key key = cb_run_key_of(stream, sk, NULL);
    if (!cb_batching || cb_flush_paused())
        return issue_unbatched(entry, dst, src, bytes, stream);
    if (cb_flush_closed() || sk == CB_SK_PER_THREAD || !cb_run_pass_first_here(&key))
        return copy_one(entry, dst, src, bytes, stream);
    struct cb_tstats *t = count_copy(entry);
    cb_bump(&t->v[CB_ST_pass_first], 1);
    cb_bump(&t->v[CB_ST_copies_unknown], 1); /* not classified: not examined */
    return cb_issue_copy(cb_entry_hook(entry), dst, src, bytes, stream);
}

/* A copy on a stream with waits pending goes after them; else the checks that
 * most often send a copy down the full path (a run holds copies, the size is
 * not one every policy surely defers) come before anything else.  Each call is
 * a tail call with these very arguments. */
CUresult cb_copy(unsigned entry, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
    if (CB_UNLIKELY(cb_waits_pending()))
        return copy_waited(entry, dst, src, bytes, stream);
    if (CB_LIKELY(!cb_runs_active() && bytes - 1 < cb_policy_first_max))
        return copy_first(entry, dst, src, bytes, stream);
    return copy_one(entry, dst, src, bytes, stream);
}

/* CB_COPY_ENTRY gives a hook id 16 bits. */
_Static_assert(CB_HOOK_COUNT <= 0xffff, "a hook id fits CB_COPY_ENTRY");
