/* copy.c - the body shared by the copy wrappers (cuMemcpyAsync,
 * cuMemcpy{HtoD,DtoH,DtoD}Async_v2 and their _ptsz twins): every rule that
 * decides whether this copy may be deferred (docs/design.md rules 1-3, 5, 12 and the size
 * and pace policies), in one place, each refusal counted under one reason.  A
 * deferred copy joins its stream's run; any other is issued at once, unchanged,
 * after whatever it must follow. */
#include "run.h"
#include "store.h"
#include "notes.h"
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

/* Device memory must belong to the stream's device (peer copies pass). */
static int other_device(const struct cb_copy_req *rq, const struct cb_run *run)
{
    return (rq->dcls.kind == CB_MEM_DEVICE && rq->dcls.device != run->facts.device) ||
           (rq->scls.kind == CB_MEM_DEVICE && rq->scls.device != run->facts.device);
}

/* Is a segment of copies in direction d on the run's stream given to the
 * measured choice (choose.c)?  Host memory copies on a created stream, when
 * measuring is on.  The rest keep the fixed rules. */
static int measured(const struct cb_run *run, enum cb_direction d)
{
    const struct cb_stream_facts *f = &run->facts;
    return cb_choose_enabled() && !f->legacy && !f->ptds && (d == CB_D_H2D || d == CB_D_D2H);
}

/* A segment of the stream's copies begins with this one (the run empty, its
 * stream learned): what the measured choice gives it to (choose.c).  Host
 * memory copies on a created stream are measured whenever the copy kernel may
 * not take them: another stream may be filling the GPU (rule 12), or the copy
 * is outside the kernel's reach. */
