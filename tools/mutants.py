#!/usr/bin/env python3
"""Break cubatch on purpose, one rule at a time, and check the test suite notices.

Each mutant is one textual change, anchored to a name: its text is searched only
inside that function, macro, table row or after that marker (below), so the
mutant keeps applying when code moves inside a file or from one file to another.
Mutants never touch the working tree: the sources are copied (git ls-files) to a
work folder, configured there once with this tree's configure options, built
out of tree, and each mutant is applied to the copy, rebuilt (one build folder
for all of them) and tested, then undone.  A mutant that names the test (case)
that must catch it runs only that test; the others (and all, with --full) run
the rule tests, the unit tests, the completeness check, the flush table and the
fuzzer, and must make at least one of them fail.

Usage:
  tools/mutants.py [--full] [--workdir DIR] [-j N] [NAME...]   run mutants (no name: all)
  tools/mutants.py --ci [--workdir DIR]        run the quick subset CI runs (CI_SUBSET)
  tools/mutants.py --check [SRCDIR]            only check that every mutant applies: its
      anchor is found once and its text exactly once inside it; nothing is built.
      make check runs it (tests/package/check_mutants.sh), so a change that moves a
      mutant's text out of its anchor fails until the mutant follows it.
  tools/mutants.py --help                      this text and the list
--workdir DIR keeps the copy and its build in DIR between runs (copied files are
refreshed from the tree); without it a temporary folder is used and removed.

An entry: name: (where, original text, broken text, rule[, test]).
  where  "FILE:ANCHOR", FILE the file the anchor is looked for first; ANCHOR is
         fn()      the definition of C function fn (body and signature); when FILE
                   has none, every src/*.c and src/*.h is searched for it
         #NAME     the #define of NAME (with its continuation lines), found the same way
         NAME      in a .def file: the table row whose first argument is NAME
         @TEXT     FILE from the first line holding TEXT to its end
  test   optional, the test that must catch the mutant: "check_rules:CASE"
         (CK_RUN_CASE=CASE), "check_rules", "check_units[:CASE]",
         "check_hooks_complete", "check_flush_table" or "fuzz"."""
import filecmp, os, pathlib, re, shutil, subprocess, sys, tempfile, time

