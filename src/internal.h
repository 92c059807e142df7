/* internal.h - names shared between cubatch's source files, grouped by the file
 * that defines them.  Everything here has hidden visibility; only the wrappers in
 * hooks.def, dlsym and the cubatch_* API are exported. */
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

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CB_EXPORT __attribute__((visibility("default")))
#define CB_HIDDEN __attribute__((visibility("hidden")))
#define CB_LIKELY(x) __builtin_expect(!!(x), 1)
#define CB_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* initial-exec TLS: one pointer per thread, no __tls_get_addr on the copy path. */
#define CB_TLS __thread __attribute__((tls_model("initial-exec")))

/* Not declared by cuda.h outside per-thread builds, but exported by libcuda. */
CUresult CUDAAPI cuGetProcAddress_v2_ptsz(const char *symbol, void **pfn, int cudaVersion,
                                          cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus);

/* ---- hooks.c: the wrappers generated from hooks.def ---------------------- */
enum cb_hook_id {
#define CB_HOOK(name, ptsz, action, aarg, params, args) CB_ID_##name,
#include "hooks.def"
#undef CB_HOOK
    CB_HOOK_COUNT
};
enum cb_dir { CB_HOOK_DIR_ANY, CB_HOOK_DIR_H2D, CB_HOOK_DIR_D2H, CB_HOOK_DIR_D2D };

struct cb_hook_info {
    const char *name;
    void *wrapper;
    unsigned char ptsz;
    unsigned char is_copy;
};
extern const struct cb_hook_info cb_hooks[CB_HOOK_COUNT];

/* ---- copy.c: the copy wrappers' common body ------------------------------- */
CUresult cb_copy(int hook, int ptsz, int dirhint, CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                 CUstream stream);
/* Issue one copy through the real variant of entry point `hook`. */
CUresult cb_copy_forward(int hook, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);

/* ---- resolve.c: the real driver ------------------------------------------ */
/* Real addresses of every hooked symbol, filled once by cb_init(). */
extern void *cb_real[CB_HOOK_COUNT];
#define CB_REAL(name) ((__typeof__(&name))cb_real[CB_ID_##name])
/* Functions cubatch itself calls (not all are hooked). */
struct cb_driver {
    CUresult (*GetProcAddress_v2)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*PointerGetAttributes)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr);
    CUresult (*StreamIsCapturing)(CUstream, CUstreamCaptureStatus *);
    CUresult (*StreamIsCapturing_ptsz)(CUstream, CUstreamCaptureStatus *);
    CUresult (*StreamGetFlags)(CUstream, unsigned int *);
    CUresult (*StreamGetCtx)(CUstream, CUcontext *);
    CUresult (*StreamGetDevice)(CUstream, CUdevice *);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxGetDevice)(CUdevice *);
    CUresult (*CtxPushCurrent)(CUcontext);
    CUresult (*CtxPopCurrent)(CUcontext *);
    CUresult (*CtxGetApiVersion)(CUcontext, unsigned int *);
    CUresult (*DevicePrimaryCtxGetState)(CUdevice, unsigned int *, int *);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*EventCreate)(CUevent *, unsigned int);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventRecord_ptsz)(CUevent, CUstream);
    CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned int);
    CUresult (*StreamWaitEvent_ptsz)(CUstream, CUevent, unsigned int);
    /* The CUDA 13.0 batch entry (8 arguments), NULL when batching is unavailable. */
    CUresult (*MemcpyBatchAsync)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *,
                                 size_t *, size_t, CUstream);
};
extern struct cb_driver cb_drv;
/* 1 once the driver is resolved; cb_init() is cheap after that. */
extern atomic_int cb_init_done;
void cb_init_slow(void);
static inline void cb_init(void)
{
    if (CB_LIKELY(atomic_load_explicit(&cb_init_done, memory_order_acquire)))
        return;
    cb_init_slow();
}
/* A wrapper whose real function is missing: the quiet answer (resolve.c). */
CUresult cb_absent(int hook);
/* Why batching is off ("ok" when it is on). */
extern const char *cb_batching_reason;
extern int cb_batching; /* 1: copies may be deferred */