static enum cb_arm choose(const struct cb_copy_req *rq, struct cb_run *run)
{
    struct cb_stream_facts *f = &run->facts;
    enum cb_direction d = direction(rq->dcls.kind, rq->scls.kind);
    if (!measured(run, d) || rq->rows.height) { /* 2D copies: the copy kernel's only (rule 19) */
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
 * without it: copy_first).  0: the thread has no current context. */
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

/* ---- deferring: settle, verdict, act ------------------------------------------------ */

/* The rules that pass a copy through instead of deferring it (docs/design.md
 * rules 2, 3, 8, 12, 13 and the pace), in the order they are asked: the verdict
 * is the first that holds, counted under its reason (a reason may close more
 * than one rule); a copy none passes is deferred.  This list is the order:
 * settle learns the rules' facts in it (checked in the debug build). */
#define CB_COPY_RULES(X)                                                                                        \
    X(reentered, pass_query)     /* this thread holds a run lock: a submission's driver call came back */     \
    X(spell_chosen, pass_chosen) /* this thread's pass spell (notes.h) of the measured choice's segment... */ \
    X(spell_busy, pass_busy)     /* ... or of a busy GPU's verdict (rule 12) */                              \
    X(no_context, pass_legacy)   /* the legacy stream, no current context: the driver says what it says */    \
    X(no_run, pass_nomem)        /* no run for the stream (out of memory) */                                 \
    X(off, pass_disabled)        /* exit's final flush came, or batching was switched off meanwhile */        \
    X(slow, pass_slow)           /* the stream's copies come too slowly to batch (the pace, run.h) */         \
    X(first, pass_first)         /* rule 8: the first copy of a burst goes out at once */                     \
    X(segment, pass_chosen)      /* the measured choice passes the open segment, which has room for it */    \
    X(unopened, pass_query)      /* the run opens with it, and its stream's facts could not be learned */    \
    X(capturing, pass_capture)   /* rule 2: the stream captures; captured as before, never batched */        \
    X(foreign, pass_foreign)     /* device memory of another device than the stream's (peer copies) */       \
    X(chosen, pass_chosen)       /* a new segment begins with it, and the measured choice passes it */       \
    X(busy, pass_busy)           /* rule 12: an upload while another stream may fill the GPU */               \
    X(no_kernel, pass_legacy)    /* rule 3: the legacy stream, and the copy kernel may not take it */         \
    X(rows_no_kernel, pass_rows) /* rule 19: a 2D copy the copy kernel may not take */                        \
    X(unqueued, pass_nomem)      /* queueing it failed (out of memory): learned by act_defer */               \
    X(taken_back, pass_capture)  /* rule 13: a legacy copy raced a capture's begin, taken back: act_defer */
enum copy_rule {
#define CB_RULE_ENUM(name, reason) R_##name,
    CB_COPY_RULES(CB_RULE_ENUM)
#undef CB_RULE_ENUM
    R_NONE /* none holds: the copy is deferred */
};

/* What the verdict is decided from: the rule found to hold (R_NONE: none so
 * far), and the stream's run, locked once found. */
struct copy_facts {
    enum copy_rule rule;
    struct cb_run *run; /* NULL: none (yet) */
    int opened;         /* the run was empty: the copy opens it (not a rule: act_defer's) */
#ifdef CB_DEBUG
    int asked; /* the rules learned so far: the list's order is settle's */
#endif
};

/* Learn rule r: if pred holds, the verdict is decided and the function
 * learning it returns, so that nothing after it is learned.  Learning a fact
 * may have side effects (a clock read, a burst's note, a driver query, a new
 * choice, a flush between two rules): each happens exactly when every rule
 * before it failed, as it did when the copy path was one function. */
#define LEARN(f, r, pred)                                  \
    do {                                                   \
        CB_IF_DEBUG(CB_ASSERT((f)->asked <= R_##r);        \
                    (f)->asked = R_##r + 1;)               \
        if (pred) {                                        \
            (f)->rule = R_##r;                             \
            return;                                        \
        }                                                  \
    } while (0)

/* The verdict: the counter of the first rule that holds, or CB_ST_deferred.
 * It reads nothing but the facts, and changes nothing. */
static inline enum cb_stat_id verdict(const struct copy_facts *f)
{
    static const unsigned char reason[R_NONE + 1] = {
#define CB_RULE_REASON(name, why) [R_##name] = CB_ST_##why,
        CB_COPY_RULES(CB_RULE_REASON)
#undef CB_RULE_REASON
        [R_NONE] = CB_ST_deferred};
    return (enum cb_stat_id)reason[f->rule];
}
_Static_assert(CB_STAT_COUNT <= 256, "a counter id fits the verdict's table");

#ifdef CB_DEBUG
/* The debug build's check of the shortcuts: the verdict as the locked path
 * would find it now, from rule `off` on, learned without a side effect (the
 * run's lock held).  Past `segment` it needs the classified copy (rq; NULL:
 * not classified) and a run whose next steps change nothing (empty, its
 * stream's facts known, no choice to make): else R_NONE is left with
 * f->asked = -1, unknown. */
static void peek_run(const struct cb_copy_req *rq, struct cb_run *run, struct copy_facts *f)
{
    LEARN(f, off, cb_flush_closed() || cb_flush_paused());
    LEARN(f, slow, cb_run_slow_peek(run));
    LEARN(f, first, run->q.n == 0 && !cb_run_in_burst_peek(run));
    LEARN(f, segment, cb_segment_room_peek(&run->seg));
    if (!rq || run->q.n > 0 || !run->facts.known || cb_captures_active() ||
        (!cb_segment_open(&run->seg) && measured(run, direction(rq->dcls.kind, rq->scls.kind)))) {
        f->asked = -1;
        return;
    }
    LEARN(f, foreign, other_device(rq, run));
    LEARN(f, busy, run->q.arm == CB_ARM_STATIC && run->facts.sm_busy && upload(rq) && kernel_may(rq, run));
    LEARN(f, no_kernel, run->facts.legacy && !kernel_may(rq, run));
    LEARN(f, rows_no_kernel, rq->rows.height && !kernel_may(rq, run));
}

/* ... as a counter; CB_STAT_COUNT: unknown. */
static enum cb_stat_id peek(const struct cb_copy_req *rq, struct cb_run *run)
{
    struct copy_facts f = {.rule = R_NONE, .run = run, .asked = R_off};
    peek_run(rq, run, &f);
    return f.asked < 0 ? CB_STAT_COUNT : verdict(&f);
}
#endif

/* This thread's pass spell on the stream (notes.h), a cache of the verdict: a
 * copy the measured choice's PASS segment (rule `segment`) or the load's
 * verdict (rule `busy`) passed through noted that the stream's next copies
 * from this thread would pass by the same rule, so they pass without the
 * run's lock.  It is invalid once the run holds anything (its `holds`), a run
 * was removed (a reused handle), a legacy run waits (rule 3), the segment or
 * the verdict's answers are used up, or a call on this thread named the
 * stream: cb_run_spell_here checks each.  A call on another thread that ends
 * the burst (a context-wide flush) is not seen: the copies it still passes
 * would have passed as a new burst's first.  The debug build asks the verdict
 * under the lock too (its rules after the spell's, as the copy would find them
 * without it), and checks they agree, that case aside. */
static int spelled(struct cb_copy_req *rq, const struct cb_run_key *key)
{
#ifdef CB_DEBUG
    struct cb_run *run = cb_run_lock_key(key, 0, NULL);
    enum cb_stat_id expect = run ? peek(rq, run) : CB_STAT_COUNT;
#endif
    int why = cb_run_spell_here(key, host_alloc(rq), upload_tag(rq));
#ifdef CB_DEBUG
    CB_ASSERT(!why || why == CB_ST_pass_chosen || why == CB_ST_pass_busy);
    if (run) {
        CB_ASSERT(!why || expect == CB_STAT_COUNT || (int)expect == why || expect == CB_ST_pass_first);
        cb_run_unlock(run);
    }
#endif
    return why;
}

/* Settle, before the run: a call that re-entered, this thread's spell, the
 * legacy stream's context, whatever rule 3 orders the copy after (other
 * streams' runs, flushed before this one's lock is taken: store.c), then the
 * stream's run, locked. */
static void settle_stream(struct cb_copy_req *rq, struct copy_facts *f, CUresult *rc)
{
    struct cb_run_key key = cb_run_key_of(rq->stream, rq->sk, rq->ctx);
    int created;
    LEARN(f, reentered, cb_runs_locked_here());
    if (CB_UNLIKELY(cb_run_spells_here()) && rq->sk == CB_SK_CREATED && !cb_flush_closed() && !cb_flush_paused()) {
        int why = spelled(rq, &key);
        LEARN(f, spell_chosen, why == CB_ST_pass_chosen);
        LEARN(f, spell_busy, why == CB_ST_pass_busy);
    }
    if (rq->sk == CB_SK_LEGACY) {
        LEARN(f, no_context, !legacy_ctx(rq));
        key = cb_run_key_of(rq->stream, rq->sk, rq->ctx);
    }
    if (CB_UNLIKELY(cb_runs_cross_pending(rq->sk)))
        *rc = cb_flush_cross(rq->stream, rq->sk);
    f->run = cb_run_lock_key(&key, 1, &created);
    LEARN(f, no_run, !f->run);
    if (created && f->run->facts.ptds)
        cb_life_watch_thread();
}

/* The per-thread stream's run holds copies of the context that was current:
 * has the thread switched since?  (A legacy run is keyed by the context.) */
static int switched_context(const struct cb_run *run)
{
    CUcontext cur = NULL;
    return cb_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != run->facts.ctx;
}

/* Settle, the run locked: the error a flush nobody waited for kept (flush.c:
 * this copy is the stream's next call; one error a call: with the cross
 * flush's, it waits for the next), a chunk due (rule 7), then the rules, with
 * what must happen between them: a full PASS segment ends (a new choice
 * follows), a run this copy overlaps (rule 5) or a per-thread run of another
 * context goes out, an empty run learns its stream (rule 2), a new segment is
 * chosen, the load asked (rule 12), the kernel's reach (rq->kernel_ok). */
static void settle_run(struct cb_copy_req *rq, struct copy_facts *f, CUresult *rc)
{
    struct cb_run *run = f->run;
    if (CB_UNLIKELY(run->pending != CUDA_SUCCESS) && *rc == CUDA_SUCCESS)
        *rc = cb_run_take_pending(run);
    if (run->feed.chunk_due && run->q.n > 0) {
        *rc = cb_first_error(*rc, cb_flush_run(run, CB_WHY_flush_full));
        cb_run_chunk_sent(run);
    }
    LEARN(f, off, cb_flush_closed() || cb_flush_paused());
    LEARN(f, slow, run->pace.slow && cb_run_still_slow(run));
    LEARN(f, first, run->q.n == 0 && !cb_run_in_burst(run));
    LEARN(f, segment, cb_segment_settle_pass(&run->seg, run->facts.stream));
    if (run->q.n > 0 && cb_run_hazard(run, rq))
        *rc = cb_first_error(*rc, cb_flush_run(run, CB_WHY_flush_hazard));
    if (run->q.n > 0 && run->facts.ptds && switched_context(run))
        *rc = cb_first_error(*rc, cb_flush_run(run, CB_WHY_flush_stream));
    f->opened = run->q.n == 0;
    if (f->opened) {
        LEARN(f, unopened, cb_run_open(run, rq->stream));
        LEARN(f, capturing, run->facts.capturing);
    }
    LEARN(f, foreign, other_device(rq, run));
    LEARN(f, chosen, run->q.n == 0 && !cb_segment_open(&run->seg) && choose(rq, run) == CB_ARM_PASS);
    LEARN(f, busy, run->q.arm == CB_ARM_STATIC && busy_upload(rq, run));
    rq->kernel_ok = kernel_may(rq, run);
    LEARN(f, no_kernel, run->facts.legacy && !rq->kernel_ok);
    LEARN(f, rows_no_kernel, rq->rows.height && !rq->kernel_ok);
}

/* Act on a verdict to defer: the copy joins the run.  Queueing may still fail,
 * and a legacy copy may have raced a capture's begin: the list's last two
 * rules, which only trying can learn. */
static void act_defer(struct cb_copy_req *rq, struct copy_facts *f, CUresult *rc)
{
    struct cb_run *run = f->run;
    if (f->opened)
        cb_run_opened(run); /* it joins: from here on the run has an age */
    LEARN(f, unqueued, cb_run_append(run, rq));
    LEARN(f, taken_back, CB_UNLIKELY(run->facts.legacy) && legacy_run_raced_a_capture(run));
    cb_segment_join(&run->seg, host_alloc(rq));
    if (f->opened)
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
}

/* Act on a verdict to pass: what the rule that held starts (a burst, a
 * segment's copy, a spell), then the copy passes through and whatever is
 * queued on its stream goes first.  An empty per-thread run may still hold the
 * join of a side submission (another thread's flush, the timer's): the owner's
 * stream waits for it before this copy, as before any other call naming the
 * stream (rule 4), or the copy could run before side-submitted copies it
 * follows.  Rules decided before the run: nothing of it to do. */
static void act_pass(struct cb_copy_req *rq, const struct copy_facts *f, enum cb_stat_id why, CUresult *rc)
{
    struct cb_run *run = f->run;
    unsigned spell = 0; /* the stream's next copies that may pass by this one's spell */
    if (f->rule == R_spell_chosen || f->rule == R_spell_busy)
        CB_COUNT(pass_spelled);
    else if (f->rule == R_no_context)
        *rc = cb_flush_legacy(); /* rule 3 */
    cb_bump(&cb_stats_thread()->v[why], 1);
    if (!run)
        return;
    if (f->rule == R_first)
        cb_run_burst_begins(run);
    else if (f->rule == R_segment || f->rule == R_chosen)
        spell = cb_segment_pass_copy(&run->seg, host_alloc(rq));
    else if (f->rule == R_busy) /* the verdict's remaining answers go to the spell: the copy after it asks again */
        spell = run->q.n == 0 ? cb_smwork_busy_claim(&run->facts) : 0;
    if (run->q.n > 0 || run->facts.fence.ev_join)
        *rc = cb_first_error(*rc, cb_flush_run(run, CB_WHY_flush_passthrough));
    else if (run->facts.ptds && run->facts.fence.ev_start)
        cb_fence_release(&run->facts);
    cb_run_set_active(run);
    if (spell)
        cb_run_spell_begin(run, spell, why, why == CB_ST_pass_chosen, host_alloc(rq), upload_tag(rq));
    cb_run_unlock(run);
}

/* Rules 2, 3 (stream), 5 (hazards), 8, 12, 13 and the pace: settle, verdict,
 * act.  Returns 1 (deferred; *rc: an earlier error to report now, if any) or 0
 * (the caller issues the copy: its stream's run went first; *rc: that flush's
 * error). */
static int defer(struct cb_copy_req *rq, CUresult *rc)
{
    struct copy_facts f = {.rule = R_NONE, .run = NULL};
    *rc = CUDA_SUCCESS;
    settle_stream(rq, &f, rc);
    if (f.rule == R_NONE)
        settle_run(rq, &f, rc);
    enum cb_stat_id why = verdict(&f);
    if (why == CB_ST_deferred) {
        act_defer(rq, &f, rc);
        why = verdict(&f);
        if (why == CB_ST_deferred)
            return 1;
    }
    act_pass(rq, &f, why, rc);
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

/* The copy as the program asked for it, through its own entry point. */
static CUresult issue_req(const struct cb_copy_req *rq)
{
    if (CB_UNLIKELY(rq->is_2d))
        return cb_issue_copy2d(rq->hook, rq->copy2d, rq->stream);
    return cb_issue_copy(rq->hook, rq->dst, rq->src, rq->bytes, rq->stream);
}

/* ... after whatever its stream holds. */
static __attribute__((noinline)) CUresult issue_after_run(const struct cb_copy_req *rq)
{
    CUresult fe = cb_flush_stream(rq->stream, rq->sk == CB_SK_PER_THREAD, CB_WHY_flush_passthrough);
    return cb_first_error(fe, issue_req(rq));
}

/* A classified copy of memory that may be deferred (rules 1 and 5 of the
 * memory): counted by direction, then the policy, then defer(). */
static CB_ALWAYS_INLINE CUresult copy_eligible(struct cb_tstats *t, struct cb_copy_req *rq)
{
    enum cb_direction d = direction(rq->dcls.kind, rq->scls.kind);
    cb_bump(&t->v[cb_direction_stat(d)], 1);
    if (!policy_defers(d, rq->bytes)) {
        /* Eligible memory, just not worth batching.  This copy is asynchronous
         * and holds the host to nothing, so issuing it ahead of the queued run
         * is unobservable unless their ranges overlap (rule 5): only then must
         * the run go first.  Interleaved copies of both kinds keep batching. */
        cb_bump(&t->v[rq->bytes > cb_opt(CB_OPT_max_copy) ? CB_ST_pass_size : CB_ST_pass_policy], 1);
        if (CB_UNLIKELY(rq->is_2d)) /* its rows interleave with the run's: it simply follows it */
            return issue_after_run(rq);
        if (rq->sk == CB_SK_LEGACY)
            (void)legacy_ctx(rq); /* its run (none without a context: the driver refuses the copy) */
        return cb_issue_ahead_of_run(rq);
    }
    CUresult rc = CUDA_SUCCESS;
    if (defer(rq, &rc)) {
        cb_bump(&t->v[CB_ST_deferred], 1);
        return rc;
    }
    /* defer() counted its reason and flushed the stream already */
    return cb_first_error(rc, issue_req(rq));
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
    rq.rows.height = 0;
    rq.is_2d = 0;
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
    if (!why)
        return copy_eligible(t, &rq);
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

/* The note of this thread's burst on the stream, a cache of the verdict's
 * rule `first` (cb_run_pass_first_here, notes.h): the thread let a burst's
 * first copy through on this stream, and a call on this thread named the
 * stream since, so its next copy begins a new burst.  It holds only while no
 * run anywhere holds anything (cb_copy asks: then neither does this stream's,
 * so no rule before `first` that needs the run could hold, and copy_one's
 * checks before defer() only ever pass a copy too), the stream is a created
 * or the legacy one (a per-thread run may hold a fence to give back), and
 * batching is on.  It is invalid once another thread's call ended the burst
 * (the next copy still begins a new one); for the legacy stream, once the
 * thread switched context (the note of any context answers while it has noted
 * one only); and once the timer found the stream slow after the note was
 * written (its `fast` is renewed only where rule `first` is asked, which a
 * slow stream's copies never reach): the copy then passes as a burst's first
 * instead of by the pace, untimed.  Either way it passes, as the verdict
 * would have it; making the note follow the pace would change which copies
 * are timed, so it is kept so.  The debug build asks the verdict under the
 * note's run's lock too (a lock the shortcut exists to avoid), and checks
 * they agree, the pace's case and another thread's copies queued meanwhile
 * aside. */
static inline int first_here(const struct cb_run_key *key)
{
#ifndef CB_DEBUG
    return cb_run_pass_first_here(key);
#else
    if (cb_runs_locked_here()) { /* the verdict: pass_query (re-entered) */
        int passes = cb_run_pass_first_here(key);
        CB_ASSERT(!passes);
        return passes;
    }
    struct cb_run_key noted;
    struct cb_run *run = cb_run_first_note(key, &noted);
    enum cb_stat_id expect = CB_ST_pass_first;
    if (run) {
        cb_run_lock(run);
        if (cb_run_keyed(run, &noted)) /* else a stale note, of a stream gone: no verdict of it to ask */
            expect = cb_run_spell_peek(&noted, 0) ? CB_ST_pass_spelled : peek(NULL, run);
    }
    int passes = cb_run_pass_first_here(key);
    if (run) {
        /* A run holding copies here holds another thread's: cb_copy came here
         * because no run held any, and this thread has queued nothing since.
         * That copy and this one are concurrent calls on one stream, so
         * either order is one the program allows (the verdict, which sees
         * the run, would defer this one). */
        CB_ASSERT(!passes || expect == CB_ST_pass_first || expect == CB_ST_pass_slow || run->q.n > 0);
        cb_run_unlock(run);
    }
    return passes;
#endif
}

/* Rule 8: the first copy after a call on this thread named the stream, the
 * common case of a lone copy, goes out before its memory is asked about.  It
 * passes through whatever its memory is, so nothing classification learns
 * could change what happens to it.  The note alone decides (first_here),
 * without the run.  A legacy copy's context is not asked yet: any context's
 * note will do (notes.h); a legacy note exists only where the copy kernel took
 * the stream's copies, and the full path passes the next copy while a capture
 * forbids that.  Only sizes that every direction's policy surely defers begin
 * a burst here (not 0 bytes): a copy the policy would pass leaves the note to
 * the stream's next copy, as on the full path.  Any other copy takes the full
 * path, as does this one when the note says no. */
static __attribute__((noinline)) CUresult copy_first(unsigned entry, CUdeviceptr dst, CUdeviceptr src,
                                                     size_t bytes, CUstream stream)
{
    int ptsz = cb_entry_ptsz(entry);
    enum cb_stream_kind sk = cb_stream_kind(stream, ptsz);
    struct cb_run_key key = cb_run_key_of(stream, sk, NULL);
    if (!cb_batching || cb_flush_paused())
        return issue_unbatched(entry, dst, src, bytes, stream);
    if (cb_flush_closed() || sk == CB_SK_PER_THREAD || !first_here(&key))
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

/* ---- 2D copies (rule 19) ------------------------------------------------------------- */

/* A side of a 2D copy: its start (the row and column offsets added) and
 * pitch, and its memory type; 0 when the type is one the copy kernel cannot
 * take (an array, or a type the driver will refuse) or the start overflows. */
static int side_of(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x, size_t y, size_t pitch,
                   CUdeviceptr *start, unsigned char *kept)
{
    CUdeviceptr base;
    if (type == CU_MEMORYTYPE_HOST)
        base = (CUdeviceptr)(uintptr_t)host;
    else if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED)
        base = dev;
    else
        return 0;
    if (pitch && y > (SIZE_MAX - x) / pitch)
        return 0;
    size_t off = y * pitch + x;
    if (base == 0 || base + off < base)
        return 0;
    *start = base + off;
    *kept = (unsigned char)type;
    return 1;
}

/* The copy a 2D description makes, in rq: 0 when it is not one between
 * pointers whose rows stay apart (width <= each pitch, a pitch the driver
 * takes: the driver answers the rest itself). */
static int rows_of(const CUDA_MEMCPY2D *p, struct cb_copy_req *rq)
{
    if (!p || p->WidthInBytes > p->srcPitch || p->WidthInBytes > p->dstPitch || p->srcPitch > INT_MAX ||
        p->dstPitch > INT_MAX || p->Height > INT_MAX)
        return 0;
    if (!side_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcPitch, &rq->src,
                 &rq->rows.stype) ||
        !side_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstPitch, &rq->dst,
                 &rq->rows.dtype))
        return 0;
    rq->bytes = p->WidthInBytes * p->Height; /* what the policy and the kernel's reach weigh */
    rq->width = p->WidthInBytes;
    rq->rows.height = p->Height;
    rq->rows.dpitch = p->dstPitch;
    rq->rows.spitch = p->srcPitch;
    return 1;
}

/* A 2D copy's memory types say what each side's pointer is, as an entry
 * point's direction does: a batch may stand in for it only when the memory is
 * what the type says (UNIFIED: anything). */
static int type_agrees(unsigned char type, enum cb_kind k)
{
    return type == CU_MEMORYTYPE_UNIFIED || (type == CU_MEMORYTYPE_HOST && k == CB_MEM_HOST) ||
           (type == CU_MEMORYTYPE_DEVICE && dev_side(k));
}

/* Rules 1 and 5 of the memory for a 2D copy, as memory_verdict's for a 1D
 * one: each side's type agrees with its memory, and its rows end inside its
 * allocation, whose end must be known (a kernel's row outside memory would be
 * a device fault, sticky for the context). */
static enum cb_stat_id rows_verdict(const struct cb_copy_req *rq)
{
    const struct cb_rows *r = &rq->rows;
    if (rq->dcls.kind == CB_MEM_UNKNOWN || rq->scls.kind == CB_MEM_UNKNOWN)
        return CB_ST_pass_pageable;
    if (!type_agrees(r->dtype, rq->dcls.kind) || !type_agrees(r->stype, rq->scls.kind) || !rq->dcls.end ||
        !rq->scls.end || cb_rows_span(rq->width, r->height, r->dpitch) > rq->dcls.end - rq->dst ||
        cb_rows_span(rq->width, r->height, r->spitch) > rq->scls.end - rq->src ||
        (rq->dcls.kind == CB_MEM_DEVICE && rq->scls.kind == CB_MEM_DEVICE && rq->dcls.device != rq->scls.device))
        return CB_ST_pass_foreign;
    return 0;
}

/* The full path of a 2D copy: what it is, its memory (rules 1 and 5), then
 * as a 1D copy's (copy_eligible).  Every 2D copy takes this path: rule 8's
 * shortcut (copy_first) is for 1D copies, and the verdict's rule `first`
 * answers the same for these. */
static __attribute__((noinline)) CUresult copy2d_one(unsigned entry, const CUDA_MEMCPY2D *p, CUstream stream)
{
    int hook = cb_entry_hook(entry), ptsz = cb_entry_ptsz(entry);
    struct cb_tstats *t = count_copy(entry);
    cb_bump(&t->v[CB_ST_copies_2d], 1);
    struct cb_copy_req rq = {.hook = hook, .stream = stream, .is_2d = 1, .copy2d = p, .sk = cb_stream_kind(stream, ptsz)};
    enum cb_stat_id why = 0;
    if (!cb_batching || cb_flush_paused())
        why = !cb_batching && cb_opt(CB_OPT_enable) ? CB_ST_pass_version : CB_ST_pass_disabled;
    else if (!cb_opt(CB_OPT_defer_2d) || !rows_of(p, &rq))
        why = CB_ST_pass_rows;
    else if (rq.sk == CB_SK_LEGACY && !legacy_deferrable())
        why = CB_ST_pass_legacy;
    else if (rq.bytes == 0)
        why = CB_ST_pass_zero;
    else if (cb_classify_pair(rq.dst, rq.src, &rq.dcls, &rq.scls))
        why = CB_ST_pass_query;
    else
        why = rows_verdict(&rq);
    if (!why)
        return copy_eligible(t, &rq);
    cb_bump(&t->v[CB_ST_copies_unknown], 1);
    cb_bump(&t->v[why], 1);
    return issue_after_run(&rq);
}

CUresult cb_copy2d(unsigned entry, const CUDA_MEMCPY2D *copy, CUstream stream)
{
    CUresult waited = CB_UNLIKELY(cb_waits_pending()) ? cb_waits_issue_of(stream) : CUDA_SUCCESS;
    return cb_first_error(waited, copy2d_one(entry, copy, stream));
}

/* CB_COPY_ENTRY gives a hook id 16 bits. */
_Static_assert(CB_HOOK_COUNT <= 0xffff, "a hook id fits CB_COPY_ENTRY");
