/* internal.h - names shared between cubatch's source files, grouped by the file
 * that defines them, in the order of the layers (docs/contributing.md, "Source map"):
 *
 *   interception   hooks.c resolve.c api.c  ->  init.c  ->  net.c
 *   decision       copy.c context.c  ->  classify.c policy.c
 *   flushing       life.c marker.c  ->  fork.c  ->  waits.c  ->  timer.c  ->  look.c  ->  flush.c
 *   runs           notes.c  ->  store.c  ->  run.c  ->  hazard.c event.c
 *   engines        engine.c  ->  engine_batch.c engine_loop.c engine_kernel.c  ->  choose.c smwork.c ptds.c nvtx.c
 *   base           report.c  ->  stats.c  ->  config.c  ->  capture.c driver.c allocs.c batching.c stream.c fifo.c suggest.c
 *                  ->  log.c clock.c tblock.c futex.c
 *
 * A file calls only files of its own group below it and groups below its own
 * (tests/package/check_layers.py checks it: calls, reads and includes).
 * Everything here has hidden visibility; only the wrappers of hooks.def, dlsym,
 * the cubatch_* API and the launcher's option check are exported. */
#ifndef CUBATCH_INTERNAL_H
#define CUBATCH_INTERNAL_H

#include "config.h" /* _GNU_SOURCE and friends, PACKAGE_VERSION */

/* Real exported names (cuMemcpyHtoDAsync_v2, ..._ptsz) without cuda.h's macros. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
/* The GL and EGL interop calls that hand memory to another API are wrapped too. */
#include <cudaGL.h>
#include <cudaEGL.h>
#include <cudaProfiler.h>
/* The types of rows for functions added after the header at hand (hooks.def). */
#include "cuda_since.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CB_EXPORT __attribute__((visibility("default")))
#define CB_HIDDEN __attribute__((visibility("hidden")))
#define CB_LIKELY(x) __builtin_expect(!!(x), 1)
#define CB_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* A wrapper's few loads on the path every call takes: never a call of their own. */
#define CB_ALWAYS_INLINE inline __attribute__((always_inline))
/* initial-exec TLS: one pointer per thread, no __tls_get_addr on the copy path. */
#define CB_TLS __thread __attribute__((tls_model("initial-exec")))
#define CB_EXPAND(...) __VA_ARGS__

/* Assertions of the debug build (./configure --enable-debug defines CB_DEBUG):
 * a condition that fails is printed with its file and line on stderr (log.c,
 * no allocation) and the process aborts.  Otherwise the condition is only
 * type-checked, never evaluated: the build holds no trace of it.
 * CB_IF_DEBUG(...): code of the debug build only (its checks' bookkeeping). */
#ifdef CB_DEBUG
__attribute__((noreturn, cold)) void cb_assert_failed(const char *cond, const char *file, int line);
#define CB_ASSERT(cond) (CB_LIKELY(cond) ? (void)0 : cb_assert_failed(#cond, __FILE__, __LINE__))
#define CB_IF_DEBUG(...) __VA_ARGS__
#else
#define CB_ASSERT(cond) ((void)sizeof(!(cond)))
#define CB_IF_DEBUG(...)
#endif

/* Not declared by cuda.h outside per-thread builds, but exported by libcuda. */
CUresult CUDAAPI cuGetProcAddress_v2_ptsz(const char *symbol, void **pfn, int cudaVersion,
                                          cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus);

/* ==== the tables' enums (used at every layer) ================================== */

/* One id per row of hooks.def. */
enum cb_hook_id {
#define CB_HOOK(name, ptsz, action, aarg, params, args) CB_ID_##name,
#include "hooks.def"
#undef CB_HOOK
    CB_HOOK_COUNT
};

/* Direction of a copy, one per row of directions.def; CB_D_ANY only as the
 * direction of an entry point (cuMemcpyAsync, which infers it from the
 * pointers). */
enum cb_direction {
#define CB_DIRECTION(NAME, word, doc) CB_D_##NAME,
#include "directions.def"
#undef CB_DIRECTION
    CB_D_COUNT,
    CB_D_ANY = CB_D_COUNT
};