/* ---- config.c: options ---------------------------------------------------- */
enum cb_option_id {
#define CB_OPTION(name, type, def, lo, hi, values, doc) CB_OPT_##name,
#include "options.def"
#undef CB_OPTION
    CB_OPTION_COUNT
};
enum { CB_SRC_ORDER_STREAM, CB_SRC_ORDER_ANY, CB_SRC_ORDER_DURING };
enum { CB_STATS_OFF, CB_STATS_ON, CB_STATS_JSON };
uint64_t cb_opt(enum cb_option_id id);
const char *cb_opt_str(enum cb_option_id id);
int cb_parse_size(const char *text, uint64_t *out); /* 4K, 1MiB, 1T, 123: 0 ok, -1 bad */
const char *cb_format_size(uint64_t v, char *buf, size_t len); /* 1048576 -> "1M", UINT64_MAX -> "max" */
/* Reads the environment once and warns about every rejected value and unknown
 * CUBATCH_ name; returns how many there were. */
int cb_config_load(void);
void cb_config_describe(void); /* log level 2+: the value in use of every option */
/* Parse one value the way the environment is parsed (exposed for tests). */
CB_EXPORT int cubatch__parse_option(const char *name, const char *text, uint64_t *out);
/* The launcher's check (tools/cubatch-check.c): cb_config_load with every warning
 * shown; returns the number of problems. */
CB_EXPORT int cubatch__check_options(void);

/* ---- policy.c: which copies are worth deferring --------------------------- */
enum cb_kind { CB_MEM_UNKNOWN = 0, CB_MEM_DEVICE, CB_MEM_HOST, CB_MEM_MANAGED };
enum cb_direction { CB_D_H2D, CB_D_D2H, CB_D_D2D, CB_D_H2H, CB_D_COUNT };
/* 0 ok; -1 refused (the default is installed, *why says what was wrong). */
int cb_policy_load(const char *text, char *why, size_t wlen);
int cb_policy_defer(enum cb_direction d, size_t bytes);
const char *cb_policy_describe(char *buf, size_t len); /* the bands in use, as text */
CB_EXPORT int cubatch__policy_defer(const char *policy, int direction, size_t bytes);
CB_EXPORT int cubatch__policy_check(const char *policy, uint64_t max_copy, char *why, size_t len);

/* ---- classify.c: what memory a pointer is --------------------------------- */
struct cb_class {
    enum cb_kind kind;
    int device;      /* ordinal for device memory, -1 otherwise */
    uintptr_t end;   /* end of the allocation holding the pointer (0 unknown) */
};
/* Returns 0 and fills *out, or -1 when the driver query failed. */
int cb_classify(uintptr_t p, struct cb_class *out);
void cb_classify_forget(void); /* memory was freed or re-registered */

/* ---- queue.c: runs of deferred copies, one per stream ---------------------- */
enum cb_flush_why {
    CB_WHY_STREAM, CB_WHY_LEGACY, CB_WHY_CONTEXT, CB_WHY_HAZARD, CB_WHY_FULL,
    CB_WHY_PASSTHROUGH, CB_WHY_TIMER, CB_WHY_EXIT
};
/* What a stream argument names, once NULL and the special handles are resolved. */
enum cb_stream_kind { CB_STREAM_REGULAR, CB_STREAM_LEGACY_KIND, CB_STREAM_PTDS };
enum cb_stream_kind cb_stream_kind(CUstream s, int ptsz_entry);
/* The copy path: returns 1 (deferred, *rc set), or 0 (caller passes through after
 * the stream was flushed; *rc holds an error from that flush, if any). */
struct cb_copy_req {
    int hook;
    CUdeviceptr dst, src;
    size_t bytes;
    CUstream stream;        /* as the program passed it */
    enum cb_stream_kind sk;
    struct cb_class dcls, scls;
};
int cb_enqueue(const struct cb_copy_req *rq, CUresult *rc);
CUresult cb_flush_stream(CUstream s, int ptsz_entry, enum cb_flush_why why);
CUresult cb_flush_all(enum cb_flush_why why);
/* Issue an eligible copy that is not deferred: its stream's run goes first only if
 * they overlap; returns the copy's result (or an earlier flush error). */