MUTANTS = {
    # name: (file, original text, broken text, rule)
    "no-hazard-check": ("src/run.h:cb_run_hazard()", "    if (CB_LIKELY(!rq->rows.height && !run->shapes.n))\n        return cb_hazard(&run->writes, &run->reads, rq->dst, rq->src, rq->bytes);",
                        "    if (CB_LIKELY(!rq->rows.height && !run->shapes.n))\n        return 0;", "rule 5"),
    "stream-calls-do-not-flush": ("src/hooks.c:#CB_FLUSH_ARG", "#define CB_FLUSH_ARG(aarg, ptsz) cb_named(CB_EXPAND aarg, ptsz)",
        "#define CB_FLUSH_ARG(aarg, ptsz) ((void)(CB_EXPAND aarg), CUDA_SUCCESS)", "rule 6"),
    "context-calls-do-not-flush": ("src/hooks.c:#CB_WRAP_CONTEXT", "    CB_WRAPPER(name, params, args, cb_named_all(), (void)0)",
        "    CB_WRAPPER(name, params, args, CUDA_SUCCESS, (void)0)", "rule 6"),
    "legacy-does-not-flush": ("src/flush.c:cb_flush_legacy()", "CUresult cb_flush_legacy(void) { return flush_unless_idle(CB_BLOCKING_RUNS, CB_WHY_flush_legacy); }",
                              "CUresult cb_flush_legacy(void) { return (void)flush_unless_idle, CUDA_SUCCESS; }", "rule 3"),
    "capture-ignored": ("src/copy.c:settle_run()", "        LEARN(f, capturing, run->facts.capturing);", "        LEARN(f, capturing, 0);", "rule 2", "check_rules:capture"),
    "ptds-side-stream-skipped": ("src/flush.c:flush_matching()", "        if (!(run->active || cb_run_warm(run)) || !matches(run, which)) {",
                                 "        if (!(run->active || cb_run_warm(run)) || !matches(run, which) || (run->facts.ptds && !cb_run_is_owner(run))) {", "rule 4"),
    "ptds-no-legacy-join": ("src/ptds.c:cb_fence_legacy_join()", "    CUresult rc = join_in(f, CU_STREAM_LEGACY);", "    CUresult rc = CUDA_SUCCESS;", "rule 4"),
    "no-timer": ("src/timer.c:timer_main()", "        uint64_t next = cb_look_runs(cb_now_ns());", "        uint64_t next = 0;", "rule 7"),
    "no-chunking": ("src/run.h:cb_run_feed_copy()", "    } else if (run->q.n >= fd->chunk_at) {\n        fd->chunk_due = 1;",
        "    } else if (0) {\n        fd->chunk_due = 1;", "rule 7"),
    "chunk-before-its-records": ("src/copy.c:act_defer()", "    if (cb_run_feed_copy(run) && run->q.nmarks == 0) {",
        "    if (cb_run_feed_copy(run)) {", "rule 7 (a full chunk waits for the stream's next copy, its records ride)"),
    "policy-sure-past-its-band": ("src/policy.c:cb_policy_load()", "b->lo <= 1 ? b->hi - 1 : 0;", "b->lo <= 1 ? b->hi : 0;",
        "policy (a copy at a band's end is deferred)", "check_units:policy"),
    "policy-top-below-its-band": ("src/policy.c:cb_policy_load()", "                highest = p.band[d][i].hi - 1;",
        "                highest = p.band[d][i].hi - 2;", "policy (a copy at the highest band's end is refused)", "check_units:policy"),
    "min-run-ignored": ("src/engine.c:batch_takes()", "(!f->legacy || to_copy_engines(c, f)) && c->n >= cb_opt(CB_OPT_min_run) &&",
                        "(!f->legacy || to_copy_engines(c, f)) && c->n >= 1 &&", "rule 8"),
    "no-replay": ("src/engine.c:submit_through()", "            rc = replay(e, c, from, to - from, side, rc);", "            (void)replay;", "rule 9"),
    "slow-flush-drops-its-error": ("src/stats.def:flush_slow", "CB_FLUSH(flush_slow,        CB_FD_KEEPS_ERROR,", "CB_FLUSH(flush_slow,        CB_FD_CALL,",
                                   "rule 9 (a flush nobody waits for keeps its error)"),
    "fork-flush-drops-its-error": ("src/stats.def:flush_exit", "CB_FLUSH(flush_exit,        CB_FD_KEEPS_ERROR | CB_FD_MARK,",
                                   "CB_FLUSH(flush_exit,        CB_FD_CALL | CB_FD_MARK,", "rule 9 (a flush nobody waits for keeps its error)"),
    "kept-error-skips-the-next-copy": ("src/copy.c:settle_run()", "    if (CB_UNLIKELY(run->pending != CUDA_SUCCESS) && *rc == CUDA_SUCCESS)\n", "    if (0)\n",
                                       "rule 9 (a kept error at the stream's next call)"),
    "later-error-wins": ("src/internal.h:cb_first_error()", "return kept != CUDA_SUCCESS ? kept : rc; }", "return rc != CUDA_SUCCESS ? rc : kept; }",
                         "rule 9 (the first error is the one reported)"),
    "no-exit-flush": ("src/life.c:at_exit()", "    cb_waits_issue_all(); /* rule 16: nothing the program asked for is left out */\n    cb_flush_exit();",
        "    cb_waits_issue_all(); /* rule 16: nothing the program asked for is left out */", "rule 10", "check_rules:process"),
    "no-fork-flush": ("src/flush.c:cb_flush_before_fork()", "    flush_matching(CB_ALL_RUNS, CB_WHY_flush_exit); /* the parent loses nothing */", "    /* mutant */", "rule 10"),
    "pageable-deferred": ("src/copy.c:memory_verdict()", "    if (rq->dcls.kind == CB_MEM_UNKNOWN || rq->scls.kind == CB_MEM_UNKNOWN)\n        return CB_ST_pass_pageable;",
                          "    if (0)\n        return CB_ST_pass_pageable;", "rule 1", "check_rules:deferral"),
    "version-ignored": ("src/engine_batch.c:cb_batch_engine_init()", "    if (v < 13000) {", "    if (0) {", "section 2"),
    "no-pointer-swap": ("src/resolve.c:cb_swap()", "    return e ? e->wrapper : p;", "    return (void)e, p;", "section 1"),
    "ptds-passed-first-copy-unjoined": ("src/copy.c:act_pass()", "    if (run->q.n > 0 || run->facts.fence.ev_join)\n        *rc = cb_first_error(*rc, cb_flush_run(run, CB_WHY_flush_passthrough));",
                                        "    if (run->q.n > 0)\n        *rc = cb_first_error(*rc, cb_flush_run(run, CB_WHY_flush_passthrough));",
                                        "rule 4 (the owner's passed copy follows a side submission)", "check_rules:per_thread_stream"),
    "switched-off-copy-ahead-of-its-run": ("src/copy.c:issue_unbatched()", "    CUresult fe = cb_flush_stream(stream, cb_entry_ptsz(entry), CB_WHY_flush_passthrough);",
                                           "    CUresult fe = CUDA_SUCCESS;",
                                           "rule 4 (a copy made while switched off follows its stream's run)", "check_rules:per_thread_stream"),
    "ptds-pass-through-unfenced": ("src/flush.c:cb_issue_ahead_of_run()", "    if (run && run->q.n > 0 && run->facts.ptds && run->facts.fence.ev_start) {",
                                   "    if (0) {", "rule 4"),
    "primary-release-forgets-live-context": ("src/context.c:cb_ctx_fate_after()", "    if ((f->destroys && rc == CUDA_SUCCESS) || context_gone(f)) {",
                                             "    if ((f->destroys && rc == CUDA_SUCCESS) || context_gone(f) || 1) {", "rule 6 (forget only what goes)"),
    "row-deleted": ("src/hooks.def:cuLaunchHostFunc", "CB_HOOK(cuLaunchHostFunc, 0, STREAM, (hStream),\n        (CUstream hStream, CUhostFn fn, void *userData),\n        (hStream, fn, userData))\n",
                    "", "rule 6 (completeness)"),
    "ctx-record-event-not-hooked": ("src/hooks.def:cuCtxRecordEvent", "CB_HOOK(cuCtxRecordEvent, 0, CTX_EVENT, (hEvent),\n        (CUcontext hCtx, CUevent hEvent),\n        (hCtx, hEvent))\n",
                                    "", "rule 6 (completeness)"),
    "stream-row-made-context": ("src/hooks.def:cuStreamQuery", "CB_HOOK(cuStreamQuery, 0, STREAM, (hStream),", "CB_HOOK(cuStreamQuery, 0, CONTEXT, (),", "rule 6 (exact scope)"),
    "context-row-made-stream": ("src/hooks.def:cuMemsetD8_v2", "CB_HOOK(cuMemsetD8_v2, 0, CONTEXT, (),", "CB_HOOK(cuMemsetD8_v2, 0, STREAM, (NULL),", "rule 6 (exact scope)"),
    "no-pipelining": ("src/engine.c:cb_engine_chunk()", "    size_t c = kind & CB_CHUNK_H2D ? CB_BATCH_CHUNK_H2D : CB_BATCH_CHUNK;", "    size_t c = max;", "rule 7 (chunks)"),
    "held-not-held": ("src/engine.c:cb_engine_chunk()", "    if (kind & CB_CHUNK_HELD)\n        return max;", "    if (0)\n        return max;",
                      "section 5 (the held arm holds its burst to the end)", "check_rules:beside_compute"),
    "held-mid-burst": ("src/choose.c:cb_choose()", "    if (in->busy && in->burst_first)", "    if (in->busy)",
                       "section 5 (the held arm takes whole bursts only)", "check_rules:beside_compute"),
    "timer-never-armed": ("src/copy.c:act_defer()", "    if (f->opened)\n        cb_timer_arm(run->looks.look_ns);", "    if (f->opened && 0)\n        cb_timer_arm(run->looks.look_ns);", "rule 7"),
    "look-waits-for-a-run": ("src/look.c:cb_look_runs()", "        if (!cb_run_trylock(run)) {", "        if ((cb_run_lock(run), 0)) {",
        "rule 7 (a look waits for no lock)", "check_units:looks"),
    "look-waits-for-the-store": ("src/look.c:cb_look_runs()", "    if (!cb_store_trylock())", "    if ((cb_store_lock(), 0))",
        "rule 7 (a look waits for no lock)", "check_units:looks"),
    "age-bound-ignored": ("src/look.c:cb_look_runs()", "} else if (!joined || now - l->opened_ns >= max_wait) {", "} else if (!joined) {", "rule 7"),
    "clock-read-per-copy": ("src/copy.c:act_defer()", "    LEARN(f, unqueued, cb_run_append(run, rq));", "    LEARN(f, unqueued, cb_now_ns() == 0 || cb_run_append(run, rq));", "rule 7 (no clock per copy)"),
    "slow-streams-deferred": ("src/look.c:cb_look_runs()", "                if (joined && span / joined > cb_opt(CB_OPT_slow_ns)) {", "                if (0) {", "pace"),
    "first-copy-deferred": ("src/copy.c:settle_run()", "    LEARN(f, first, run->q.n == 0 && !cb_run_in_burst(run));", "    LEARN(f, first, 0);", "rule 8 (first of a burst)", "check_rules:deferral"),
    "named-call-keeps-burst": ("src/notes.c:cb_runs_named_here()", "    if (!cb_tls_bursts_open)\n        return;",
                               "    if (1)\n        return;", "rule 8 (a call naming the stream ends its burst)", "check_rules:capture"),
    "lone-first-copy-skips-the-count": ("src/copy.c:cb_copy()", "    if (CB_LIKELY(!cb_runs_active() && bytes - 1 < cb_policy_first_max))",
                                        "    if (CB_LIKELY(bytes - 1 < cb_policy_first_max))",
                                        "rule 8 (a burst begins without the lock only where nothing is queued)", "check_rules:markers"),
    "blocking-overtakes-legacy-run": ("src/flush.c:cb_flush_cross()", "    if (cb_runs_legacy_pending() && follows_legacy(s, sk))\n        return flush_matching(CB_LEGACY_RUNS, CB_WHY_flush_legacy);",
                                      "    (void)s, (void)follows_legacy;", "rule 3 (mirror: legacy runs before blocking work)"),
    "capture-begin-keeps-legacy-runs": ("src/flush.c:cb_flush_capture_begin()", "    if (!cb_runs_locked_here() && atomic_load(&cb_legacy_nonempty) > 0)\n        rc = cb_first_error(",
                                        "    if (0)\n        rc = cb_first_error(", "rule 2/3 (capture)"),
    "legacy-deferred-during-capture": ("src/copy.c:legacy_deferrable()", "    return cb_kernel_usable && !cb_captures_active() && cb_drv.cuCtxGetCurrent;",
                                       "    return cb_kernel_usable && cb_drv.cuCtxGetCurrent;", "rule 2/3 (capture)"),
    "legacy-context-cached": ("src/copy.c:legacy_ctx()", "    return rq->ctx || (cb_drv.cuCtxGetCurrent(&rq->ctx) == CUDA_SUCCESS && rq->ctx);",
                              "    static CB_TLS CUcontext seen;\n    if (!seen)\n        (void)cb_drv.cuCtxGetCurrent(&seen);\n    return (rq->ctx = seen) != NULL;",
                              "rule 3 (a legacy run is its context's)"),
    "legacy-run-keyed-without-context": ("src/copy.c:settle_stream()", "        key = cb_run_key_of(rq->stream, rq->sk, rq->ctx);\n", "",
                                         "rule 3 (a legacy run is its context's)"),
    "legacy-note-of-another-context": ("src/notes.c:legacy_note()", "    if (cb_tls_bursts_legacy != 1)", "    if (!cb_tls_bursts_legacy)",
                                       "rule 8 (a burst's first copy)"),
    "kernel-takes-unchecked-memory": ("src/copy.c:kernel_may_in()", "    return cb_kernel_usable && ctx && rq->dcls.kctx == ctx && rq->scls.kctx == ctx &&",
                                      "    return cb_kernel_usable && ctx &&", "kernel eligibility"),
    "one-kernel-module-for-all-contexts": ("src/engine_kernel.c:load()", "    HASH_FIND_PTR(cb_kctxs, &f->ctx, k);\n    if (k)\n        return k->mod ? k : NULL;",
                                           "    k = cb_kctxs;\n    if (k)\n        return k->mod ? k : NULL;", "kernel module per context"),
    "kernel-module-outlives-its-context": ("src/context.c:cb_ctx_fate_after()", "        cb_forget_context_kernel(f->ctx);\n", "", "kernel module per context"),
    "destroyed-context-kept": ("src/context.c:cb_ctx_destroy_before()", "    f->destroys = destroys;",
                               "    f->destroys = destroys && 0;", "rule 6 (a context made at a destroyed one's handle gets none of its helpers)",
                               "check_rules:errors"),
    "dead-contexts-stream-facts-kept": ("src/store.c:cb_forget_context_runs()", "            if (!run->facts.ptds)\n                cb_run_remove(run);\n",
                                        "", "rule 3 (a stream made at a dead one's handle is asked what it is)", "check_rules:errors"),
    "marker-before-copies": ("src/engine.c:cb_engine_submit()", "    CUresult rc = submit_on(c, f, NULL);\n    CUevent none = NULL; /* no stand-in from a context that could not be made current */\n    CUresult mk = entered == CUDA_SUCCESS ? submit_markers(c, f->ctx, NULL, made) /* rule 11: after every copy */\n                                          : cb_loop_engine_markers(c, NULL, &none);\n",
        "    CUevent none = NULL;\n    CUresult mk = entered == CUDA_SUCCESS ? submit_markers(c, f->ctx, NULL, made)\n                                          : cb_loop_engine_markers(c, NULL, &none);\n    CUresult rc = submit_on(c, f, NULL);\n", "rule 11 (a marker only moves later)"),
    "side-marker-before-copies": ("src/engine.c:submit_side()", "    CUresult sub = submit_on(c, f, side);\n    CUresult mk = submit_markers(c, f->ctx, side, made); /* rule 11: after every copy, before the join */",
        "    CUresult mk = submit_markers(c, f->ctx, side, made);\n    CUresult sub = submit_on(c, f, side);", "rule 11 (per-thread run on the side stream)"),
    "event-observer-does-not-flush": ("src/hooks.c:#CB_WRAP_EVENT", "    CB_WRAPPER(name, params, args, cb_event_observe(CB_EXPAND aarg), (void)0)",
                                      "    CB_WRAPPER(name, params, args, CUDA_SUCCESS, (void)0)", "rule 11 (observers)", "check_rules:markers"),
    "elapsed-start-ignored": ("src/marker.c:cb_event_observe()", "        rc = cb_flush_holder(a);\n        if (b)\n            rc = cb_first_error(rc, cb_flush_holder(b));",
        "        rc = cb_flush_holder(b ? b : a);", "rule 11 (either event of an elapsed time)"),
    "wait-ignores-the-event": ("src/marker.c:cb_flush_wait()", "    rc = cb_first_error(rc, cb_event_flush_holder(*e));",
        "    (void)0;", "rule 11 (a wait on any stream)"),
    "destroy-does-not-flush": ("src/hooks.c:#CB_WRAP_EVENT_FORGET", "    CB_WRAPPER(name, params, args, cb_event_before_forget(CB_EXPAND aarg), cb_event_forget(CB_EXPAND aarg, rc))",
        "    CB_WRAPPER(name, params, args, CUDA_SUCCESS, cb_event_forget(CB_EXPAND aarg, rc))", "rule 11 (destroy)"),
    "new-record-keeps-older": ("src/event.c:cb_event_claim()", "? -1 : ev->run && ev->run != run ? 1 : 0;",
        "? -1 : 0;", "rule 11 (a new record of the same event)"),
    "interprocess-event-deferred": ("src/event.c:cb_event_claim()", "    int rc = !ev || (ev->flags & CU_EVENT_INTERPROCESS) || ev->ctx != ctx",
        "    int rc = !ev || ev->ctx != ctx", "rule 11 (interprocess events pass)"),
    "external-record-deferred": ("src/marker.c:cb_marker_record()", "    int safe = flags == 0 && !cb_flush_closed() && !cb_flush_paused();",
        "    int safe = !cb_flush_closed() && !cb_flush_paused();", "rule 11 (external records pass)"),
    "graph-launch-ignores-markers": ("src/marker.c:cb_flush_graph_launch()", "            if (run->q.nmarks > 0)\n                rc = cb_first_error(rc, cb_flush_run(run, CB_WHY_flush_event));",
                                     "            if (0)\n                rc = cb_first_error(rc, cb_flush_run(run, CB_WHY_flush_event));", "rule 11 (graph launch)"),
    "launch-config-events-ignored": ("src/marker.c:cb_flush_launch_config()", "    if (cfg && cfg->attrs && !cb_runs_locked_here() &&",
        "    if (0 && cfg && cfg->attrs && !cb_runs_locked_here() &&", "rule 11 (launch attributes)"),
    "wait-ends-the-burst": ("src/stats.def:flush_wait", "CB_FLUSH(flush_wait,        CB_FD_CALL | CB_FD_JOINS_LEGACY | CB_FD_KEEPS_BURST | CB_FD_MARK,",
                            "CB_FLUSH(flush_wait,        CB_FD_CALL | CB_FD_JOINS_LEGACY | CB_FD_MARK,", "rule 11 (a wait ends a run, not the burst)"),
    "pass-through-ignores-hazard": ("src/flush.c:cb_issue_ahead_of_run()", "    if (run && run->q.n > 0 && cb_run_hazard(run, rq))\n        fe = cb_first_error(fe, cb_flush_run(run, CB_WHY_flush_hazard));",
                                    "    if (0)\n        fe = cb_first_error(fe, cb_flush_run(run, CB_WHY_flush_hazard));", "rule 5"),
    "launches-ignored": ("src/smwork.c:cb_smwork_note_launch()", "    if (!may_fill(f, blocks, threads, smem))\n        return;",
                         "    if (!may_fill(f, blocks, threads, smem) || 1)\n        return;", "rule 12"),
    "unknown-small-grid-fills": ("src/smwork.c:may_fill()", "    if (f && blocks < min_sms())\n        return 0;",
                                 "    if (0)\n        return 0;", "rule 12 (fewer blocks than SMs leave SMs free)"),
    "graph-taken-for-small-grid": ("src/smwork.h:cb_smwork_launch()", "(f && blocks < atomic_load_explicit",
                                   "(blocks < atomic_load_explicit", "rule 12 (a graph's size is unknown)"),
    "launch-skips-queued-run": ("src/hooks.c:#CB_BETWEEN_RUNS", "(!cb_waits_pending() && cb_flush_stream_idle())",
                                "(!cb_waits_pending())", "rule 6 (a launch names its stream)"),
    "launch-skips-pending-wait": ("src/hooks.c:#CB_BETWEEN_RUNS", "(!cb_waits_pending() && cb_flush_stream_idle())",
                                  "(cb_flush_stream_idle())", "rule 16 (a launch issues its stream's waits)"),
    "launch-keeps-burst-open": ("src/flush.h:cb_flush_stream_idle()", "!cb_runs_active() && cb_runs_nothing_named_here()",
                                "!cb_runs_active()", "rule 8 (a call naming the stream ends the burst)"),
    "config-launch-skips-linked-events": ("src/hooks.c:cb_launch_config_before()",
                                          "CB_BETWEEN_RUNS() && !atomic_load_explicit(&cb_events_linked, memory_order_relaxed)",
                                          "CB_BETWEEN_RUNS()", "rule 15 (cuLaunchKernelEx records the events its attributes name)"),
    "config-launch-skips-queued-run": ("src/hooks.c:cb_launch_config_before()", "CB_BETWEEN_RUNS() && !atomic_load_explicit",
                                       "!cb_waits_pending() && !atomic_load_explicit", "rule 6 (cuLaunchKernelEx names its stream)"),
    "busy-stream-taken-for-idle": ("src/smwork.c:may_delay()", "        if (q == CUDA_ERROR_NOT_READY)\n            busy = 1, cb_busy[i].busy_ns = now;",
                                   "        if (q == CUDA_ERROR_NOT_READY && 0)\n            busy = 1, cb_busy[i].busy_ns = now;", "rule 12"),
    "finished-compute-still-busy": ("src/smwork.c:may_delay()", "            forget(i); /* idle", "            busy = 1; /* idle", "rule 12"),
    "joined-run-has-no-age": ("src/copy.c:act_defer()", "    if (f->opened)\n        cb_run_opened(run);", "    if (0)\n        cb_run_opened(run);",
                              "rule 7 (a run's age counts from its first copy)"),
    "unsampled-segments-passed": ("src/choose.c:decide()", "        *sample = 0;\n        return CB_ARM_BATCH;",
                                  "        *sample = 0;\n        return CB_ARM_PASS;",
                                  "section 5 (the measured choice batches until it has measured)", "check_rules:beside_compute"),
    "busy-verdict-outlives-a-launch": ("src/smwork.c:cb_smwork_note_busy()", "    if (f->busy_left > 0 && f->busy_gen == gen) {",
                                       "    if (f->busy_left > 0) {", "rule 12 (a launch seen makes the next question be asked again)", "check_rules:beside_compute"),
    "spell-passes-ahead-of-queued-copies": ("src/notes.c:cb_run_spell_here()", "    if (atomic_load_explicit(&sp->run->holds, memory_order_acquire) ||",
                                            "    if (0 ||", "rule 12 (a pass spell never passes a copy queued on its stream)",
                                            "check_rules:beside_compute"),
    "spell-outlives-a-naming-call": ("src/notes.c:cb_runs_named_here()", "        if (sp)\n            spell_end(sp);\n", "        (void)sp;\n",
                                     "rule 8 (a call naming the stream ends its spell as it ends the burst)",
                                     "check_rules:beside_compute"),
    "spell-passes-any-copy": ("src/notes.c:cb_run_spell_here()", "(!sp->segment && sp->upload != upload)", "(0 && sp->upload != upload)",
                              "rule 12 (a verdict's spell passes only the uploads it was asked for)", "check_rules:beside_compute"),
    "spell-counts-no-allocations": ("src/notes.c:cb_run_spell_here()", "host_alloc != sp->last_alloc);", "0);",
                                    "section 5 (the measured choice's classes count allocations of spelled copies too)",
                                    "check_rules:beside_compute"),
    "busy-verdict-never-asked-again": ("src/smwork.c:cb_smwork_note_busy()", "        f->busy_left--;\n",
                                       "", "rule 12 (a verdict answers a bounded number of questions)", "check_rules:beside_compute"),
    "capturing-stream-flags-asked": ("src/smwork.c:cb_smwork_note_launch()", "    int captured = !cb_capture_stream_free(s, ptsz);", "    int captured = 0;",
                                     "rule 13 (the c4a9a2b capture bug: flags of a capturing stream)"),
    "query-during-capture": ("src/smwork.c:may_delay()", "        int may = cb_capture_may_wait((CUstream)b->stream);", "        int may = 1;",
                             "rule 13 (no query a capture forbids)"),
    "capture-modes-ignored": ("src/capture.c:cb_capture_may_load()", "    return !cb_captures_active() || (cb_global_captures == 0 && cb_thread_local_captures == 0);",
                              "    return 1;", "rule 13 (global and thread-local captures forbid queries and loads)"),
    "module-loaded-during-capture": ("src/engine_kernel.c:cb_kernel_engine_ready()", "        ready = cb_capture_may_load();", "        ready = 1;",
                                     "rule 13 (no module load a capture forbids)"),
    "busy-uploads-deferred": ("src/copy.c:busy_upload()", "    if (!run->facts.sm_busy || !upload(rq)",
                              "    if (1 || !run->facts.sm_busy || !upload(rq)", "rule 12 (uploads beside compute)"),
    "destroyed-stream-kept": ("src/hooks.c:cb_destroy_stream_before()", "    cb_smwork_forget_stream(s);\n", "", "rule 12 (destroyed streams)"),
    "legacy-side-not-joined": ("src/ptds.c:cb_side_legacy_end()", "    return order_after(f->ctx, CU_STREAM_LEGACY, side);",
                               "    return (void)side, (void)f, CUDA_SUCCESS;", "rule 3/12 (legacy side stream)"),
    "legacy-side-not-fenced": ("src/ptds.c:cb_side_legacy_begin()", "        rc = order_after(f->ctx, s, CU_STREAM_LEGACY);", "        rc = CUDA_SUCCESS;",
                               "rule 3/12 (legacy side stream)"),
    "run-lock-dropped": ("src/store.c:cb_run_lock_key()", "        cb_run_lock(run);\n        if (CB_LIKELY(holds_key(run, key)))\n            return run;",
                         "        cb_tls_held++;\n        if (CB_LIKELY(holds_key(run, key)))\n            return run;", "run locks (a run's copies from two threads)"),
    "rows-columns-one-way": ("src/hazard.c:apart_in_columns()", "    return a_to_b >= wa && b_to_a >= wb;", "    return a_to_b >= wa && (b_to_a >= wb || 1);",
                             "rule 19 (tiles side by side in one pitch: a tile is apart only when neither reaches the other's columns)"),
    "cross-check-skipped-on-copy-path": ("src/copy.c:settle_stream()", "    if (CB_UNLIKELY(cb_runs_cross_pending(rq->sk)))\n        *rc = cb_flush_cross(rq->stream, rq->sk);",
                                         "    if (0)\n        *rc = cb_flush_cross(rq->stream, rq->sk);", "rule 3 (a copy follows other streams' runs)"),
    "class-cache-small": ("src/classify.c:#CB_CLASS_CACHE", "#define CB_CLASS_CACHE 512", "#define CB_CLASS_CACHE 8", "section 6 (a pointer query per allocation, not per copy)"),
    "class-cache-keeps-stale-overlap": ("src/classify.c:cache_put()", "    if ((i > 0 && c->e[i - 1].hi > r->lo) || (i < c->n && c->e[i].lo < r->hi)) {",
                                        "    if (0) {", "rule 1 (a range the driver redrew replaces the cached one)"),
    "allocations-not-announced": ("src/classify.c:cb_classes_announce()", "    if (!p || query(p, &a) || !known(&a))",
                                  "    if (1 || query(p, &a))", "rule 14 (memory known from its allocation)"),
    "freed-range-kept": ("src/classify.c:cb_classes_forget_range()", "        cb_allocs_remove(p, size && p + size > p ? p + size : p + 1);", "        (void)size;",
                         "rule 14 (a range forgotten before its memory is given back)"),
    "alloc-table-read-unchecked": ("src/allocs.c:cb_allocs_find()", "        if (LOAD(cb_allocs_seq) == seq)\n            return hit;", "        return hit;",
                                   "rule 14 (a reader racing a writer throws its answer away)"),
    "choice-ignores-costs": ("src/choose.c:cheapest()", "            (best == CB_ARM_STATIC || k->arm[a].ns_per_copy < k->arm[best].ns_per_copy))",
                             "            (best == CB_ARM_STATIC))", "section 5 (the measured choice takes the cheapest arm)"),
    "choice-samples-during-capture": ("src/choose.c:cb_choose()", "    int captures = cb_captures_active();",
        "    int captures = 0;", "rule 13 (no timing calls while a capture runs)"),
    "choice-never-probes": ("src/choose.c:decide()", "        if (k->segments >= c->next_probe) {", "        if (0) {",
                            "section 5 (a losing arm is tried again)"),
    "context-flush-skips-a-stream": ("src/flush.c:flush_matching()", "        if (!(run->active || cb_run_warm(run)) || !matches(run, which)) {",
                                     "        if (!(run->active || cb_run_warm(run)) || !matches(run, which) || !run->hh.next) {", "rule 6 (every run, every stream)"),
    "merged-event-not-answered": ("src/marker.c:answer_from_standin()", "    if (an->standin)\n        *e = an->standin->ev;", "    if (0)\n        *e = an->standin->ev;",
                                  "rule 15 (answered from the stand-in)"),
    "merged-event-kept-on-rerecord": ("src/marker.c:cb_marker_record()", "    cb_event_unlink(e); /* recorded again now",
        "    (void)e; /* recorded again now", "rule 15 (a new record ends the link)"),
    "merged-event-never-recorded-late": ("src/marker.c:observe_linked()", "        record_late(e, si, 0);", "        cb_event_unhold(e, si, 1);",
                                         "rule 15 (a call that keeps the event gets its own record)"),
    "graph-launch-leaves-merged-events": ("src/marker.c:cb_flush_graph_launch()", "    while (!cb_runs_locked_here() && atomic_load_explicit(&cb_events_linked",
                                          "    while (0 && atomic_load_explicit(&cb_events_linked", "rule 15 (a graph may wait for any event)"),
    "timing-events-merged": ("src/event.c:cb_event_claim()", "        *stands = ev->flags == CU_EVENT_DISABLE_TIMING;",
        "        *stands = 1;", "rule 15 (timing events keep their records)"),
    "copy-ignores-pending-waits": ("src/copy.c:copy_waited()", "    CUresult waited = cb_waits_issue_of(stream);", "    CUresult waited = CUDA_SUCCESS;",
                                   "rule 16 (a copy on the waiting stream)"),
    "first-copy-ignores-pending-waits": ("src/copy.c:cb_copy()", "    if (CB_UNLIKELY(cb_waits_pending()))\n        return copy_waited(",
                                         "    if (CB_UNLIKELY(cb_waits_pending()) && cb_runs_active())\n        return copy_waited(",
                                         "rule 16 (a burst's first copy on the waiting stream)"),
    "first-copy-size-of-one-direction": ("src/policy.c:cb_policy_load()", "        if (d != CB_D_H2H && cb_policy_sure[d] < cb_policy_first_max)", "        if (0)",
                                         "rule 8 (a first copy passes unexamined only at sizes every direction's policy defers)"),
    "first-copy-while-switched-off": ("src/copy.c:copy_first()", "    if (!cb_batching || cb_flush_paused())\n        return issue_unbatched(", "    if (!cb_batching)\n        return issue_unbatched(",
                                      "cubatch_set_enabled(0): every copy passes as switched off"),
    "named-stream-ignores-pending-waits": ("src/hooks.c:cb_named()", "    CUresult fe = cb_waits_issue(s);", "    CUresult fe = CUDA_SUCCESS;",
                                           "rule 16 (a call that names the waiting stream)"),
    "rerecord-ignores-pending-waits": ("src/marker.c:cb_marker_record()", "    waited = cb_first_error(waited, cb_waits_issue_event(e));", "    (void)0;",
                                       "rule 16 (a wait is for the record it named)"),
    "destroy-ignores-pending-waits": ("src/marker.c:cb_event_before_forget()", "    CUresult rc = cb_waits_issue_event(e); /* rule 16: they wait for its last record */",
                                      "    CUresult rc = CUDA_SUCCESS;", "rule 16 (a wait is for the record it named)"),
    "waits-met-unasked": ("src/marker.c:already_met()", "    int met = !cb_captures_active() && cb_stream_nonblocking(s) &&\n              cb_drv.cuEventQuery(si ? si->ev : e) == CUDA_SUCCESS;",
        "    int met = !cb_captures_active() && cb_stream_nonblocking(s);", "rule 16 (only a complete event's wait is dropped)"),
    # rule 17: what drivers newer than 13.0 added, and the net for what no header names
    "host-func-v2-not-hooked": ("src/hooks.def:@CB_HOOK_SINCE(13010, cuLaunchHostFunc_v2, 0,",
        "CB_HOOK_SINCE(13010, cuLaunchHostFunc_v2, 0, STREAM, (hStream),\n        (CUstream hStream, CUhostFn fn, void *userData, unsigned int syncMode),\n        (hStream, fn, userData, syncMode))\n",
        "", "rule 17 (a host function v2 is a host function)", "check_rules:newer_drivers"),
    "attr-copy-not-hooked": ("src/hooks.def:@CB_HOOK_SINCE(13020, cuMemcpyWithAttributesAsync, 0,",
        "CB_HOOK_SINCE(13020, cuMemcpyWithAttributesAsync, 0, STREAM, (hStream),\n        (CUdeviceptr dst, CUdeviceptr src, size_t size, CUmemcpyAttributes *attr, CUstream hStream),\n        (dst, src, size, attr, hStream))\n",
        "", "rule 17 (a copy with attributes follows its stream's run)", "check_rules:newer_drivers"),
    "recapture-not-a-capture": ("src/hooks.def:@CB_HOOK_SINCE(13030, cuStreamBeginRecaptureToGraph, 0,",
        "CB_HOOK_SINCE(13030, cuStreamBeginRecaptureToGraph, 0, CAPTURE_BEGIN, (hStream, mode),",
        "CB_HOOK_SINCE(13030, cuStreamBeginRecaptureToGraph, 0, STREAM, (hStream),", "rule 17 (a recapture is a capture)",
        "check_rules:newer_drivers"),
    "cig-capture-not-a-capture": ("src/hooks.def:@CB_HOOK_SINCE(13010, cuStreamBeginCaptureToCig, 0,",
        "CB_HOOK_SINCE(13010, cuStreamBeginCaptureToCig, 0, CAPTURE_BEGIN, (hStream, CU_STREAM_CAPTURE_MODE_RELAXED),",
        "CB_HOOK_SINCE(13010, cuStreamBeginCaptureToCig, 0, STREAM, (hStream),", "rule 17 (a CIG capture is a capture)",
        "check_rules:newer_drivers"),
    "newer-rows-resolved-on-older-driver": ("src/driver.c:cb_driver_load()", "cb_hook_since[i] <= cb_driver_version ?", "cb_hook_since[i] <= 99999 ?",
        "rule 17 (an older driver's process wraps nothing new)", "check_rules:newer_drivers"),
    "net-lets-unknown-names-through": ("src/resolve.c:hand_out_proc()", "        return cb_net_wrap(symbol, p);", "        return p;",
        "rule 17 (the net: a name no table knows, by cuGetProcAddress)", "check_rules:newer_drivers"),
    "net-dlsym-lets-unknown-through": ("src/resolve.c:hand_out()", "    return cb_net_wrap(name, p);", "    return p;",
        "rule 17 (the net: a name no table knows, by dlsym)", "check_rules:newer_drivers"),
    "net-new-abi-of-known-name": ("src/resolve.c:hand_out_proc()", "(version > cb_net_version_checked() &&", "(0 && version > cb_net_version_checked() &&",
        "rule 17 (the net: a newer ABI of a known name)", "check_rules:newer_drivers"),
    "net-trampoline-does-not-flush": ("src/net.c:cb_net_enter()", "    fe = cb_first_error(fe, cb_flush_all(CB_WHY_flush_unknown));", "    (void)0;",
        "rule 17 (the net submits every run first)", "check_rules:newer_drivers"),
    "unknown-flush-drops-its-error": ("src/stats.def:flush_unknown", "CB_FLUSH(flush_unknown,     CB_FD_KEEPS_ERROR |", "CB_FLUSH(flush_unknown,     CB_FD_CALL |",
        "rule 9 (the net's flush keeps its error for the stream's next call)", "check_rules:errors"),
    "merge-checks-the-source-only": ("src/run.c:continues()", "t->dst_next == rq->dst && t->src_next == rq->src &&",
        "t->src_next == rq->src &&", "rule 18 (both ranges continue)", "check_rules:merging"),
    "merge-checks-the-destination-only": ("src/run.c:continues()", "t->dst_next == rq->dst && t->src_next == rq->src &&",
        "t->dst_next == rq->dst &&", "rule 18 (both ranges continue)", "check_rules:merging"),
    "merge-across-allocations": ("src/run.c:continues()", "t->src_end == rq->scls.end && rq->dcls.end != 0", "rq->dcls.end != 0",
        "rule 18 (each side in one allocation)", "check_rules:merging"),
    "merge-across-markers": ("src/run.c:continues()", "t->stream == rq->stream && t->marks == nmarks;", "t->stream == rq->stream && (nmarks | 1);",
        "rule 18 (no marker between)", "check_rules:merging"),
    "merge-across-entry-points": ("src/run.c:continues()", "rq->scls.end != 0 && t->hook == rq->hook &&", "rq->scls.end != 0 &&",
        "rule 18 (one entry point)", "check_rules:merging"),
    "merged-copy-not-replayed": ("src/engine.c:submit_through()", "(!e->per_copy_streams || to - from > cnt)", "!e->per_copy_streams",
        "rule 18 (a refused merged copy is replayed as the program's copies)", "check_rules:merging"),
    "merged-replay-covers-one-entry": ("src/engine.c:covered()", "    *to = off + n < mine->n ? c->merged.first[off + n] : c->n;", "    *to = *from + n;",
        "rule 18 (a refused merged copy is replayed whole)", "check_rules:merging"),
    "kernel-takes-merged-singles": ("src/engine.c:merges_to_singles()", "    return c->merged.n != 0 && c->merged.n < cb_opt(CB_OPT_min_run)", "    return 0 && c->merged.n < cb_opt(CB_OPT_min_run)",
        "rule 18 (a run that merges into one copy goes out as that copy)", "check_rules:merging"),
    "merged-chunks-by-copies": ("src/run.h:cb_run_feed_copy()", "    if (kernel_chunks && cb_engine_merged_one(&run->q, fd->kind)) {",
        "    if (0) {", "rule 18 (a run merging into one copy is cut by bytes)", "check_rules:merging"),
    "merged-chunks-beside-compute": ("src/run.h:cb_run_feed_copy()", "    if (kernel_chunks && cb_engine_merged_one(&run->q, fd->kind)) {",
        "    if (cb_engine_merged_one(&run->q, fd->kind)) {", "rule 18 (copies the kernel may not take keep the batch chunks)", "check_rules"),
    "merged-chunks-never-grow": ("src/engine.c:cb_engine_merged_next()", ": bytes + bytes / 2;", ": bytes;",
        "rule 18 (a merged run's chunks grow while the program outpaces the engines)", "check_rules:merging"),
    "merged-chunks-grow-by-halves-only": ("src/engine.c:cb_engine_merged_next()", "leaps ? bytes * CB_MERGED_LEAP :", "leaps ? bytes + bytes / 2 :",
        "rule 18 (a merged run's chunks leap while the program is many times as fast as the engines)", "check_rules:merging"),
    "merged-chunks-leap-too-soon": ("src/engine.c:cb_engine_merged_next()", "int leaps = !host || bytes / (CB_MERGED_LEAP * CB_MERGED_ENGINE_BYTES_PER_NS) >= ns;",
        "int leaps = !host || bytes / CB_MERGED_ENGINE_BYTES_PER_NS >= ns;", "rule 18 (chunks leap only at many times the engines' rate)", "check_rules:merging"),
    "merged-chunks-uncapped": ("src/engine.c:cb_engine_merged_next()", "    return next < CB_MERGED_CHUNK_MAX ? next : CB_MERGED_CHUNK_MAX;",
        "    return next;", "rule 18 (a merged run's chunks stop growing at their most)", "check_units:chunks"),
    "merged-chunks-grow-however-slow": ("src/engine.c:cb_engine_merged_next()", "    if (host && bytes / CB_MERGED_ENGINE_BYTES_PER_NS < ns)\n        return CB_MERGED_CHUNK_STEADY;",
        "    if (host && bytes / CB_MERGED_ENGINE_BYTES_PER_NS < ns / 1000000)\n        return CB_MERGED_CHUNK_STEADY;", "rule 18 (a program slower than the engines gets steady chunks)", "check_rules:merging"),
    "merged-chunks-device-paced-as-host": ("src/engine.c:cb_engine_merged_next()", "    int leaps = !host || bytes",
        "    int leaps = bytes", "rule 18 (a run of device memory only leaps at any pace)", "check_units:chunks"),
    "merged-chunks-device-kept-steady": ("src/engine.c:cb_engine_merged_next()", "    if (host && bytes",
        "    if (bytes", "rule 18 (a run of device memory only never drops to steady chunks)", "check_units:chunks"),
    "merged-chunks-device-run-seen-as-host": ("src/run.h:cb_run_feed_copy()", "cb_now_ns() - run->looks.opened_ns, run->q.has_host);",
        "cb_now_ns() - run->looks.opened_ns, 1);", "rule 18 (a run of device memory only leaps at any pace)", "check_rules:merging"),
    "merged-chunk-forgotten": ("src/run.c:cb_run_chunk_sent()", "    run->feed.merged_at = run->feed.merged_next;", "    run->feed.merged_at = 0;",
        "rule 18 (each merged chunk follows from the one before)", "check_rules:merging"),
    "merge-ignores-its-switch": ("src/run.c:merge_copy()", "    if (!cb_opt(CB_OPT_merge_adjacent) || q->n2d) {", "    if (q->n2d) {",
        "rule 18 (CUBATCH_MERGE_ADJACENT=0)", "check_rules:merging"),
    "rows-hazards-ignored": ("src/hazard.c:side_meets_rows()", "i < s->n && idx[i].lo < end; i++) {",
        "i < 0 * s->n && idx[i].lo < end; i++) {", "rule 19 (a copy against the run's 2D copies)", "check_rules:rows"),
    "rows-window-from-the-copy-start": ("src/hazard.c:side_meets_rows()", "key_find(idx, s->n, base > span ? base - span : 0)",
        "key_find(idx, s->n, base + 0 * span)", "rule 19 (a 2D copy that starts before the copy and reaches it)", "check_units:hazards"),
    "rows-index-unsorted": ("src/hazard.c:key_insert()", "size_t a = n && k.lo < idx[n - 1].lo ? key_find(idx, n, k.lo) : n;",
        "size_t a = n;", "rule 19 (the 2D copies' index stays sorted)", "check_units:hazards"),
    "rows-hazards-by-bounds": ("src/hazard.c:cb_rows_overlap()", "    if (ha == 1)\n        return range_meets_rows(a, wa, b, wb, hb, pb);",
        "    return 1;", "rule 19 (2D footprints row-exact, not by their bounds)", "check_rules:rows"),
    "rows-bounds-skip-reads": ("src/hazard.c:cb_hazard_shaped()", "    return (meet(c->src, src_end, shapes->dst_lo, shapes->dst_hi) &&",
        "    return (0 && meet(c->src, src_end, shapes->dst_lo, shapes->dst_hi) &&",
        "rule 19 (a copy that reads a 2D copy's destination)", "check_rules:rows"),
    "rows-equal-pitch-off-by-one": ("src/hazard.c:cb_rows_overlap()", "return k <= (int64_t)(hb - 1) && d + k * p < (int64_t)wa;",
        "return k < (int64_t)(hb - 1) && d + k * p < (int64_t)wa;", "rule 19 (the last row of a shape)", "check_units:hazards"),
    "rows-not-in-the-sets": ("src/hazard.c:shape_meets_sets()", "        if (cb_hazard(writes, reads, c->dst + r * c->dpitch, c->src + r * c->spitch, c->width))",
        "        if (r == 0 && cb_hazard(writes, reads, c->dst, c->src, c->width))", "rule 19 (every row against the 1D copies)",
        "check_units:hazards"),
    "rows-width-over-pitch-deferred": ("src/copy.c:rows_of()", "    if (!p || p->WidthInBytes > p->srcPitch || p->WidthInBytes > p->dstPitch ||",
        "    if (!p ||", "rule 19 (rows that overlap are the driver's to answer)", "check_rules:rows"),
    "rows-without-the-kernel": ("src/copy.c:settle_run()", "    LEARN(f, rows_no_kernel, rq->rows.height && !rq->kernel_ok);",
        "    LEARN(f, rows_no_kernel, (rq->rows.height & 0) && !rq->kernel_ok);", "rule 19 (only the copy kernel takes 2D copies)",
        "check_rules:rows"),
    "rows-to-the-plain-kernel": ("src/engine_kernel.c:cb_kernel_engine_submit()", "    CUfunction fn = c->n2d ? k.fn_rows[t] : k.fn[t];",
        "    CUfunction fn = k.fn[t];", "rule 19 (2D descriptors only for the _rows twins)", "check_rules:rows"),
    "rows-replayed-as-1d": ("src/engine_loop.c:cb_loop_engine_submit()", "        CUresult rc = c->rows && c->rows[i].height ? issue_rows(c, i, s)",
        "        CUresult rc = 0 ? issue_rows(c, i, s)", "rule 19 (a refused 2D copy replayed through its own entry point)",
        "check_rules:rows"),
    "rows-ignore-their-switch": ("src/copy.c:copy2d_one()", "    else if (!cb_opt(CB_OPT_defer_2d) || !rows_of(p, &rq))",
        "    else if (!rows_of(p, &rq))", "rule 19 (CUBATCH_DEFER_2D=0)", "check_rules:rows"),
    "rows-as-long-as-the-copy": ("src/run.c:cb_run_append()", "            run->q.sizes[i] = rq->width; /* a 2D copy's: its row length */",
        "            (void)0;", "rule 19 (a queued 2D copy's size is its row length)", "check_rules:rows"),
    "rows-even-grid": ("src/copy_kernel.h:cb_kgrid()", "    if (rows && grid > 1 && grid % 2 == 0)", "    if (rows && 0)",
        "rule 19 (a launch of 2D copies: every block its share)", "check_kernel_cpu"),
    "rows-run-whole-through-the-loop": ("src/engine.c:submit_on()", "    int apart = e->takes == loop_takes && c->n2d && c->n2d < c->n;",
        "    int apart = 0;", "rule 19 (a run the kernel does not take: its 1D stretches to their engine)", "check_rules:rows"),
    "rows-merge": ("src/run.c:merge_copy()", "    if (!cb_opt(CB_OPT_merge_adjacent) || q->n2d) {", "    if (!cb_opt(CB_OPT_merge_adjacent)) {",
        "rule 19 (a run holding 2D copies merges nothing)", "check_rules:rows"),
}