enum cb_option_id {
#define CB_OPTION(name, type, def, lo, hi, values, check, doc) CB_OPT_##name,
#include "options.def"
#undef CB_OPTION
    CB_OPTION_COUNT
};
/* The values of ENUM options, from their words in options.def. */
#define CB_WORD_ENUM(OPT, NAME, word) CB_##OPT##_##NAME,
enum cb_src_order { CB_WORDS_SRC_ORDER(CB_WORD_ENUM) };
enum cb_stats_mode { CB_WORDS_STATS(CB_WORD_ENUM) };
enum cb_engine_choice { CB_WORDS_ENGINE(CB_WORD_ENUM) };
#undef CB_WORD_ENUM

enum cb_stat_id {
#define CB_STAT(name, kind, doc) CB_ST_##name,
#include "stats.def"
#undef CB_STAT
    CB_STAT_COUNT
};
/* The counter of copies in direction d (d < CB_D_COUNT): copies_<word>. */
static inline enum cb_stat_id cb_direction_stat(enum cb_direction d)
{
    static const enum cb_stat_id table[CB_D_COUNT] = {
#define CB_DIRECTION(NAME, word, doc) [CB_D_##NAME] = CB_ST_copies_##word,
#include "directions.def"
#undef CB_DIRECTION
    };
    return table[d];
}
/* Why a run was flushed: the CB_FLUSH rows of stats.def, in their order. */
enum cb_flush_why {
#define CB_STAT(name, kind, doc)
#define CB_FLUSH(name, does, doc) CB_WHY_##name,
#include "stats.def"
#undef CB_FLUSH
#undef CB_STAT
    CB_WHY_COUNT
};
/* What a flush does besides submitting: the `does` column of those rows. */
enum cb_flush_does {
    CB_FD_CALL = 1,         /* a call of the program is waiting: the error is returned there */
    CB_FD_KEEPS_ERROR = 2,  /* nobody is waiting: the error waits for the stream's next call */
    CB_FD_JOINS_LEGACY = 4, /* a legacy-ordered call follows: other threads' per-thread runs join the legacy stream */
    CB_FD_KEEPS_BURST = 8,  /* the stream's next copy still joins a run at once */
    CB_FD_CHUNK = 16,       /* a chunk of a growing run: the pipelining goes on */
    CB_FD_MARK = 32,        /* a profiler is shown a marker where the run ended (nvtx.c) */
};
static inline unsigned cb_flush_does(enum cb_flush_why why)
{
    static const unsigned char table[CB_WHY_COUNT] = {
#define CB_STAT(name, kind, doc)
#define CB_FLUSH(name, does, doc) [CB_WHY_##name] = (does),
#include "stats.def"
#undef CB_FLUSH
#undef CB_STAT
    };
    return table[why];
}
/* Of two results, the one to report: the earlier error, else the later result.
 * An error the program has not yet seen is never replaced, neither by a later
 * success nor by a later error (rule 9: the program sees the first failing
 * copy's own error). */
static inline CUresult cb_first_error(CUresult kept, CUresult rc) { return kept != CUDA_SUCCESS ? kept : rc; }
/* What a stream argument names, once NULL and the special handles are resolved. */
enum cb_stream_kind { CB_SK_CREATED, CB_SK_LEGACY, CB_SK_PER_THREAD };
static inline enum cb_stream_kind cb_stream_kind(CUstream s, int ptsz_entry)
{
    if (s == NULL)
        return ptsz_entry ? CB_SK_PER_THREAD : CB_SK_LEGACY;
    if (s == CU_STREAM_LEGACY)
        return CB_SK_LEGACY;
    if (s == CU_STREAM_PER_THREAD)
        return CB_SK_PER_THREAD;
    return CB_SK_CREATED;
}

/* ==== interception ============================================================= */

/* ---- hooks.c: the wrappers generated from hooks.def ---------------------------- */
extern void *const cb_wrappers[CB_HOOK_COUNT]; /* each row's exported wrapper */