CUresult cb_pass_eligible(const struct cb_copy_req *rq);
CUresult cb_flush_legacy(void);
void cb_forget_stream(CUstream s);
/* A context was destroyed or reset: drop the helpers cubatch made in it. */
void cb_forget_context(CUcontext ctx);
int cb_runs_timer_pass(uint64_t now_ns);
int cb_runs_pending(void); /* some run holds copies (what the timer waits for) */
void cb_queue_exit(void); /* final flush; later copies pass through */
void cb_queue_atfork_prepare(void);
void cb_queue_atfork_parent(void);
void cb_queue_atfork_child(void);

/* ---- context.c: contexts that go away ----------------------------------------- */
/* What a context-destroying call's wrapper learned before forwarding the call. */
struct cb_ctx_fate {
    CUcontext ctx;  /* the context the call may destroy (NULL: none known) */
    int destroys;   /* the call destroys it whenever it succeeds */
    CUdevice device;/* for a primary context: its device; -1 otherwise */
};
/* cuCtxDestroy/cuCtxDetach: flush every run, remember ctx. */
CUresult cb_ctx_destroy_before(CUcontext ctx, struct cb_ctx_fate *f);
/* cuDevicePrimaryCtxRelease/Reset: flush every run, find the device's primary
 * context (reset: destroys = 1). */
CUresult cb_primary_before(CUdevice dev, int reset, struct cb_ctx_fate *f);
/* After the call: if the context is gone, forget what cubatch kept for it. */
void cb_ctx_fate_after(const struct cb_ctx_fate *f, CUresult rc);

/* ---- flusher.c: bounded waiting, exit, fork -------------------------------- */
void cb_flusher_kick(void);    /* a run opened: make sure the timer is running */
void cb_lifecycle_arm(void);   /* first deferred copy: atexit and atfork handlers */
uint64_t cb_now_ns(void);

/* ---- stats.c ---------------------------------------------------------------- */
enum cb_stat_id {
#define CB_STAT(name, kind, doc) CB_ST_##name,
#include "stats.def"
#undef CB_STAT
    CB_STAT_COUNT
};
struct cb_tstats {
    uint64_t v[CB_STAT_COUNT];
    uint64_t calls[CB_HOOK_COUNT];
    struct cb_tstats *next;
    int in_use;
};
extern CB_TLS struct cb_tstats *cb_tls_stats;
struct cb_tstats *cb_stats_thread_slow(void);
static inline struct cb_tstats *cb_stats_thread(void)
{
    struct cb_tstats *t = cb_tls_stats;
    return CB_LIKELY(t != NULL) ? t : cb_stats_thread_slow();
}
#define CB_COUNT(stat) (cb_stats_thread()->v[CB_ST_##stat]++)
#define CB_COUNT_N(stat, n) (cb_stats_thread()->v[CB_ST_##stat] += (n))
void cb_stat_max(enum cb_stat_id id, uint64_t value);
void cb_stats_report(void); /* at exit, when CUBATCH_STATS asks for it */
size_t cb_stats_json(char *buf, size_t len);
void cb_stats_init(void);   /* at initialisation: a fork child starts from zero */
/* 0 when CUBATCH_STATS_FILE's escapes are all known (%p, %h, %%), else -1 and why. */
int cb_stats_pattern_check(const char *pattern, char *why, size_t len);

/* ---- api.c ---------------------------------------------------------------- */
void cb_api_init(void); /* registers the exit report when asked for */

/* ---- log.c -------------------------------------------------------------------- */
/* What each CUBATCH_LOG level shows is written at the top of log.c. */
enum { CB_LOG_WARN = 1, CB_LOG_NOTICE = 2, CB_LOG_DEBUG = 3 };
void cb_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define cb_warn(...) cb_log(CB_LOG_WARN, __VA_ARGS__)
extern int cb_log_force_warnings; /* the launcher's check: warnings whatever CUBATCH_LOG says */
/* A user-supplied text for a message: quoted, escaped, long ones cut with "...". */
#define CB_QUOTE_LEN 320
const char *cb_quote(const char *s, char *buf, size_t len);
const char *cb_quote_n(const char *s, size_t n, char *buf, size_t len); /* the first n bytes of s */
const char *cb_errstr(int err, char *buf, size_t len); /* strerror, thread-safe */

#endif /* CUBATCH_INTERNAL_H */