# The quick subset .ci/run runs after make check (about a minute each on two cores,
# the build of the copy included): the rules whose breakage would hurt most.
CI_SUBSET = ["capture-ignored", "pageable-deferred", "first-copy-deferred",
             "event-observer-does-not-flush", "no-exit-flush", "net-trampoline-does-not-flush"]

TESTS = ("check_rules", "check_units", "check_hooks_complete", "check_flush_table", "check_kernel_cpu", "fuzz")


# ---- anchors -----------------------------------------------------------------------

def _skip_comment_or_literal(text, i):
    """If text[i] starts a comment or a string/char literal, the index after it; else None."""
    c = text[i]
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return len(text) if end < 0 else end + 2
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if c in "\"'":
        j = i + 1
        while j < len(text) and text[j] != c:
            j += 2 if text[j] == "\\" else 1
        return j + 1
    return None


def _match(text, i, open_c, close_c):
    """Index just after the bracket closing the one at text[i] (comments and literals skipped)."""
    depth = 0
    while i < len(text):
        skip = _skip_comment_or_literal(text, i)
        if skip is not None:
            i = skip
            continue
        if text[i] == open_c:
            depth += 1
        elif text[i] == close_c:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def function_spans(text, name):
    """(start, end) of every definition of C function `name` in text: signature and body."""
    spans = []
    for m in re.finditer(r"(?m)^[A-Za-z_][^;{}#\n]*?\b" + re.escape(name) + r"\s*\(", text):
        close = _match(text, m.end() - 1, "(", ")")
        if close < 0:
            continue
        rest = re.match(r"[\s\w()]*?\{", text[close:])  # attributes, then the body
        if not rest or ";" in text[close:close + rest.end()]:
            continue  # a declaration or a call
        end = _match(text, close + rest.end() - 1, "{", "}")
        if end > 0:
            spans.append((m.start(), end))
    return spans