/* ---- init.c: everything cubatch needs before its first decision -------------- */
/* cb_init() (init.h) is what the entry points call first. */
extern atomic_int cb_init_done; /* 1 once initialised */
void cb_init_slow(void);
int cb_init_running(void); /* this thread is inside cb_init_slow (libcuda calling dlsym) */

/* ---- net.c: driver functions no table names (rule 17) -------------------------- */
/* Is name a function of src/driver_api.list or a row of hooks.def? */
int cb_net_knows(const char *name);
/* The CUDA_VERSION of the newest headers the tables were checked against. */
int cb_net_version_checked(void);
/* Is p code of the driver (libcuda.so*)? */
int cb_net_is_driver_code(void *p);
/* What the program gets for the driver's function real, which no table names:
 * a trampoline that submits everything held first, else real with deferral
 * switched off for the process. */
void *cb_net_wrap(const char *name, void *real);

/* ==== decision ================================================================= */

/* ---- copy.c: defer a copy, or pass it through (every rule, one place) --------- */
/* A copy wrapper's entry point in one argument (with five more, a call would
 * pass the last through memory): its hook id, whether it is a _ptsz twin,
 * and the direction its name says (enum cb_direction). */
#define CB_COPY_ENTRY(hook, ptsz, dir) ((unsigned)(hook) | (unsigned)(ptsz) << 16 | (unsigned)(dir) << 17)
static inline int cb_entry_hook(unsigned entry) { return (int)(entry & 0xffff); }
static inline int cb_entry_ptsz(unsigned entry) { return (int)(entry >> 16 & 1); }
static inline enum cb_direction cb_entry_dir(unsigned entry) { return (enum cb_direction)(entry >> 17); }
CUresult cb_copy(unsigned entry, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
/* A 2D copy (rule 19): deferred as a 1D copy is when it is one between
 * pointers the copy kernel may take, else passed through after its stream's run. */
CUresult cb_copy2d(unsigned entry, const CUDA_MEMCPY2D *copy, CUstream stream);

/* ---- context.c: contexts that go away ------------------------------------------- */
/* What a context-destroying call's wrapper learned before forwarding the call. */
struct cb_ctx_fate {
    CUcontext ctx;   /* the context the call may destroy (NULL: none known) */
    int destroys;    /* the call destroys it whenever it succeeds */
    CUdevice device; /* for a primary context: its device; -1 otherwise */
};
/* cuCtxDestroy/cuCtxDetach: flush every run, remember ctx. */
CUresult cb_ctx_destroy_before(CUcontext ctx, int destroys, struct cb_ctx_fate *f);
/* cuDevicePrimaryCtxRelease/Reset: flush every run, find the device's primary
 * context (reset: destroys = 1). */
CUresult cb_primary_before(CUdevice dev, int reset, struct cb_ctx_fate *f);
/* After the call: if the context is gone, forget what cubatch kept for it. */
void cb_ctx_fate_after(const struct cb_ctx_fate *f, CUresult rc);

/* ---- classify.c: what memory a pointer is ---------------------------------------- */
enum cb_kind { CB_MEM_UNKNOWN = 0, CB_MEM_DEVICE, CB_MEM_HOST, CB_MEM_MANAGED };
struct cb_class {
    enum cb_kind kind;
    int device;     /* ordinal for device memory, -1 otherwise */
    uintptr_t end;  /* end of the allocation holding the pointer (0 unknown) */
    CUcontext kctx; /* the context whose kernels may touch it at this address (NULL: none) */
};
/* Returns 0 and fills *out, or -1 when the driver query failed. */
int cb_classify(uintptr_t p, struct cb_class *out);
/* Both sides of a copy, the same way (a copy's pair of allocations is usually
 * the previous copy's: then no lookup at all). */
int cb_classify_pair(uintptr_t dst, uintptr_t src, struct cb_class *d, struct cb_class *s);
void cb_forget_classes(void); /* memory was freed, unmapped or (re)registered */
/* Rule 14: memory made at p (an allocation, registration or mapping that
 * succeeded) is described once and kept where every copy finds it. */
void cb_classes_announce(uintptr_t p);
/* Memory at [p, p + size) (size 0: the allocation holding p; p 0: none named) is
 * about to be given back: its range is forgotten now, and every cache. */
void cb_classes_forget_range(uintptr_t p, size_t size);
/* A context may go: the ranges of its memory are forgotten (NULL: every range). */
void cb_classes_forget_context(CUcontext ctx);

/* ---- policy.c: which copies are worth deferring ---------------------------------- */
/* 0 ok; -1 refused (the default is installed, *why says what was wrong). */
int cb_policy_load(const char *text, char *why, size_t wlen);
int cb_policy_defer(enum cb_direction d, size_t bytes);
/* Per direction, the largest copy the installed policy surely defers without a
 * look at its bands (0: ask cb_policy_defer). */
extern size_t cb_policy_sure[CB_D_COUNT];
/* ... and the largest it may defer at all (0: none; above it, never). */
extern size_t cb_policy_top[CB_D_COUNT];
/* ... and the largest that every direction but host to host surely defers. */
extern size_t cb_policy_first_max;
/* A policy text evaluated without installing it: 1 defer, 0 not, -1 refused. */
int cb_policy_try(const char *text, enum cb_direction d, size_t bytes);
/* 0 when the text is a valid policy under max_copy, else -1 and why. */
int cb_policy_check(const char *text, uint64_t max_copy, char *why, size_t len);
extern const char *const cb_direction_names[CB_D_COUNT];

/* ==== flushing ================================================================= */

/* ---- life.c: process and thread life ------------------------------------------- */
void cb_life_arm(void);          /* first deferred copy: exit and fork handlers */
void cb_life_watch_thread(void); /* this thread owns a per-thread-stream run */

/* ---- fork.c: fork (rule 10), and the one table of the locks held across it ---- */
void cb_fork_init(void); /* at initialisation: the rows registered whether or not a copy is deferred */
void cb_fork_arm(void);  /* at the first deferred copy (life.c): the others */

/* ---- marker.c: event records in runs, and their observers (rule 11) ----------- */
/* A record (MARKER rows): *queued = 1 when it joined its stream's run as a
 * marker (the wrapper then does not forward it); else the flushes it needs were
 * made and the wrapper forwards it.  Returns an earlier error to report. */
CUresult cb_marker_record(int hook, int ptsz, CUevent e, CUstream s, unsigned int flags, int *queued);
CUresult cb_event_observe(CUevent a, CUevent b); /* submit the runs holding a's and b's (may be NULL) records */
CUresult cb_event_flush_holder(CUevent e);       /* the run holding e's record goes out */
CUresult cb_event_before_forget(CUevent e);      /* EVENT_FORGET rows: its pending waits too (rule 16) */
/* A query, synchronize or wait answered from a stand-in (rule 15): the event
 * the program named, the stand-in held for the call, and whether the call's
 * success shows the stand-in complete. */
struct cb_answer {
    CUevent asked;
    struct cb_standin *standin;
    int success_settles;
    int not_forwarded; /* a wait that rode (rule 16) or was already met: the call is not made */
};
/* EVENT_ASK rows: *e is the event the call will be forwarded with (the stand-in's when linked). */
CUresult cb_event_ask(CUevent *e, struct cb_answer *an);
void cb_event_answered(struct cb_answer *an, CUresult rc); /* after the call: the hold ends */
/* WAIT rows; *e as for cb_event_ask. */
CUresult cb_flush_wait(CUstream s, int ptsz, CUevent *e, unsigned int flags, struct cb_answer *an);
CUresult cb_flush_graph_launch(CUstream s, int ptsz);    /* GRAPH_LAUNCH rows */
CUresult cb_flush_launch_config(const CUlaunchConfig *cfg, int ptsz); /* LAUNCH_CONFIG rows */
void cb_event_created(CUevent *ph, unsigned int flags, CUresult rc); /* after cuEventCreate */
void cb_event_forget(CUevent e, CUresult rc);  /* after a destroy or an IPC handle */
void cb_event_foreign(CUevent *ph, CUresult rc); /* after an event opened from elsewhere */

/* ---- timer.c: the bound on how long a run waits (rule 7) ---------------------- */
/* A run opened on a quiet stream: look at it at `when` (its run lock held). */
void cb_timer_arm(uint64_t when);
void cb_timer_atfork_prepare(void); /* the due time's lock held across fork */
void cb_timer_atfork_parent(void);
void cb_timer_atfork_child(void); /* the child has no timer thread */

/* ---- look.c: the timer's look at the runs (rule 7), and the pace ------------- */
/* No lock held: flush runs that stopped growing, grow too slowly or grew old;
 * returns when the next look is due (0: none). */
uint64_t cb_look_runs(uint64_t now_ns);

/* ---- waits.c: stream waits that ride (rule 16): waits.h --------------------------- */

/* ---- flush.c: submitting runs, and who asks for it ------------------------------ */
struct cb_run;
struct cb_copy_req;
/* Submit and empty a run (run lock held); returns the error the caller reports. */
CUresult cb_flush_run(struct cb_run *run, enum cb_flush_why why);
CUresult cb_flush_stream(CUstream s, int ptsz_entry, enum cb_flush_why why);
CUresult cb_flush_legacy(void); /* every blocking stream's run: legacy-stream work follows */
/* What a copy on stream s must follow on other streams (rule 3 and its mirror
 * image): blocking runs before a legacy-stream copy, legacy runs before a
 * blocking-stream copy.  No run lock held (store.c: one at a time); usually two
 * loads and a return. */
CUresult cb_flush_cross(CUstream s, enum cb_stream_kind sk);
CUresult cb_flush_all(enum cb_flush_why why);
/* The run holding event e's latest record (a marker, rule 11) goes out; no run lock held. */
CUresult cb_flush_holder(CUevent e);
/* A capture begins (CAPTURE_BEGIN rows of hooks.def): counted as pending
 * (capture.c), the stream and every legacy run flushed; while one is under way
 * nothing is deferred on the legacy stream (copy.c). */
CUresult cb_flush_capture_begin(CUstream s, int ptsz_entry);
/* Issue an eligible copy that is not deferred, ahead of its stream's run unless
 * they overlap (then the run goes first); returns the copy's result (or an
 * earlier flush error). */
CUresult cb_issue_ahead_of_run(const struct cb_copy_req *rq);
void cb_forget_stream(CUstream s); /* destroyed: flush what slipped in, drop its run */
void cb_flush_exit(void);          /* at exit: final flush, later copies pass through */
/* cubatch_set_enabled(): 0 submits every run, and nothing is deferred until 1
 * again; returns the first error of that flush. */
CUresult cb_flush_set_enabled(int on);
/* Whether the final flush or cubatch_set_enabled(0) stopped deferral: flush.h. */
void cb_flush_thread_gone(void);   /* a per-thread-stream owner exits */
void cb_flush_before_fork(void);   /* fork.c's prepare handler: every run goes out */

/* ==== runs ===================================================================== */
/* notes.c, store.c, run.c and hazard.c: struct cb_run, its store and each
 * thread's notes, declared in notes.h, store.h and run.h. */

/* ==== engines ================================================================== */
/* engine.c, engine_batch.c, engine_loop.c, ptds.c: declared in engine.h. */

/* ==== base ===================================================================== */

/* ---- batching.c: the batching switch --------------------------------------------- */
/* Whether copies may be deferred at all, and why not (said in the report's
 * first line); read anywhere, written through cb_batching_set only. */
extern int cb_batching;
extern const char *cb_batching_reason;
void cb_batching_set(int on, const char *reason); /* at initialisation (engine.c, init.c) */

/* ---- stats.c: the counters of stats.def, per thread ------------------------------ */
struct cb_tstats {
    uint64_t v[CB_STAT_COUNT];
    uint64_t calls[CB_HOOK_COUNT];
    uint64_t ended[CB_HOOK_COUNT]; /* runs submitted inside a call of each (not chunks) */
    struct cb_tstats *next;
    int in_use;
};
/* This thread's counters (the fast path is inline in stats.h). */
struct cb_tstats *cb_stats_thread_slow(void);
void cb_stat_max(enum cb_stat_id id, uint64_t value);
enum cb_stat_id cb_flush_stat(enum cb_flush_why why); /* the counter of a flush reason */
/* fork.c's table: the counters' lock held across fork; a child starts from zero. */
void cb_stats_atfork_prepare(void);
void cb_stats_atfork_parent(void);
void cb_stats_atfork_child(void);
/* The report as JSON or text in buf (cut to len); the length the whole needs. */
size_t cb_stats_json(char *buf, size_t len);
size_t cb_stats_text(char *buf, size_t len);
/* The measured choice's table for the report (text or JSON), given by choose.c. */
void cb_stats_set_choices(size_t (*describe)(char *buf, size_t len, int json));
/* Driver functions no table names, by the net's slot (net.c): the name the
 * program asked for, and its calls. */
#define CB_NET_SLOTS 32
void cb_stat_unknown_name_set(int slot, const char *name);
const char *cb_stat_unknown_name(int slot);
void cb_stat_unknown_call(int slot);

/* ---- report.c: the report at exit, written where CUBATCH_STATS_FILE says ------ */
void cb_report_init(void); /* at initialisation: the exit report registered when asked for */

/* ---- config.c: options ------------------------------------------------------------ */
/* Read on the copy path: inline, one load. */
extern uint64_t cb_opt_values[CB_OPTION_COUNT];
static inline uint64_t cb_opt(enum cb_option_id id) { return cb_opt_values[id]; }
const char *cb_opt_str(enum cb_option_id id);
/* An option's value was found unusable after loading (e.g. the policy): its
 * default stays, and the option dump says so. */
void cb_opt_reject(enum cb_option_id id);
/* The text an option's dump shows for a STRING option in use (e.g. the policy's
 * bands once parsed). */
void cb_opt_set_shown(enum cb_option_id id, const char *text);
int cb_parse_size(const char *text, uint64_t *out); /* 4K, 1MiB, 1T, 123: 0 ok, -1 bad */
/* Parse one value the way the environment is parsed (its CHECK included): 0 ok,
 * -1 refused. */
int cb_parse_option(const char *name, const char *text, uint64_t *out);
const char *cb_format_size(uint64_t v, char *buf, size_t len); /* 1048576 -> "1M", UINT64_MAX -> "max" */
/* Reads the environment once and warns about every rejected value and unknown
 * CUBATCH_ name; returns how many there were.  checking: the launcher's check
 * (nothing is done but reading; messages leave the consequence to the launcher). */
int cb_config_load(int checking);
void cb_config_describe(void); /* log level 2+: the value in use of every option */
/* The table itself, for the tools that print it (tools/options-doc.c). */
enum cb_opt_type { CB_T_BOOL, CB_T_SIZE, CB_T_UINT, CB_T_ENUM, CB_T_STRING };
struct cb_option {
    enum cb_option_id id; /* the row's own index (checked by tests/unit/check_units.c) */
    const char *name;
    enum cb_opt_type type;
    uint64_t def, lo, hi;
    const char *values; /* an ENUM's words, each followed by '|' */
    /* the option's own rule (options.def's CHECK column): 0 accepted, else -1 and
     * why (what follows "is not valid: "); ok: the type's own parse succeeded */
    int (*check)(const char *text, int ok, uint64_t *v, char *why, size_t wlen);
    const char *check_name, *doc;
};
extern const struct cb_option cb_options[CB_OPTION_COUNT];
extern const char *const cb_opt_type_names[]; /* "BOOL", "SIZE"... by enum cb_opt_type */
/* The words BOOL options take: yes-words at even, no-words at odd indices. */
extern const char *const cb_bool_words[8];
const char *cb_option_env(const struct cb_option *o, char *buf, size_t len); /* CUBATCH_MAX_BATCH */
/* Word k of an ENUM option ("" past the last). */
const char *cb_option_word(const struct cb_option *o, uint64_t k, char *buf, size_t len);
const char *cb_option_words(const struct cb_option *o, char *buf, size_t len); /* "auto|kernel|batch" */
/* The default as the option's user writes it: a word, a size with its unit, "unset". */
const char *cb_option_default(const struct cb_option *o, char *buf, size_t len);
/* The launcher's check (tools/cubatch-check.c): cb_config_load and the policy,
 * as at start; returns the number of problems. */
CB_EXPORT int cubatch__check_options(void);

/* ---- suggest.c: did you mean ---------------------------------------------------- */
/* Of name(0) .. name(n - 1), the closest to word (len characters, compared
 * ignoring case), if close enough to be a slip: at most a third of its
 * characters edited; else NULL. */
const char *cb_suggest(const char *word, size_t len, const char *(*name)(size_t i), size_t n);

/* ---- fifo.c: a report file that is a FIFO ---------------------------------------- */
/* 1 (after a warning) when path names a FIFO that cannot take the report at
 * exit: nobody reads it; one that can stays open to the end.  0 otherwise. */
int cb_fifo_refused(const char *path);

/* ---- driver.c: the real driver ---------------------------------------------------- */
/* Each hooks.def row: its exported name, its per-thread flag, whether it copies. */
struct cb_hook_row {
    const char *name;
    unsigned char ptsz;
    unsigned char is_copy;
    unsigned char dir; /* a copy entry's own direction (its row's first action argument); else CB_D_ANY */
};
extern const struct cb_hook_row cb_hook_rows[CB_HOOK_COUNT];
/* Real addresses of every hooked symbol (NULL where the driver lacks it). */
extern void *cb_real[CB_HOOK_COUNT];
#define CB_REAL(name) ((__typeof__(&name))cb_real[CB_ID_##name])
/* The functions cubatch calls itself, one member per row of driver.def, named as
 * the driver names them (NULL where the driver lacks one). */
struct cb_driver {
#define CB_DRIVER(name) __typeof__(&name) name;
#include "driver.def"
#undef CB_DRIVER
};
extern struct cb_driver cb_drv;
/* Opens libcuda.so.1 (if it is loaded, or loadable) and fills cb_real and cb_drv;
 * returns 1 when a driver was found. */
int cb_driver_load(void);
/* cuDriverGetVersion's answer at load (13000 for 13.0), 0 when it had none:
 * the one time cubatch asks it. */
extern int cb_driver_version;
/* A wrapper whose real function is missing: the quiet answer. */
CUresult cb_absent(int hook);
/* libc's dlsym, never ours (the x86-64 entry of dlsym in resolve.c jumps to it). */
extern void *(*cb_real_dlsym)(void *, const char *);
void cb_real_dlsym_init(void);

/* ---- log.c ---------------------------------------------------------------------- */
/* What each CUBATCH_LOG level shows is written at the top of log.c (and
 * cb_assert_failed, the debug build's: above, with CB_ASSERT). */
enum { CB_LOG_WARN = 1, CB_LOG_NOTICE = 2, CB_LOG_DEBUG = 3 };
void cb_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define cb_warn(...) cb_log(CB_LOG_WARN, __VA_ARGS__)
void cb_log_set_level(unsigned level); /* CUBATCH_LOG, once read (config.c) */
/* A user-supplied text for a message: quoted, escaped, long ones cut with "...". */
#define CB_QUOTE_LEN 320
const char *cb_quote(const char *s, char *buf, size_t len);
const char *cb_quote_n(const char *s, size_t n, char *buf, size_t len); /* the first n bytes of s */
const char *cb_errstr(int err, char *buf, size_t len);                  /* strerror, thread-safe */

/* ---- clock.c ------------------------------------------------------------------ */
uint64_t cb_now_ns(void); /* CLOCK_MONOTONIC */

#endif /* CUBATCH_INTERNAL_H */
