#!/usr/bin/env python3
"""Break cubatch on purpose, one rule at a time, and check the test suite notices.

Each mutant is one textual change to src/; the library is rebuilt, the rule tests
(tests/check_rules, tests/check_units) run, and the mutant must make at least one
of them fail.  The source is restored afterwards, whatever happens.
Usage (from a configured build tree = source tree): tools/mutants.py [NAME...]  (no name: all; --help: the list)
tools/mutants.py --check [SRCDIR]: only that every mutant's text is found exactly once in
SRCDIR (default .), nothing built; make check runs it (tests/package/check_mutants.sh),
so a change that moves a mutant's text fails until the mutant follows it."""
import subprocess, sys, pathlib

MUTANTS = {
    # name: (file, original text, broken text, rule)
    "no-hazard-check": ("src/run.h", "    return cb_hazard(&run->writes, &run->reads, rq->dst, rq->src, rq->bytes);",
                        "    (void)run; (void)rq; return 0;", "rule 5"),
    "stream-calls-do-not-flush": ("src/hooks.c", "#define CB_FLUSH_ARG(aarg, ptsz) cb_named(CB_EXPAND aarg, ptsz)",
        "#define CB_FLUSH_ARG(aarg, ptsz) ((void)(CB_EXPAND aarg), CUDA_SUCCESS)", "rule 6"),
    "context-calls-do-not-flush": ("src/hooks.c", "    CB_WRAPPER(name, params, args, cb_named_all(), (void)0)",
        "    CB_WRAPPER(name, params, args, CUDA_SUCCESS, (void)0)", "rule 6"),
    "legacy-does-not-flush": ("src/flush.c", "CUresult cb_flush_legacy(void) { return flush_unless_idle(CB_BLOCKING_RUNS, CB_WHY_flush_legacy); }",
                              "CUresult cb_flush_legacy(void) { return (void)flush_unless_idle, CUDA_SUCCESS; }", "rule 3"),
    "capture-ignored": ("src/copy.c", "        if (run->facts.capturing) {", "        if (0) {", "rule 2"),
    "ptds-side-stream-skipped": ("src/flush.c", "        if (!run->active || !matches(run, which)) {",
                                 "        if (!run->active || !matches(run, which) || (run->facts.ptds && !cb_run_is_owner(run))) {", "rule 4"),
    "ptds-no-legacy-join": ("src/ptds.c", "    CUresult rc = join_in(f, CU_STREAM_LEGACY);", "    CUresult rc = CUDA_SUCCESS;", "rule 4"),
    "no-timer": ("src/timer.c", "        uint64_t next = cb_look_runs(cb_now_ns());", "        uint64_t next = 0;", "rule 7"),
    "no-chunking": ("src/run.c", "    if (run->q.n >= fd->chunk_at)\n        fd->chunk_due = 1;",
        "    if (0)\n        fd->chunk_due = 1;", "rule 7"),
    "chunk-before-its-records": ("src/copy.c", "    if (cb_run_feed_copy(run) && run->q.nmarks == 0) {",
        "    if (cb_run_feed_copy(run)) {", "rule 7 (a full chunk waits for the stream's next copy, its records ride)"),
    "min-run-ignored": ("src/engine.c", "    return (!f->legacy || to_copy_engines(c, f)) && c->n >= cb_opt(CB_OPT_min_run);",
                        "    return (!f->legacy || to_copy_engines(c, f)) && c->n >= 1;", "rule 8"),
    "no-replay": ("src/engine.c", "            rc = replay(e, c, off, cnt, side, rc);", "            (void)replay;", "rule 9"),
    "slow-flush-drops-its-error": ("src/stats.def", "CB_FLUSH(flush_slow,        CB_FD_KEEPS_ERROR,", "CB_FLUSH(flush_slow,        CB_FD_CALL,",
                                   "rule 9 (a flush nobody waits for keeps its error)"),
    "fork-flush-drops-its-error": ("src/stats.def", "CB_FLUSH(flush_exit,        CB_FD_KEEPS_ERROR | CB_FD_MARK,",
                                   "CB_FLUSH(flush_exit,        CB_FD_CALL | CB_FD_MARK,", "rule 9 (a flush nobody waits for keeps its error)"),
    "kept-error-skips-the-next-copy": ("src/copy.c", "    if (CB_UNLIKELY(run->pending != CUDA_SUCCESS) && *rc == CUDA_SUCCESS) {", "    if (0) {",
                                       "rule 9 (a kept error at the stream's next call)"),
    "later-error-wins": ("src/internal.h", "return kept != CUDA_SUCCESS ? kept : rc; }", "return rc != CUDA_SUCCESS ? rc : kept; }",
                         "rule 9 (the first error is the one reported)"),
    "no-exit-flush": ("src/life.c", "    cb_waits_issue_all(); /* rule 16: nothing the program asked for is left out */\n    cb_flush_exit();",
        "    cb_waits_issue_all(); /* rule 16: nothing the program asked for is left out */", "rule 10"),
    "no-fork-flush": ("src/flush.c", "    flush_matching(CB_ALL_RUNS, CB_WHY_flush_exit); /* the parent loses nothing */", "    /* mutant */", "rule 10"),
    "pageable-deferred": ("src/copy.c", "    if (rq->dcls.kind == CB_MEM_UNKNOWN || rq->scls.kind == CB_MEM_UNKNOWN)\n        return CB_ST_pass_pageable;",
                          "    if (0)\n        return CB_ST_pass_pageable;", "rule 1"),
    "version-ignored": ("src/engine_batch.c", "    if (v < 13000) {", "    if (0) {", "section 2"),
    "no-pointer-swap": ("src/resolve.c", "    return e ? e->wrapper : p;", "    return (void)e, p;", "section 1"),
    "ptds-pass-through-unfenced": ("src/flush.c", "    if (run && run->q.n > 0 && run->facts.ptds && run->facts.fence.ev_start) {",
                                   "    if (0) {", "rule 4"),
    "primary-release-forgets-live-context": ("src/context.c", "    if ((f->destroys && rc == CUDA_SUCCESS) || context_gone(f)) {",
                                             "    if ((f->destroys && rc == CUDA_SUCCESS) || context_gone(f) || 1) {", "rule 6 (forget only what goes)"),
    "row-deleted": ("src/hooks.def", "CB_HOOK(cuLaunchHostFunc, 0, STREAM, (hStream),\n        (CUstream hStream, CUhostFn fn, void *userData),\n        (hStream, fn, userData))\n",
                    "", "rule 6 (completeness)"),
    "ctx-record-event-not-hooked": ("src/hooks.def", "CB_HOOK(cuCtxRecordEvent, 0, CTX_EVENT, (hEvent),\n        (CUcontext hCtx, CUevent hEvent),\n        (hCtx, hEvent))\n",
                                    "", "rule 6 (completeness)"),
    "stream-row-made-context": ("src/hooks.def", "CB_HOOK(cuStreamQuery, 0, STREAM, (hStream),", "CB_HOOK(cuStreamQuery, 0, CONTEXT, (),", "rule 6 (exact scope)"),
    "context-row-made-stream": ("src/hooks.def", "CB_HOOK(cuMemsetD8_v2, 0, CONTEXT, (),", "CB_HOOK(cuMemsetD8_v2, 0, STREAM, (NULL),", "rule 6 (exact scope)"),
    "no-pipelining": ("src/engine.c", "    size_t c = has_h2d ? 32 : 64;", "    size_t c = max; (void)has_h2d;", "rule 7 (chunks)"),
    "timer-never-armed": ("src/copy.c", "    if (opened)\n        cb_timer_arm(run->looks.look_ns);", "    if (opened && 0)\n        cb_timer_arm(run->looks.look_ns);", "rule 7"),
    "age-bound-ignored": ("src/look.c", "} else if (!joined || now - l->opened_ns >= max_wait) {", "} else if (!joined) {", "rule 7"),
    "clock-read-per-copy": ("src/copy.c", "    if (cb_run_append(run, rq))\n        goto pass;", "    if (cb_now_ns() == 0 || cb_run_append(run, rq))\n        goto pass;", "rule 7 (no clock per copy)"),
    "slow-streams-deferred": ("src/look.c", "                if (joined && span / joined > cb_opt(CB_OPT_slow_ns)) {", "                if (0) {", "pace"),
    "first-copy-deferred": ("src/copy.c", "    if (!run->pace.warm && run->q.n == 0) {", "    if (0) {", "rule 8 (first of a burst)"),
    "blocking-overtakes-legacy-run": ("src/flush.c", "    if (cb_runs_legacy_pending() && cb_stream_blocking(s, sk))\n        return flush_matching(CB_LEGACY_RUNS, CB_WHY_flush_legacy);",
                                      "    (void)s;", "rule 3 (mirror: legacy runs before blocking work)"),
    "capture-begin-keeps-legacy-runs": ("src/flush.c", "    if (!cb_runs_locked_here() && atomic_load(&cb_legacy_nonempty) > 0)\n        rc = cb_first_error(",
                                        "    if (0)\n        rc = cb_first_error(", "rule 2/3 (capture)"),
    "legacy-deferred-during-capture": ("src/copy.c", "    return cb_kernel_usable && !cb_captures_active() && cb_drv.cuCtxGetCurrent &&",
                                       "    return cb_kernel_usable && cb_drv.cuCtxGetCurrent &&", "rule 2/3 (capture)"),
    "kernel-takes-unchecked-memory": ("src/copy.c", "    return cb_kernel_usable && ctx && rq->dcls.kctx == ctx && rq->scls.kctx == ctx &&",
                                      "    return cb_kernel_usable && ctx &&", "kernel eligibility"),
    "ptds-joins-in-the-new-context": ("src/run.c", "        if (cb_fence_owner_join(f) != CUDA_SUCCESS)\n            return -1;\n        if (!cb_drv.cuCtxGetCurrent || cb_drv.cuCtxGetCurrent(&f->ctx) != CUDA_SUCCESS || !f->ctx)\n            return -1;",
                                      "        if (!cb_drv.cuCtxGetCurrent || cb_drv.cuCtxGetCurrent(&f->ctx) != CUDA_SUCCESS || !f->ctx)\n            return -1;\n        if (cb_fence_owner_join(f) != CUDA_SUCCESS)\n            return -1;", "rule 4 (two devices)"),
    "one-kernel-module-for-all-contexts": ("src/engine_kernel.c", "    HASH_FIND_PTR(cb_kctxs, &f->ctx, k);\n    if (k)\n        return k->mod ? k : NULL;",
                                           "    k = cb_kctxs;\n    if (k)\n        return k->mod ? k : NULL;", "kernel module per context"),
    "kernel-module-outlives-its-context": ("src/context.c", "        cb_forget_context_kernel(f->ctx);\n", "", "kernel module per context"),
    "marker-before-copies": ("src/engine.c", "    CUresult rc = submit_on(c, f, NULL);\n    CUevent none = NULL; /* no stand-in from a context that could not be made current */\n    CUresult mk = entered == CUDA_SUCCESS ? submit_markers(c, f->ctx, NULL, made) /* rule 11: after every copy */\n                                          : cb_loop_engine_markers(c, NULL, &none);\n",
        "    CUevent none = NULL;\n    CUresult mk = entered == CUDA_SUCCESS ? submit_markers(c, f->ctx, NULL, made)\n                                          : cb_loop_engine_markers(c, NULL, &none);\n    CUresult rc = submit_on(c, f, NULL);\n", "rule 11 (a marker only moves later)"),
    "side-marker-before-copies": ("src/engine.c", "    CUresult sub = submit_on(c, f, side);\n    CUresult mk = submit_markers(c, f->ctx, side, made); /* rule 11: after every copy, before the join */",
        "    CUresult mk = submit_markers(c, f->ctx, side, made);\n    CUresult sub = submit_on(c, f, side);", "rule 11 (per-thread run on the side stream)"),
    "event-observer-does-not-flush": ("src/hooks.c", "    CB_WRAPPER(name, params, args, cb_event_observe(CB_EXPAND aarg), (void)0)",
                                      "    CB_WRAPPER(name, params, args, CUDA_SUCCESS, (void)0)", "rule 11 (observers)"),
    "elapsed-start-ignored": ("src/marker.c", "        rc = cb_flush_holder(a);\n        if (b)\n            rc = cb_first_error(rc, cb_flush_holder(b));",
        "        rc = cb_flush_holder(b ? b : a);", "rule 11 (either event of an elapsed time)"),
    "wait-ignores-the-event": ("src/marker.c", "    rc = cb_first_error(rc, cb_event_flush_holder(*e));",
        "    (void)0;", "rule 11 (a wait on any stream)"),
    "destroy-does-not-flush": ("src/hooks.c", "    CB_WRAPPER(name, params, args, cb_event_before_forget(CB_EXPAND aarg), cb_event_forget(CB_EXPAND aarg, rc))",
        "    CB_WRAPPER(name, params, args, CUDA_SUCCESS, cb_event_forget(CB_EXPAND aarg, rc))", "rule 11 (destroy)"),
    "new-record-keeps-older": ("src/event.c", "? -1 : ev->run && ev->run != run ? 1 : 0;",
        "? -1 : 0;", "rule 11 (a new record of the same event)"),
    "interprocess-event-deferred": ("src/event.c", "    int rc = !ev || (ev->flags & CU_EVENT_INTERPROCESS) || ev->ctx != ctx",
        "    int rc = !ev || ev->ctx != ctx", "rule 11 (interprocess events pass)"),
    "external-record-deferred": ("src/marker.c", "    int safe = flags == 0 && !cb_flush_closed() && !cb_flush_paused();",
        "    int safe = !cb_flush_closed() && !cb_flush_paused();", "rule 11 (external records pass)"),
    "graph-launch-ignores-markers": ("src/marker.c", "            if (run->q.nmarks > 0)\n                rc = cb_first_error(rc, cb_flush_run(run, CB_WHY_flush_event));",
                                     "            if (0)\n                rc = cb_first_error(rc, cb_flush_run(run, CB_WHY_flush_event));", "rule 11 (graph launch)"),
    "launch-config-events-ignored": ("src/marker.c", "    if (cfg && cfg->attrs && !cb_runs_locked_here() &&",
        "    if (0 && cfg && cfg->attrs && !cb_runs_locked_here() &&", "rule 11 (launch attributes)"),
    "wait-ends-the-burst": ("src/stats.def", "CB_FLUSH(flush_wait,        CB_FD_CALL | CB_FD_JOINS_LEGACY | CB_FD_KEEPS_BURST | CB_FD_MARK,",
                            "CB_FLUSH(flush_wait,        CB_FD_CALL | CB_FD_JOINS_LEGACY | CB_FD_MARK,", "rule 11 (a wait ends a run, not the burst)"),
    "pass-through-ignores-hazard": ("src/flush.c", "    if (run && run->q.n > 0 && cb_run_hazard(run, rq))\n        fe = cb_first_error(fe, cb_flush_run(run, CB_WHY_flush_hazard));",
                                    "    if (0)\n        fe = cb_first_error(fe, cb_flush_run(run, CB_WHY_flush_hazard));", "rule 5"),
    "launches-ignored": ("src/smwork.c", "    if (!cb_tracking || !may_fill(f, blocks, threads, smem))\n        return;",
                         "    if (!cb_tracking || !may_fill(f, blocks, threads, smem) || 1)\n        return;", "rule 12"),
    "busy-stream-taken-for-idle": ("src/smwork.c", "        if (q == CUDA_ERROR_NOT_READY)\n            busy = 1, cb_busy[i].busy_ns = now;",
                                   "        if (q == CUDA_ERROR_NOT_READY && 0)\n            busy = 1, cb_busy[i].busy_ns = now;", "rule 12"),
    "finished-compute-still-busy": ("src/smwork.c", "            forget(i); /* idle", "            busy = 1; /* idle", "rule 12"),
    "capturing-stream-flags-asked": ("src/smwork.c", "    int captured = !cb_capture_stream_free(s, ptsz);", "    int captured = 0;",
                                     "rule 13 (the c4a9a2b capture bug: flags of a capturing stream)"),
    "query-during-capture": ("src/smwork.c", "        int may = cb_capture_may_wait((CUstream)b->stream);", "        int may = 1;",
                             "rule 13 (no query a capture forbids)"),
    "capture-modes-ignored": ("src/capture.c", "    return !cb_captures_active() || (cb_global_captures == 0 && cb_thread_local_captures == 0);",
                              "    return 1;", "rule 13 (global and thread-local captures forbid queries and loads)"),
    "module-loaded-during-capture": ("src/engine_kernel.c", "        ready = cb_capture_may_load();", "        ready = 1;",
                                     "rule 13 (no module load a capture forbids)"),
    "busy-uploads-deferred": ("src/copy.c", "    if (!run->facts.sm_busy || rq->scls.kind != CB_MEM_HOST",
                              "    if (1 || !run->facts.sm_busy || rq->scls.kind != CB_MEM_HOST", "rule 12 (uploads beside compute)"),
    "destroyed-stream-kept": ("src/hooks.c", "    cb_smwork_forget_stream(s);\n", "", "rule 12 (destroyed streams)"),
    "legacy-side-not-joined": ("src/ptds.c", "    return order_after(f->ctx, CU_STREAM_LEGACY, side);",
                               "    return (void)side, (void)f, CUDA_SUCCESS;", "rule 3/12 (legacy side stream)"),
    "legacy-side-not-fenced": ("src/ptds.c", "        rc = order_after(f->ctx, s, CU_STREAM_LEGACY);", "        rc = CUDA_SUCCESS;",
                               "rule 3/12 (legacy side stream)"),
    "run-lock-dropped": ("src/run.c", "        cb_run_lock(run);\n        if (CB_LIKELY(holds_key(run, key)))\n            return run;",
                         "        cb_tls_held++;\n        if (CB_LIKELY(holds_key(run, key)))\n            return run;", "run locks (a run's copies from two threads)"),
    "cross-check-skipped-on-copy-path": ("src/copy.c", "    if (CB_UNLIKELY(cb_runs_cross_pending(rq->sk)))\n        *rc = cb_flush_cross(rq->stream, rq->sk);",
                                         "    if (0)\n        *rc = cb_flush_cross(rq->stream, rq->sk);", "rule 3 (a copy follows other streams' runs)"),
    "class-cache-small": ("src/classify.c", "#define CB_CLASS_CACHE 512", "#define CB_CLASS_CACHE 8", "section 6 (a pointer query per allocation, not per copy)"),
    "class-cache-keeps-stale-overlap": ("src/classify.c", "    if ((i > 0 && c->e[i - 1].hi > r->lo) || (i < c->n && c->e[i].lo < r->hi)) {",
                                        "    if (0) {", "rule 1 (a range the driver redrew replaces the cached one)"),
    "allocations-not-announced": ("src/classify.c", "    if (!p || query(p, &a) || !known(&a))",
                                  "    if (1 || query(p, &a))", "rule 14 (memory known from its allocation)"),
    "freed-range-kept": ("src/classify.c", "        cb_allocs_remove(p, size && p + size > p ? p + size : p + 1);", "        (void)size;",
                         "rule 14 (a range forgotten before its memory is given back)"),
    "alloc-table-read-unchecked": ("src/allocs.c", "        if (LOAD(cb_allocs_seq) == seq)\n            return hit;", "        return hit;",
                                   "rule 14 (a reader racing a writer throws its answer away)"),
    "choice-ignores-costs": ("src/choose.c", "            (best == CB_ARM_STATIC || k->arm[a].ns_per_copy < k->arm[best].ns_per_copy))",
                             "            (best == CB_ARM_STATIC))", "section 5 (the measured choice takes the cheapest arm)"),
    "choice-samples-during-capture": ("src/choose.c", "    int captures = cb_captures_active();",
        "    int captures = 0;", "rule 13 (no timing calls while a capture runs)"),
    "choice-never-probes": ("src/choose.c", "        if (k->segments >= c->next_probe) {", "        if (0) {",
                            "section 5 (a losing arm is tried again)"),
    "context-flush-skips-a-stream": ("src/flush.c", "        if (!run->active || !matches(run, which)) {",
                                     "        if (!run->active || !matches(run, which) || !run->hh.next) {", "rule 6 (every run, every stream)"),
    "merged-event-not-answered": ("src/marker.c", "    if (an->standin)\n        *e = an->standin->ev;", "    if (0)\n        *e = an->standin->ev;",
                                  "rule 15 (answered from the stand-in)"),
    "merged-event-kept-on-rerecord": ("src/marker.c", "    cb_event_unlink(e); /* recorded again now",
        "    (void)e; /* recorded again now", "rule 15 (a new record ends the link)"),
    "merged-event-never-recorded-late": ("src/marker.c", "        record_late(e, si, 0);", "        cb_event_unhold(e, si, 1);",
                                         "rule 15 (a call that keeps the event gets its own record)"),
    "graph-launch-leaves-merged-events": ("src/marker.c", "    while (!cb_runs_locked_here() && atomic_load_explicit(&cb_events_linked",
                                          "    while (0 && atomic_load_explicit(&cb_events_linked", "rule 15 (a graph may wait for any event)"),
    "timing-events-merged": ("src/event.c", "        *stands = ev->flags == CU_EVENT_DISABLE_TIMING;",
        "        *stands = 1;", "rule 15 (timing events keep their records)"),
    "copy-ignores-pending-waits": ("src/copy.c", "        waited = cb_waits_issue(stream);", "        (void)0;",
                                   "rule 16 (a copy on the waiting stream)"),
    "named-stream-ignores-pending-waits": ("src/hooks.c", "    CUresult fe = cb_waits_issue(s);\n    return cb_first_error(fe, cb_flush_stream(s, ptsz, CB_WHY_flush_stream));",
                                           "    CUresult fe = CUDA_SUCCESS;\n    return cb_first_error(fe, cb_flush_stream(s, ptsz, CB_WHY_flush_stream));",
                                           "rule 16 (a call that names the waiting stream)"),
    "rerecord-ignores-pending-waits": ("src/marker.c", "    waited = cb_first_error(waited, cb_waits_issue_event(e));", "    (void)0;",
                                       "rule 16 (a wait is for the record it named)"),
    "destroy-ignores-pending-waits": ("src/marker.c", "    CUresult rc = cb_waits_issue_event(e); /* rule 16: they wait for its last record */",
                                      "    CUresult rc = CUDA_SUCCESS;", "rule 16 (a wait is for the record it named)"),
    "waits-met-unasked": ("src/marker.c", "    int met = !cb_captures_active() && cb_stream_created_nonblocking(s, ptsz) &&\n              cb_drv.cuEventQuery(si ? si->ev : e) == CUDA_SUCCESS;",
        "    int met = !cb_captures_active() && cb_stream_created_nonblocking(s, ptsz);", "rule 16 (only a complete event's wait is dropped)"),
}