def macro_spans(text, name):
    spans = []
    for m in re.finditer(r"(?m)^[ \t]*#[ \t]*define[ \t]+" + re.escape(name) + r"\b", text):
        end = m.end()
        while True:
            nl = text.find("\n", end)
            if nl < 0:
                end = len(text)
                break
            if text[nl - 1] != "\\":
                end = nl + 1
                break
            end = nl + 1
        spans.append((m.start(), end))
    return spans


def row_spans(text, name):
    """A table row NAME of a .def file: CB_WHATEVER(NAME, ...) through its newline."""
    spans = []
    for m in re.finditer(r"(?m)^[A-Z_][A-Z0-9_]*\(\s*" + re.escape(name) + r"\s*,", text):
        end = _match(text, text.index("(", m.start()), "(", ")")
        if end > 0:
            nl = text.find("\n", end)
            spans.append((m.start(), len(text) if nl < 0 else nl + 1))
    return spans


def anchor_spans(text, anchor):
    if anchor.endswith("()"):
        return function_spans(text, anchor[:-2])
    if anchor.startswith("#"):
        return macro_spans(text, anchor[1:])
    if anchor.startswith("@"):
        i = text.find(anchor[1:])
        return [] if i < 0 else [(text.rfind("\n", 0, i) + 1, len(text))]
    return row_spans(text, anchor)


def locate(top, where):
    """(path relative to top, span) of the mutant's anchor, or (None, why)."""
    top = pathlib.Path(top)
    path, sep, anchor = where.partition(":")
    if not sep or not anchor:
        return None, f"no anchor in {where!r} (FILE:fn(), FILE:#MACRO, FILE:ROW or FILE:@TEXT)"
    first = top / path
    if first.exists():
        spans = anchor_spans(first.read_text(), anchor)
        if len(spans) == 1:
            return (path, spans[0]), None
        if len(spans) > 1:
            return None, f"{anchor} is found {len(spans)} times in {path}"
    if anchor.endswith("()") or anchor.startswith("#"):  # it may have moved to another file
        found = []
        for f in sorted((top / "src").glob("*.[ch]")):
            for span in anchor_spans(f.read_text(), anchor):
                found.append((str(f.relative_to(top)), span))
        if len(found) == 1:
            return found[0], None
        if len(found) > 1:
            return None, f"{anchor} is defined {len(found)} times in src/ ({', '.join(p for p, _ in found)})"
    return None, f"{anchor} is not found in {path}" + (" nor in src/*.[ch]" if anchor[-1] == ")" or anchor[0] == "#" else "")


def apply(top, name):
    """(path, original file text, mutated file text) or (None, why, None)."""
    where, old, new = MUTANTS[name][:3]
    loc, why = locate(top, where)
    if not loc:
        return None, why, None
    path, (a, b) = loc
    text = (pathlib.Path(top) / path).read_text()
    n = text[a:b].count(old)
    if n != 1:
        return None, f"its text is found {n} times in {where.partition(':')[2]} ({path})", None
    return path, text, text[:a] + text[a:b].replace(old, new) + text[b:]