def sh(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True)

def check(top):
    stale = []
    for name, (path, old, _, _) in MUTANTS.items():
        n = (pathlib.Path(top) / path).read_text().count(old)
        if n != 1:
            stale.append(f"{name}: its text is found {n} times in {path}")
    for line in stale:
        print(line)
    print(f"{len(MUTANTS) - len(stale)} of {len(MUTANTS)} mutants apply")
    return 1 if stale else 0

def main():
    if sys.argv[1:2] == ["--check"]:
        return check(sys.argv[2] if len(sys.argv) > 2 else ".")
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        print("mutants (name: rule):")
        for name, (_, _, _, rule) in MUTANTS.items():
            print(f"  {name}: {rule}")
        return 0
    unknown = [a for a in sys.argv[1:] if a not in MUTANTS]
    if unknown:
        print(f"unknown mutant(s): {', '.join(unknown)} (--help lists them)")
        return 2
    names = sys.argv[1:] or list(MUTANTS)
    survived = []
    for name in names:
        path, old, new, rule = MUTANTS[name]
        p = pathlib.Path(path)
        text = p.read_text()
        if text.count(old) != 1:
            print(f"{name}: pattern not found once in {path}; update the mutant"); survived.append(name); continue
        try:
            p.write_text(text.replace(old, new))
            b = sh("make -s src/libcubatch.la tests/check_units tests/flushcall 2>&1")
            if b.returncode:
                print(f"{name}: does not build\n{b.stdout[-2000:]}"); survived.append(name); continue
            r = sh("./tests/check_rules 2>&1; ./tests/check_units 2>&1; "
                   "top_builddir=. top_srcdir=. CC=cc CUDA_CPPFLAGS=\"$(sed -n 's/^CUDA_CPPFLAGS = //p' Makefile)\" "
                   "tests/table/check_hooks_complete.sh >/dev/null 2>&1 || echo 'x:x:x:completeness:F:'; "
                   "top_builddir=. top_srcdir=. tests/table/check_flush_table.sh >/dev/null 2>&1 || echo 'x:x:x:flush_table:F:'; "
                   "top_builddir=. top_srcdir=. tests/fuzz/run-fuzz.sh --seeds 1-300 --seconds 20 --save /tmp/cubatch-mutant-regressions 2>&1")
            fails = sorted({l.split(':')[3] for l in r.stdout.splitlines() if ':F:' in l or ':E:' in l})
            if "FAILED" in r.stdout or " 0 divergence" not in r.stdout:
                fails.append("fuzz")
            print(f"{name} ({rule}): {'caught by ' + ', '.join(fails) if fails else 'SURVIVED'}")
            if not fails: survived.append(name)
        finally:
            p.write_text(text)
    sh("make -s src/libcubatch.la tests/check_units tests/flushcall")
    print(f"{len(names) - len(survived)} of {len(names)} mutants caught")
    return 1 if survived else 0

if __name__ == "__main__":
    sys.exit(main())