def check(top):
    stale = []
    for name in MUTANTS:
        entry = MUTANTS[name]
        path, why, _ = apply(top, name)
        if path is None:
            stale.append(f"{name}: stale: {why}; update the mutant in tools/mutants.py")
        if len(entry) > 4 and entry[4].partition(":")[0] not in TESTS:
            stale.append(f"{name}: names the test {entry[4]!r}, none of {', '.join(TESTS)}")
    for name in CI_SUBSET:
        if name not in MUTANTS:
            stale.append(f"CI_SUBSET names {name}, which is no mutant")
    for line in stale:
        print(line)
    print(f"{len(MUTANTS) - len([s for s in stale if ': stale: ' in s])} of {len(MUTANTS)} mutants apply")
    return 1 if stale else 0


# ---- running them in a copy ----------------------------------------------------------

def sh(cmd, cwd=None, env=None):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=cwd, env=env)


def tree_files(top):
    r = subprocess.run(["git", "-C", str(top), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit("mutants.py: the tree is not a git checkout; run the mutants from one")
    return [f for f in r.stdout.split("\0") if f and (pathlib.Path(top) / f).is_file()]


def configure_args(top):
    cs = pathlib.Path(top) / "config.status"
    if cs.exists():
        r = sh(f"'{cs}' --config")
        if r.returncode == 0:
            return r.stdout.strip()
    return "--enable-werror"


def prepare(top, work, jobs):
    """Copy the tree's sources to work/src (only what changed) and build them in work/build."""
    src, build = work / "src", work / "build"
    fresh = not (build / "config.status").exists()
    for f in tree_files(top):
        a, b = pathlib.Path(top) / f, src / f
        if not b.exists() or not filecmp.cmp(a, b, shallow=False):
            b.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(a, b)
    steps = []
    if fresh:
        build.mkdir(parents=True, exist_ok=True)
        steps = [("autoreconf -fi", src), (f"'{src}/configure' -q {configure_args(top)}", build)]
    steps.append((f"make -s -j{jobs} check TESTS= >/dev/null", build))
    for cmd, cwd in steps:
        r = sh(cmd + " 2>&1", cwd=cwd)
        if r.returncode:
            sys.exit(f"mutants.py: '{cmd}' failed in {cwd}:\n{r.stdout[-3000:]}")
    return src, build


def run_tests(src, build, which):
    """Names of the tests (check cases) that failed, of those `which` names (None: all)."""
    env = dict(os.environ, top_builddir=".", top_srcdir=str(src))
    mk = (build / "Makefile").read_text()
    env["CC"] = (re.search(r"(?m)^CC = (.*)$", mk) or [None, "cc"])[1]
    env["CUDA_CPPFLAGS"] = (re.search(r"(?m)^CUDA_CPPFLAGS = (.*)$", mk) or [None, ""])[1]
    test, _, case = (which or "").partition(":")
    fails = []
    for t in ([test] if which else TESTS):
        e = dict(env, CK_RUN_CASE=case) if case else env
        if t in ("check_rules", "check_units"):
            r = sh(f"./tests/{t} 2>&1", cwd=build, env=e)
            cases = sorted({l.split(":")[3] for l in r.stdout.splitlines() if re.search(r":[FE]:", l) and l.count(":") > 3})
            if r.returncode:
                fails += [f"{t}:{c}" for c in cases] or [t]
        elif t in ("check_hooks_complete", "check_flush_table"):
            if sh(f"sh '{src}/tests/table/{t}.sh' >/dev/null 2>&1", cwd=build, env=e).returncode:
                fails.append(t)
        elif t == "check_kernel_cpu":
            if sh(f"sh '{src}/tests/kernel/check_kernel_cpu.sh' >/dev/null 2>&1", cwd=build,
                  env=dict(e, srcdir=str(src))).returncode:
                fails.append(t)
        elif t == "fuzz":
            r = sh(f"sh '{src}/tests/fuzz/run-fuzz.sh' --seeds 1-300 --seconds 20 --save '{build}/fuzz-regressions' 2>&1",
                   cwd=build, env=e)
            if "FAILED" in r.stdout or " 0 divergence" not in r.stdout:
                fails.append("fuzz")
    return fails


def run(names, full, workdir, jobs):
    top = pathlib.Path(".").resolve()
    work = pathlib.Path(workdir).resolve() if workdir else pathlib.Path(tempfile.mkdtemp(prefix="cubatch-mutants."))
    t0 = time.time()
    survived = []
    try:
        src, build = prepare(top, work, jobs)
        print(f"copy built in {build} ({time.time() - t0:.0f} s)", flush=True)
        for name in names:
            entry = MUTANTS[name]
            rule, which = entry[3], (entry[4] if len(entry) > 4 and not full else None)
            t1 = time.time()
            path, text, mutated = apply(src, name)
            if path is None:
                print(f"{name}: stale: {text}"); survived.append(name); continue
            p = src / path
            try:
                p.write_text(mutated)
                b = sh(f"make -s -j{jobs} check TESTS= 2>&1", cwd=build)
                if b.returncode:
                    print(f"{name}: does not build\n{b.stdout[-2000:]}"); survived.append(name); continue
                fails = run_tests(src, build, which)
            finally:
                p.write_text(text)
            scope = f" [{which} only]" if which else ""
            print(f"{name} ({rule}){scope}: {'caught by ' + ', '.join(fails) if fails else 'SURVIVED'} "
                  f"({time.time() - t1:.0f} s)", flush=True)
            if not fails:
                survived.append(name)
    finally:
        if not workdir:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{len(names) - len(survived)} of {len(names)} mutants caught ({time.time() - t0:.0f} s)"
          + (f"; survived or stale: {', '.join(survived)}" if survived else ""))
    return 1 if survived else 0


def main(argv):
    if argv[:1] == ["--check"]:
        return check(argv[1] if len(argv) > 1 else ".")
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        print("\nmutants (name: rule [test]; * the CI subset):")
        for name, entry in MUTANTS.items():
            print(f"  {'*' if name in CI_SUBSET else ' '} {name}: {entry[3]}" + (f" [{entry[4]}]" if len(entry) > 4 else ""))
        return 0
    full, workdir, jobs, names = False, None, os.cpu_count() or 2, []
    it = iter(argv)
    for a in it:
        if a == "--full":
            full = True
        elif a == "--ci":
            names += CI_SUBSET
        elif a == "--workdir":
            workdir = next(it, None)
        elif a == "-j" or re.fullmatch(r"-j\d+", a):
            jobs = int(a[2:] or next(it, "2"))
        elif a.startswith("-"):
            print(f"unknown option {a} (--help)"); return 2
        else:
            names.append(a)
    unknown = [a for a in names if a not in MUTANTS]
    if unknown:
        print(f"unknown mutant(s): {', '.join(unknown)} (--help lists them)")
        return 2
    return run(names or list(MUTANTS), full, workdir, jobs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
