/* xbench: one-process measurement of cubatch's copy engines on a real GPU.
 *
 *   xbench [--out DIR] [--quick] [--only LIST] [--pin-note TEXT] [--reps N]
 *          [--rounds N] [--budget SEC] [--fatbin FILE] [--seed N]
 *
 * Sections (--only takes a comma list; default all; run in the order verify,
 * batch, kernel, align, interf, costs):
 *   costs   4: host cost of single driver calls (median of 10000) and facts
 *   verify     copy kernel on the GPU: random mixed runs (all directions in
 *              one launch, any size and alignment, every tier), bytes and
 *              guard gaps checked
 *   batch   1: loop vs one cuMemcpyBatchAsync vs chunked batch schedules;
 *              emulated per-copy issue cost (busy-wait between appends)
 *   kernel  2: copy kernel over grid x block, legacy and blocking streams,
 *              against loop and batch in the same interleaving
 *   align   2b: copy kernel with misaligned / odd-sized copies
 *   interf  3: compute kernel on stream A vs 40 copy runs on stream B; both
 *              sides timed, with and without the other
 *
 * Method: every variant of a cell is first run once on poisoned destinations
 * and its bytes (and the gaps between copies) checked against memcpy; exit 1
 * at the end if any check failed.  Then warm-ups and repetitions run
 * round-robin over the variants (the starting variant rotates), each
 * repetition timed with CLOCK_MONOTONIC from the first issued call to the
 * return of the stream synchronize ("total"), and to the return of the last
 * submitting call ("submit").  Median, min, max.  Pinned host memory from
 * cuMemAllocHost, device memory from cuMemAlloc, random source bytes.
 * Driver API only; the copy kernel is loaded from a fatbin image (embedded
 * at build time, or --fatbin FILE) with cuModuleLoadData.
 *
 * Output: short tables on stdout at the end (also DIR/summary.txt); with
 * --out, full CSV: samples.csv (every timed repetition), part1.csv,
 * part2.csv, part3.csv, part3_trials.csv, part4.csv, facts.txt, log.txt.
 * Exit: 0 ok, 1 CUDA error or wrong bytes, 2 usage, 77 no GPU.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "copy_kernel.h"
#include "xbench_fatbins.h" /* generated: cb_copy_fatbin[], xb_kernels_fatbin[] */

/* ------------------------------------------------------------------ basics */

/* Output.  The GPU machine returns at most 8 files, so --out DIR gets two:
 * summary.txt (the tables printed on stdout) and data.txt (every CSV table,
 * one after another, each after a line "### name").  Both are written at exit,
 * also when a CUDA error ends the run early (what was measured is kept). */
enum { D_FACTS, D_LOG, D_P1, D_P2, D_P3, D_P3T, D_P4, D_SAMPLES, D_N };
static const char *d_names[D_N] = {"facts", "log",   "part1", "part2",
                                   "part3", "part3_trials", "part4", "samples"};
static FILE *g_d[D_N];
static char *g_dbuf[D_N];
static size_t g_dlen[D_N];
#define g_log g_d[D_LOG]

static void logf_(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (g_log) {
        va_start(ap, fmt);
        vfprintf(g_log, fmt, ap);
        va_end(ap);
        fflush(g_log);
    }
}

static void die_cu(const char *what, CUresult r, int line)
{
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
        name = "?";
    logf_("xbench:%d: %s failed: %s (%d)\n", line, what, name, (int)r);
    exit(r == CUDA_ERROR_NO_DEVICE ? 77 : 1);
}

#define CK(call)                                                                   \
    do {                                                                           \
        CUresult r_ = (call);                                                      \
        if (r_ != CUDA_SUCCESS)                                                    \
            die_cu(#call, r_, __LINE__);                                           \
    } while (0)

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        logf_("xbench: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static inline uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
static inline double now_us(void) { return (double)now_ns() / 1e3; }

/* Busy-wait about ns nanoseconds (a program's own per-copy work). */
static inline void spin_ns(uint64_t ns)
{
    if (!ns)
        return;
    const uint64_t t0 = now_ns();
    while (now_ns() - t0 < ns)
        ;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
static uint64_t rndr(uint64_t lo, uint64_t hi) { return lo + rnd() % (hi - lo + 1); }

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct stat3 {
    double med, min, max;
};
static struct stat3 stats(const double *v, int n)
{
    struct stat3 s = {0, 0, 0};
    if (n <= 0)
        return s;
    double *t = xmalloc(sizeof(double) * (size_t)n);
    memcpy(t, v, sizeof(double) * (size_t)n);
    qsort(t, (size_t)n, sizeof(double), cmp_dbl);
    s.min = t[0];
    s.max = t[n - 1];
    s.med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    free(t);
    return s;
}

/* Short number for the tables: 5 characters where possible. */
static const char *fu(char *b, double v)
{
    if (v == -2)
        snprintf(b, 16, "BAD");
    else if (v != v || v < 0)
        snprintf(b, 16, "-");
    else if (v < 10)
        snprintf(b, 16, "%.2f", v);
    else if (v < 100)
        snprintf(b, 16, "%.1f", v);
    else if (v < 99999.5)
        snprintf(b, 16, "%.0f", v);
    else
        snprintf(b, 16, "%.0fk", v / 1e3);
    return b;
}
#define FU(v) fu((char[16]){0}, (v))

static const char *ksize(char *b, size_t n)
{
    if (n >= (1u << 20) && n % (1u << 20) == 0)
        snprintf(b, 16, "%zuM", n >> 20);
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(b, 16, "%zuK", n >> 10);
    else
        snprintf(b, 16, "%zu", n);
    return b;
}
#define KS(n) ksize((char[16]){0}, (n))

/* ------------------------------------------------------------------ options */

static struct {
    const char *out;
    const char *pin_note;
    const char *fatbin;
    unsigned only; /* bit set of sections; 0 = all */
    int quick;
    int reps;    /* part 1; part 2 uses reps2 */
    int reps2;
    int warm;
    int rounds; /* part 3 */
    int costn;  /* part 4 samples */
    double budget_s;
} O = {NULL, "", NULL, 0, 0, 15, 21, 2, 7, 10000, 330};

enum { S_COSTS = 1, S_VERIFY = 2, S_BATCH = 4, S_KERNEL = 8, S_ALIGN = 16, S_INTERF = 32 };
static const char *sec_names[] = {"costs", "verify", "batch", "kernel", "align", "interf"};

static int want(unsigned s) { return O.only == 0 || (O.only & s); }

/* ------------------------------------------------------------------ CUDA state */

static CUdevice g_dev;
static CUcontext g_ctx;
static int g_sms, g_cc_major, g_cc_minor, g_drv, g_maxthr_sm, g_smem_optin;
static char g_devname[256];
static CUstream s_nb, s_blk, s_hi, s_A; /* non-blocking, blocking, high priority, compute */
static CUmodule m_copy, m_bench;
static CUfunction k_copy[4]; /* capacities 40, 168, 680, 1360 */
static const unsigned k_cap[4] = {CB_KTIER_1K, CB_KTIER_4K, CB_KTIER_16K, CB_KPARAMS_MAX};
static CUfunction k_burn;
static int g_have_batch;

#define CAP ((size_t)18 << 20) /* bytes per buffer */
static unsigned char *hsrc, *hdst; /* pinned */
static CUdeviceptr hsrc_d, hdst_d; /* their device addresses */
static CUdeviceptr dsrc, ddst;
static unsigned char *hchk, *hexp_h, *hexp_d; /* host scratch: fetched and expected images */
static CUdeviceptr d_dummy;

static int g_fail;           /* a byte check failed */
static int g_checked;        /* variants verified */
static double g_t_start;     /* seconds */

static double elapsed_s(void) { return now_us() / 1e6 - g_t_start; }

/* ------------------------------------------------------------------ layouts */

enum dir { H2D, D2H, D2D };
static const char *dir_name[] = {"h2d", "d2h", "d2d"};

struct copy {
    int dir;
    size_t soff, doff, n; /* offsets into hsrc/dsrc and ddst/hdst */
};

struct layout {
    char name[48];
    int dir; /* -1 when mixed */
    unsigned count;
    size_t size;
    struct copy *c;
    size_t span_h, span_d; /* destination windows [0, span) of hdst and ddst */
    CUdeviceptr *bdst, *bsrc;
    size_t *bsz;
    /* prebuilt kernel launches: nl launches of <= CB_KPARAMS_MAX copies */
    int nl;
    struct cb_kparams *kp;
};

static uint64_t src_addr_dev(const struct copy *c)
{
    return c->dir == H2D ? (uint64_t)hsrc_d + c->soff : (uint64_t)dsrc + c->soff;
}
static uint64_t dst_addr_dev(const struct copy *c)
{
    return c->dir == D2H ? (uint64_t)hdst_d + c->doff : (uint64_t)ddst + c->doff;
}

static void layout_finish(struct layout *L)
{
    unsigned n = L->count;
    L->bdst = xmalloc(sizeof(CUdeviceptr) * n);
    L->bsrc = xmalloc(sizeof(CUdeviceptr) * n);
    L->bsz = xmalloc(sizeof(size_t) * n);
    L->span_h = L->span_d = 0;
    for (unsigned i = 0; i < n; i++) {
        const struct copy *c = &L->c[i];
        /* batch API: UVA addresses, host pointers for the host side */
        L->bsrc[i] = c->dir == H2D ? (CUdeviceptr)(uintptr_t)(hsrc + c->soff) : dsrc + c->soff;
        L->bdst[i] = c->dir == D2H ? (CUdeviceptr)(uintptr_t)(hdst + c->doff) : ddst + c->doff;
        L->bsz[i] = c->n;
        size_t end = c->doff + c->n;
        if (c->dir == D2H) {
            if (end > L->span_h)
                L->span_h = end;
        } else if (end > L->span_d)
            L->span_d = end;
        if (c->soff + c->n > CAP || end > CAP) {
            logf_("xbench: layout %s exceeds the buffers\n", L->name);
            exit(1);
        }
    }
    L->nl = n ? (int)((n + CB_KPARAMS_MAX - 1) / CB_KPARAMS_MAX) : 0;
    L->kp = L->nl ? xmalloc(sizeof(struct cb_kparams) * (size_t)L->nl) : NULL;
    unsigned per = L->nl ? (n + (unsigned)L->nl - 1) / (unsigned)L->nl : 0, k = 0;
    for (int j = 0; j < L->nl; j++) {
        struct cb_kparams *p = &L->kp[j];
        memset(p, 0, sizeof *p);
        for (unsigned m = 0; m < per && k < n; m++, k++) {
            p->c[m].dst = dst_addr_dev(&L->c[k]);
            p->c[m].src = src_addr_dev(&L->c[k]);
            p->c[m].bytes = L->c[k].n;
            p->count = m + 1;
        }
    }
}

static void layout_free(struct layout *L)
{
    free(L->c);
    free(L->bdst);
    free(L->bsrc);
    free(L->bsz);
    free(L->kp);
    memset(L, 0, sizeof *L);
}

/* count copies of size bytes, sources at i*stride + soff, destinations in a
 * random permutation of the slots (slot*stride + doff): scattered, as
 * KV-cache blocks are. */
static void layout_cell(struct layout *L, int dir, unsigned count, size_t size, size_t soff,
                        size_t doff)
{
    memset(L, 0, sizeof *L);
    size_t stride = (soff || doff || size % 256) ? ((size + 64 + 63) & ~(size_t)63) : size;
    L->dir = dir;
    L->count = count;
    L->size = size;
    if (soff || doff)
        snprintf(L->name, sizeof L->name, "%s %ux%s s+%zu d+%zu", dir_name[dir], count, KS(size),
                 soff, doff);
    else
        snprintf(L->name, sizeof L->name, "%s %ux%s", dir_name[dir], count, KS(size));
    L->c = xmalloc(sizeof(struct copy) * count);
    unsigned *perm = xmalloc(sizeof(unsigned) * count);
    for (unsigned i = 0; i < count; i++)
        perm[i] = i;
    for (unsigned i = count; i > 1; i--) {
        unsigned j = (unsigned)rndr(0, i - 1), t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    for (unsigned i = 0; i < count; i++)
        L->c[i] = (struct copy){dir, (size_t)i * stride + soff, (size_t)perm[i] * stride + doff, size};
    free(perm);
    layout_finish(L);
}

/* ------------------------------------------------------------------ verification */

#define POISON 0x5A

static void poison(const struct layout *L)
{
    if (L->span_h)
        memset(hdst, POISON, L->span_h);
    if (L->span_d)
        CK(cuMemsetD8(ddst, POISON, L->span_d));
}

static void expect_build(const struct layout *L)
{
    if (L->span_h)
        memset(hexp_h, POISON, L->span_h);
    if (L->span_d)
        memset(hexp_d, POISON, L->span_d);
    for (unsigned i = 0; i < L->count; i++) {
        const struct copy *c = &L->c[i];
        unsigned char *e = c->dir == D2H ? hexp_h : hexp_d;
        memcpy(e + c->doff, hsrc + c->soff, c->n); /* dsrc holds the same bytes as hsrc */
    }
}

/* Compare destinations with the expected images; 0 = equal. */
static int check(const struct layout *L, const char *variant)
{
    int bad = 0;
    if (L->span_d) {
        CK(cuMemcpyDtoH(hchk, ddst, L->span_d));
        if (memcmp(hchk, hexp_d, L->span_d)) {
            size_t k = 0;
            while (hchk[k] == hexp_d[k])
                k++;
            logf_("xbench: WRONG BYTES %s / %s: device dst offset %zu got %02x want %02x\n",
                  L->name, variant, k, hchk[k], hexp_d[k]);
            bad = 1;
        }
    }
    if (L->span_h && memcmp(hdst, hexp_h, L->span_h)) {
        size_t k = 0;
        while (hdst[k] == hexp_h[k])
            k++;
        logf_("xbench: WRONG BYTES %s / %s: host dst offset %zu got %02x want %02x\n", L->name,
              variant, k, hdst[k], hexp_h[k]);
        bad = 1;
    }
    g_checked++;
    if (bad)
        g_fail = 1;
    return bad;
}

/* ------------------------------------------------------------------ engines */

static void do_loop_range(const struct layout *L, unsigned off, unsigned n, CUstream st)
{
    for (unsigned i = off; i < off + n; i++) {
        const struct copy *c = &L->c[i];
        switch (c->dir) {
        case H2D:
            CK(cuMemcpyHtoDAsync(ddst + c->doff, hsrc + c->soff, c->n, st));
            break;
        case D2H:
            CK(cuMemcpyDtoHAsync(hdst + c->doff, dsrc + c->soff, c->n, st));
            break;
        default:
            CK(cuMemcpyDtoDAsync(ddst + c->doff, dsrc + c->soff, c->n, st));
        }
    }
}

/* hint_dir >= 0: location hints for that direction (as bench/bench_copies.c
 * sets them); otherwise zero hints, as the library sends. */
static void do_batch_h(CUdeviceptr *dst, CUdeviceptr *src, size_t *sz, size_t n, unsigned flags,
                       CUstream st, int hint_dir)
{
    CUmemcpyAttributes a;
    memset(&a, 0, sizeof a);
    a.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    a.flags = flags;
    if (hint_dir >= 0) {
        a.srcLocHint.type = hint_dir == H2D ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
        a.dstLocHint.type = hint_dir == D2H ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
        a.srcLocHint.id = a.dstLocHint.id = (int)g_dev;
    }
    size_t idx = 0;
    CK(cuMemcpyBatchAsync(dst, src, sz, n, &a, &idx, 1, st));
}

static void do_batch(CUdeviceptr *dst, CUdeviceptr *src, size_t *sz, size_t n, unsigned flags,
                     CUstream st)
{
    do_batch_h(dst, src, sz, n, flags, st, -1);
}

static int tier_for(unsigned count)
{
    for (int t = 0; t < 4; t++)
        if (count <= k_cap[t])
            return t;
    return 3;
}

/* grid 0 = one block per copy */
static void do_launch(struct cb_kparams *p, int grid, int block, int tier, CUstream st)
{
    unsigned g = grid > 0 ? (unsigned)grid : (p->count ? p->count : 1);
    int t = tier < 0 ? tier_for(p->count) : tier;
    void *args[] = {p};
    CK(cuLaunchKernel(k_copy[t], g, 1, 1, (unsigned)block, 1, 1, 0, st, args, NULL));
}

static void sync_stream(CUstream st) { CK(cuStreamSynchronize(st)); }

/* ------------------------------------------------------------------ variants */

enum vkind { VK_LOOP, VK_BATCH, VK_SCHED, VK_KERNEL, VK_CLOOP, VK_CHAND, VK_CSCHED, VK_CKERN,
             VK_CKSCHED };

struct variant {
    char name[32];
    enum vkind kind;
    int a, m;      /* schedule: first chunk a, then x m (m == 1: fixed chunks) */
    unsigned cost; /* ns of busy-wait per copy */
    int grid, block, tier;
    int stream; /* 0 non-blocking, 1 legacy, 2 blocking, 3 high priority */
    unsigned flags;
    int skip; /* not applicable to this cell */
    int hint; /* VK_BATCH: location hints */
    int failed;
    double *tot, *sub;
    int n;
};

static CUstream stream_of(int s)
{
    return s == 1 ? CU_STREAM_LEGACY : s == 2 ? s_blk : s == 3 ? s_hi : s_nb;
}

static unsigned next_chunk(const struct variant *v, unsigned prev)
{
    if (prev == 0)
        return (unsigned)v->a;
    return v->m <= 1 ? prev : prev * (unsigned)v->m;
}

/* Number of chunks a schedule makes of count copies. */
static unsigned sched_chunks(const struct variant *v, unsigned count, unsigned cap)
{
    unsigned done = 0, ch = 0, k = 0;
    while (done < count) {
        ch = next_chunk(v, ch);
        unsigned c = ch > cap ? cap : ch;
        done += c;
        k++;
    }
    return k;
}

static struct cb_kparams g_kscratch; /* built during cost-emulated kernel variants */
static CUdeviceptr *g_adst, *g_asrc;  /* descriptor arrays appended during cost variants */
static size_t *g_asz;

/* One repetition; returns total us, *sub = us until the last submit returned. */
static double run_variant(const struct layout *L, const struct variant *v, double *sub)
{
    CUstream st = stream_of(v->stream);
    const unsigned n = L->count;
    double t0, t1;
    switch (v->kind) {
    case VK_LOOP:
        t0 = now_us();
        do_loop_range(L, 0, n, st);
        t1 = now_us();
        break;
    case VK_BATCH:
        t0 = now_us();
        do_batch_h(L->bdst, L->bsrc, L->bsz, n, v->flags, st, v->hint ? L->dir : -1);
        t1 = now_us();
        break;
    case VK_SCHED: {
        t0 = now_us();
        unsigned done = 0, ch = 0;
        while (done < n) {
            ch = next_chunk(v, ch);
            unsigned c = ch < n - done ? ch : n - done;
            do_batch(L->bdst + done, L->bsrc + done, L->bsz + done, c, v->flags, st);
            done += c;
        }
        t1 = now_us();
        break;
    }
    case VK_KERNEL:
        t0 = now_us();
        for (int j = 0; j < L->nl; j++)
            do_launch(&L->kp[j], v->grid, v->block, v->tier, st);
        t1 = now_us();
        break;
    case VK_CLOOP:
        t0 = now_us();
        for (unsigned i = 0; i < n; i++) {
            spin_ns(v->cost);
            do_loop_range(L, i, 1, st);
        }
        t1 = now_us();
        break;
    case VK_CHAND: /* a hand-written batch: build the arrays, then one call */
        t0 = now_us();
        for (unsigned i = 0; i < n; i++) {
            spin_ns(v->cost);
            g_adst[i] = L->bdst[i];
            g_asrc[i] = L->bsrc[i];
            g_asz[i] = L->bsz[i];
        }
        do_batch(g_adst, g_asrc, g_asz, n, 0, st);
        t1 = now_us();
        break;
    case VK_CSCHED: { /* chunks go out as they fill */
        t0 = now_us();
        unsigned base = 0, ch = next_chunk(v, 0);
        for (unsigned i = 0; i < n; i++) {
            spin_ns(v->cost);
            g_adst[i] = L->bdst[i];
            g_asrc[i] = L->bsrc[i];
            g_asz[i] = L->bsz[i];
            if (i + 1 - base == ch) {
                do_batch(g_adst + base, g_asrc + base, g_asz + base, ch, 0, st);
                base = i + 1;
                ch = next_chunk(v, ch);
            }
        }
        if (base < n)
            do_batch(g_adst + base, g_asrc + base, g_asz + base, n - base, 0, st);
        t1 = now_us();
        break;
    }
    case VK_CKERN:
    case VK_CKSCHED: { /* descriptors appended to the kernel parameter */
        t0 = now_us();
        unsigned base = 0, ch = v->kind == VK_CKERN ? CB_KPARAMS_MAX : next_chunk(v, 0);
        if (ch > CB_KPARAMS_MAX)
            ch = CB_KPARAMS_MAX;
        for (unsigned i = 0; i < n; i++) {
            spin_ns(v->cost);
            struct cb_kcopy *d = &g_kscratch.c[i - base];
            d->dst = dst_addr_dev(&L->c[i]);
            d->src = src_addr_dev(&L->c[i]);
            d->bytes = L->c[i].n;
            if (i + 1 - base == ch) {
                g_kscratch.count = ch;
                do_launch(&g_kscratch, v->grid, v->block, v->tier, st);
                base = i + 1;
                if (v->kind == VK_CKSCHED) {
                    ch = next_chunk(v, ch);
                    if (ch > CB_KPARAMS_MAX)
                        ch = CB_KPARAMS_MAX;
                }
            }
        }
        if (base < n) {
            g_kscratch.count = n - base;
            do_launch(&g_kscratch, v->grid, v->block, v->tier, st);
        }
        t1 = now_us();
        break;
    }
    default:
        abort();
    }
    sync_stream(st);
    double t2 = now_us();
    *sub = t1 - t0;
    return t2 - t0;
}

#define g_samples g_d[D_SAMPLES]

/* Verify every variant once, then warm-ups and reps round-robin. */
static void measure(const char *section, const struct layout *L, struct variant *vs, int nv,
                    int reps)
{
    expect_build(L);
    for (int i = 0; i < nv; i++) {
        struct variant *v = &vs[i];
        v->n = 0;
        v->tot = xmalloc(sizeof(double) * (size_t)reps);
        v->sub = xmalloc(sizeof(double) * (size_t)reps);
        if (v->skip)
            continue;
        poison(L);
        double s;
        run_variant(L, v, &s);
        v->failed = check(L, v->name);
    }
    for (int r = 0; r < O.warm + reps; r++) {
        for (int k = 0; k < nv; k++) {
            struct variant *v = &vs[(k + r) % nv];
            if (v->skip || v->failed)
                continue;
            double s, t = run_variant(L, v, &s);
            if (r >= O.warm) {
                v->tot[v->n] = t;
                v->sub[v->n] = s;
                v->n++;
                if (g_samples)
                    fprintf(g_samples, "%s,%s,%s,%d,%.3f,%.3f\n", section, L->name, v->name,
                            r - O.warm, s, t);
            }
        }
    }
}

static void variants_free(struct variant *vs, int nv)
{
    for (int i = 0; i < nv; i++) {
        free(vs[i].tot);
        free(vs[i].sub);
        vs[i].tot = vs[i].sub = NULL;
    }
}

static double vmed(const struct variant *v)
{
    if (v->failed)
        return -2; /* printed as BAD */
    if (v->skip || v->n == 0)
        return -1;
    return stats(v->tot, v->n).med;
}
static double vsub(const struct variant *v)
{
    if (v->skip || v->failed || v->n == 0)
        return -1;
    return stats(v->sub, v->n).med;
}

#define g_p1 g_d[D_P1]
#define g_p2 g_d[D_P2]

static void csv_variants(FILE *f, const char *section, const struct layout *L,
                         const struct variant *vs, int nv)
{
    if (!f)
        return;
    for (int i = 0; i < nv; i++) {
        const struct variant *v = &vs[i];
        if (v->skip)
            continue;
        struct stat3 t = stats(v->tot, v->n), s = stats(v->sub, v->n);
        fprintf(f, "%s,%s,%s,%u,%zu,%s,%d,%d,%u,%d,%d,%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%s\n",
                section, L->name, L->dir >= 0 ? dir_name[L->dir] : "mix", L->count, L->size,
                v->name, (int)v->kind, v->a * 1000 + v->m, v->cost, v->grid, v->block, v->tier,
                v->stream, v->n, t.med, t.min, t.max, s.med, s.min, s.max,
                v->failed ? "WRONG" : "ok");
    }
}

/* ------------------------------------------------------------------ summary buffer */

/* Three parts, printed in this order: part 4 (least needed if the reader's
 * view is cut at the top), parts 1-3, then the facts, verify and verdict. */
enum { SUM_COSTS, SUM_MAIN, SUM_TAIL, SUM_N };
static char *g_sum[SUM_N];
static size_t g_sum_len[SUM_N];
static FILE *g_sumv[SUM_N];
static FILE *g_sumf; /* the one sumf writes to */

static void sumf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(g_sumf, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ part 1 */

static struct variant mk(const char *name, enum vkind k)
{
    struct variant v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "%s", name);
    v.kind = k;
    v.block = CB_KBLOCK_DEFAULT;
    v.tier = 3;
    return v;
}

static void part1(void)
{
    static const unsigned cells_full[][2] = {{64, 4096},   {256, 4096},  {1024, 4096},
                                             {256, 16384}, {1024, 16384}, {256, 65536}};
    static const unsigned cells_quick[][2] = {{256, 4096}, {1024, 4096}, {256, 16384}};
    /* schedules: {first, mult} */
    static const int sch_full[][2] = {{16, 1}, {32, 1}, {64, 1}, {128, 1}, {256, 1},
                                      {8, 2},  {16, 2}, {32, 2}, {32, 4}, {64, 2}};
    static const int sch_quick[][2] = {{32, 1}, {128, 1}, {16, 2}, {32, 4}};
    static const int csch_full[][2] = {{32, 1}, {64, 1}, {16, 2}, {32, 2}, {32, 4}};
    static const int csch_quick[][2] = {{32, 1}, {16, 2}, {32, 4}};
    static const unsigned costs_full[] = {100, 1000}, costs_quick[] = {1000};

    const unsigned(*cells)[2] = O.quick ? cells_quick : cells_full;
    int ncells = O.quick ? 3 : 6;
    const int(*sch)[2] = O.quick ? sch_quick : sch_full;
    int nsch = O.quick ? 4 : 10;
    const int(*csch)[2] = O.quick ? csch_quick : csch_full;
    int ncsch = O.quick ? 3 : 5;
    const unsigned *costs = O.quick ? costs_quick : costs_full;
    int ncost = O.quick ? 1 : 2;

    /* table heads */
    char h1[512] = "", h2[512] = "";
    for (int s = 0; s < nsch; s++) {
        char nm[16];
        if (sch[s][1] == 1)
            snprintf(nm, sizeof nm, "f%d", sch[s][0]);
        else
            snprintf(nm, sizeof nm, "g%dx%d", sch[s][0], sch[s][1]);
        size_t l = strlen(h1);
        snprintf(h1 + l, sizeof h1 - l, " %5s", nm);
    }
    char *t1 = NULL, *t2 = NULL;
    size_t t1n = 0, t2n = 0;
    FILE *f1 = open_memstream(&t1, &t1n), *f2 = open_memstream(&t2, &t2n);
    for (int c = 0; c < ncost; c++) {
        size_t l = strlen(h2);
        snprintf(h2 + l, sizeof h2 - l, " | %5s %5s %5s %-6s %5s %4s", "loop", "hand", "kern",
                 "best", "us", "b/h");
    }

    for (int d = 0; d < 3; d++)
        for (int ci = 0; ci < ncells; ci++) {
            if (elapsed_s() > O.budget_s) {
                logf_("xbench: budget reached, part 1 stops at %s\n", dir_name[d]);
                goto out;
            }
            struct layout L;
            layout_cell(&L, d, cells[ci][0], cells[ci][1], 0, 0);
            logf_("[%5.0fs] part1 %s\n", elapsed_s(), L.name);
            struct variant vs[64];
            int nv = 0;
            vs[nv++] = mk("loop", VK_LOOP);
            vs[nv++] = mk("loop2", VK_LOOP);
            vs[nv++] = mk("batch", VK_BATCH);
            vs[nv] = mk("batchH", VK_BATCH); /* with location hints */
            vs[nv++].hint = 1;
            int s0 = nv;
            for (int s = 0; s < nsch; s++) {
                struct variant v = mk("", VK_SCHED);
                v.a = sch[s][0];
                v.m = sch[s][1];
                if (v.m == 1)
                    snprintf(v.name, sizeof v.name, "f%d", v.a);
                else
                    snprintf(v.name, sizeof v.name, "g%dx%d", v.a, v.m);
                v.skip = sched_chunks(&v, L.count, 1u << 30) < 2; /* = batch */
                vs[nv++] = v;
            }
            int c0 = nv, per_cost = 4 + ncsch;
            for (int c = 0; c < ncost; c++) {
                struct variant v = mk("", VK_CLOOP);
                v.cost = costs[c];
                snprintf(v.name, sizeof v.name, "c%u:loop", costs[c]);
                vs[nv++] = v;
                v.kind = VK_CHAND;
                snprintf(v.name, sizeof v.name, "c%u:hand", costs[c]);
                vs[nv++] = v;
                v.kind = VK_CKERN; /* one kernel launch at the end, grid = SMs */
                v.grid = g_sms;
                v.tier = -1;
                snprintf(v.name, sizeof v.name, "c%u:kern", costs[c]);
                vs[nv++] = v;
                v.kind = VK_CKSCHED; /* kernel launches as chunks fill: 32, x4 */
                v.a = 32;
                v.m = 4;
                snprintf(v.name, sizeof v.name, "c%u:k32x4", costs[c]);
                vs[nv++] = v;
                for (int s = 0; s < ncsch; s++) {
                    struct variant w = mk("", VK_CSCHED);
                    w.cost = costs[c];
                    w.a = csch[s][0];
                    w.m = csch[s][1];
                    if (w.m == 1)
                        snprintf(w.name, sizeof w.name, "c%u:f%d", costs[c], w.a);
                    else
                        snprintf(w.name, sizeof w.name, "c%u:g%dx%d", costs[c], w.a, w.m);
                    w.skip = sched_chunks(&w, L.count, 1u << 30) < 2;
                    vs[nv++] = w;
                }
            }
            if (!g_have_batch)
                for (int i = 0; i < nv; i++)
                    if (vs[i].kind == VK_BATCH || vs[i].kind == VK_SCHED ||
                        vs[i].kind == VK_CHAND || vs[i].kind == VK_CSCHED)
                        vs[i].skip = 1;
            measure("part1", &L, vs, nv, O.reps);
            csv_variants(g_p1, "part1", &L, vs, nv);

            /* 1a row */
            double loop = vmed(&vs[0]), loop2 = vmed(&vs[1]), batch = vmed(&vs[2]);
            fprintf(f1, "%-12s %5s %4.2f %5s %5s %5s |", L.name, FU(loop),
                    loop > 0 ? loop2 / loop : 0, FU(batch), FU(vsub(&vs[2])), FU(vmed(&vs[3])));
            int best = -1;
            for (int s = s0; s < s0 + nsch; s++) {
                double m = vmed(&vs[s]);
                fprintf(f1, " %5s", vs[s].skip ? "=b" : FU(m));
                if (m > 0 && (best < 0 || m < vmed(&vs[best])))
                    best = s;
            }
            if (best >= 0 && batch > 0)
                fprintf(f1, " | %s %.2f\n", vs[best].name, vmed(&vs[best]) / batch);
            else
                fprintf(f1, " |\n");
            /* 1b row */
            fprintf(f2, "%-12s", L.name);
            for (int c = 0; c < ncost; c++) {
                struct variant *b = &vs[c0 + c * per_cost];
                double hand = vmed(&b[1]);
                int bs = -1;
                for (int s = 3; s < per_cost; s++) {
                    double m = vmed(&b[s]);
                    if (m > 0 && (bs < 0 || m < vmed(&b[bs])))
                        bs = s;
                }
                const char *bn = bs >= 0 ? strchr(b[bs].name, ':') + 1 : "-";
                fprintf(f2, " | %5s %5s %5s %-6s %5s %4.2f", FU(vmed(&b[0])), FU(hand),
                        FU(vmed(&b[2])), bn, bs >= 0 ? FU(vmed(&b[bs])) : "-",
                        bs >= 0 && hand > 0 ? vmed(&b[bs]) / hand : 0);
            }
            fprintf(f2, "\n");
            variants_free(vs, nv);
            layout_free(&L);
        }
out:
    fclose(f1);
    fclose(f2);
    sumf("== 1a batch API, total us, median of %d; bcall = batch call alone; hint = with location "
         "hints; fN/gAxM = chunk schedules ==\n",
         O.reps);
    sumf("%-12s %5s %4s %5s %5s %5s |%s | best\n", "cell", "loop", "A/A", "batch", "bcall",
         "hint", h1);
    sumf("%s", t1 ? t1 : "");
    {
        char cl[64] = "";
        for (int c = 0; c < ncost; c++) {
            size_t l = strlen(cl);
            snprintf(cl + l, sizeof cl - l, "%s%uns", c ? ", " : "", costs[c]);
        }
        sumf("== 1b busy-wait per copy issued (%s), total us; b/h = best schedule / hand ==\n",
             cl);
    }
    sumf("%-12s%s\n", "cell", h2);
    sumf("%s", t2 ? t2 : "");
    free(t1);
    free(t2);
}

/* ------------------------------------------------------------------ part 2 */

static const int grids_full[] = {8, 16, 32, 66, 132, 264, 528, 0};
static const int grids_quick[] = {16, 132, 528, 0};
static const int blocks_full[] = {128, 256, 512};

static void gname(char *b, size_t n, int grid)
{
    if (grid)
        snprintf(b, n, "%d", grid);
    else
        snprintf(b, n, "cnt");
}

static void part2(void)
{
    static const unsigned cells_full[][3] = {
        {H2D, 64, 4096},   {H2D, 256, 4096},   {H2D, 1024, 4096},  {H2D, 256, 16384},
        {H2D, 1024, 16384}, {H2D, 256, 65536},  {D2H, 64, 4096},    {D2H, 256, 4096},
        {D2H, 1024, 4096},  {D2H, 256, 16384},  {D2H, 1024, 16384}, {D2H, 256, 65536},
        {D2D, 64, 4096},    {D2D, 256, 4096},   {D2D, 1024, 4096},  {D2D, 256, 16384},
        {D2D, 1024, 16384}, {D2D, 256, 65536},  {D2D, 4096, 4096}};
    static const unsigned cells_quick[][3] = {
        {H2D, 1024, 4096}, {D2H, 1024, 4096}, {D2D, 1024, 4096}, {H2D, 1024, 16384},
        {D2D, 4096, 4096}};
    const unsigned(*cells)[3] = O.quick ? cells_quick : cells_full;
    int ncells = O.quick ? 5 : 19;
    const int *grids = O.quick ? grids_quick : grids_full;
    int ngr = O.quick ? 4 : 8;
    /* matrix columns: cells shown grid x block */
    static const unsigned mcells[][3] = {{H2D, 1024, 4096}, {D2H, 1024, 4096},
                                         {D2D, 1024, 4096}, {D2D, 4096, 4096},
                                         {H2D, 1024, 16384}};
    double mat[8][5][3];
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 5; b++)
            for (int c = 0; c < 3; c++)
                mat[a][b][c] = -1;

    char *t = NULL;
    size_t tn = 0;
    FILE *f = open_memstream(&t, &tn);
    for (int ci = 0; ci < ncells; ci++) {
        if (elapsed_s() > O.budget_s) {
            logf_("xbench: budget reached, part 2 stops\n");
            break;
        }
        struct layout L;
        layout_cell(&L, (int)cells[ci][0], cells[ci][1], cells[ci][2], 0, 0);
        logf_("[%5.0fs] part2 %s\n", elapsed_s(), L.name);
        struct variant vs[64];
        int nv = 0;
        vs[nv++] = mk("loop", VK_LOOP);
        vs[nv++] = mk("loop2", VK_LOOP);
        vs[nv++] = mk("batch", VK_BATCH);
        if (!g_have_batch)
            vs[2].skip = 1;
        int k0 = nv;
        for (int g = 0; g < ngr; g++)
            for (int b = 0; b < 3; b++) {
                if (O.quick && b != 1 && grids[g] != 132)
                    continue;
                struct variant v = mk("", VK_KERNEL);
                v.grid = grids[g];
                v.block = blocks_full[b];
                char gn[16];
                gname(gn, sizeof gn, v.grid);
                snprintf(v.name, sizeof v.name, "k%s/%d", gn, v.block);
                vs[nv++] = v;
            }
        int kend = nv;
        /* legacy and blocking streams, tier that fits */
        int x0 = nv;
        const int xgrid[2] = {132, 0};
        for (int x = 0; x < 2; x++) {
            char gn[16];
            gname(gn, sizeof gn, xgrid[x]);
            struct variant v = mk("", VK_KERNEL);
            v.grid = xgrid[x];
            v.stream = 1;
            snprintf(v.name, sizeof v.name, "leg:k%s/256", gn);
            vs[nv++] = v;
            v.stream = 2;
            snprintf(v.name, sizeof v.name, "blk:k%s/256", gn);
            vs[nv++] = v;
            v.stream = 0;
            v.tier = -1;
            snprintf(v.name, sizeof v.name, "fit:k%s/256", gn);
            v.skip = L.count > CB_KTIER_16K; /* the full tier anyway */
            vs[nv++] = v;
        }
        measure("part2", &L, vs, nv, O.reps2);
        csv_variants(g_p2, "part2", &L, vs, nv);

        int best = -1, i132 = -1, icnt = -1;
        for (int i = k0; i < kend; i++) {
            double m = vmed(&vs[i]);
            if (m > 0 && (best < 0 || m < vmed(&vs[best])))
                best = i;
            if (vs[i].block == 256 && vs[i].grid == 132)
                i132 = i;
            if (vs[i].block == 256 && vs[i].grid == 0)
                icnt = i;
            for (int mc = 0; mc < 5; mc++)
                if (mcells[mc][0] == cells[ci][0] && mcells[mc][1] == cells[ci][1] &&
                    mcells[mc][2] == cells[ci][2])
                    for (int g = 0; g < ngr; g++)
                        if (grids[g] == vs[i].grid)
                            mat[g][mc][vs[i].block == 128 ? 0 : vs[i].block == 256 ? 1 : 2] = m;
        }
        double loop = vmed(&vs[0]), batch = vmed(&vs[2]), kb = best >= 0 ? vmed(&vs[best]) : -1;
        fprintf(f, "%-12s %5s %4.2f %5s | %-7s %5s %5s %5s | %5s %5s %5s %5s %5s |%5.1f %5.1f\n",
                L.name, FU(loop), loop > 0 ? vmed(&vs[1]) / loop : 0, FU(batch),
                best >= 0 ? vs[best].name + 1 : "-", FU(kb), i132 >= 0 ? FU(vmed(&vs[i132])) : "-",
                icnt >= 0 ? FU(vmed(&vs[icnt])) : "-", FU(vmed(&vs[x0])), FU(vmed(&vs[x0 + 3])),
                FU(vmed(&vs[x0 + 1])), FU(vmed(&vs[x0 + 2])),
                i132 >= 0 ? FU(vsub(&vs[i132])) : "-", kb > 0 ? loop / kb : 0,
                kb > 0 && batch > 0 ? batch / kb : 0);
        variants_free(vs, nv);
        layout_free(&L);
    }
    fclose(f);
    sumf("== 2 copy kernel, total us, median of %d; grid/block; leg = legacy, blk = blocking "
         "stream; kcall = launch call ==\n",
         O.reps2);
    sumf("%-12s %5s %4s %5s | %-7s %5s %5s %5s | %5s %5s %5s %5s %5s |%5s %5s\n", "cell", "loop",
         "A/A", "batch", "kbest", "us", "k132", "kcnt", "leg", "legC", "blk", "fit", "kcall",
         "lp/k", "bt/k");
    sumf("%s", t ? t : "");
    free(t);
    sumf("== 2m kernel us, grid x block 128/256/512: h2d 1024x4K | d2h 1024x4K | d2d 1024x4K | "
         "d2d 4096x4K | h2d 1024x16K ==\n");
    for (int g = 0; g < ngr; g++) {
        char gn[16];
        gname(gn, sizeof gn, grids[g]);
        sumf("%-4s", gn);
        for (int mc = 0; mc < 5; mc++) {
            sumf(" |");
            for (int b = 0; b < 3; b++)
                sumf(" %5s", FU(mat[g][mc][b]));
        }
        sumf("\n");
    }
}

/* ------------------------------------------------------------------ part 2b */

static void part2b(void)
{
    /* dir, count, size, soff, doff */
    static const unsigned cells[][5] = {
        {D2D, 1024, 4096, 0, 0},  {D2D, 1024, 4096, 1, 0},  {D2D, 1024, 4096, 4, 0},
        {D2D, 1024, 4096, 8, 0},  {D2D, 1024, 4096, 5, 5},  {D2D, 1024, 4095, 0, 0},
        {D2D, 1024, 100, 0, 0},   {D2D, 1024, 1, 0, 0},     {D2D, 16, 1 << 20, 0, 0},
        {H2D, 1024, 4096, 1, 0},  {H2D, 1024, 4096, 4, 0},  {H2D, 16, 1 << 20, 0, 0},
        {D2H, 1024, 4096, 0, 3},  {D2H, 16, 1 << 20, 0, 0}};
    int ncells = O.quick ? 6 : 14;
    char *t = NULL;
    size_t tn = 0;
    FILE *f = open_memstream(&t, &tn);
    for (int ci = 0; ci < ncells; ci++) {
        if (elapsed_s() > O.budget_s) {
            logf_("xbench: budget reached, part 2b stops\n");
            break;
        }
        struct layout L;
        layout_cell(&L, (int)cells[ci][0], cells[ci][1], cells[ci][2], cells[ci][3],
                    cells[ci][4]);
        logf_("[%5.0fs] part2b %s\n", elapsed_s(), L.name);
        struct variant vs[8];
        int nv = 0;
        vs[nv++] = mk("loop", VK_LOOP);
        vs[nv++] = mk("loop2", VK_LOOP);
        vs[nv++] = mk("batch", VK_BATCH);
        if (!g_have_batch)
            vs[2].skip = 1;
        const int gr[3] = {132, 528, 0};
        for (int g = 0; g < 3; g++) {
            struct variant v = mk("", VK_KERNEL);
            v.grid = gr[g];
            char gn[16];
            gname(gn, sizeof gn, gr[g]);
            snprintf(v.name, sizeof v.name, "k%s/256", gn);
            vs[nv++] = v;
        }
        measure("align", &L, vs, nv, O.reps2);
        csv_variants(g_p2, "align", &L, vs, nv);
        double loop = vmed(&vs[0]), batch = vmed(&vs[2]);
        fprintf(f, "%-24s %5s %4.2f %5s | %5s %5s %5s |%5.1f %5.1f\n", L.name, FU(loop),
                loop > 0 ? vmed(&vs[1]) / loop : 0, FU(batch), FU(vmed(&vs[3])), FU(vmed(&vs[4])),
                FU(vmed(&vs[5])), vmed(&vs[3]) > 0 ? loop / vmed(&vs[3]) : 0,
                vmed(&vs[3]) > 0 && batch > 0 ? batch / vmed(&vs[3]) : 0);
        variants_free(vs, nv);
        layout_free(&L);
    }
    fclose(f);
    sumf("== 2b alignment/sizes (s+,d+ = src/dst offset), block 256, total us ==\n");
    sumf("%-24s %5s %4s %5s | %5s %5s %5s |%5s %5s\n", "cell", "loop", "A/A", "batch", "k132",
         "k528", "kcnt", "lp/k", "bt/k");
    sumf("%s", t ? t : "");
    free(t);
}

/* ------------------------------------------------------------------ verify */

static void verify_random(void)
{
    int rounds = O.quick ? 40 : 150, bad = 0;
    logf_("[%5.0fs] verify: %d random mixed launches\n", elapsed_s(), rounds);
    for (int r = 0; r < rounds; r++) {
        struct layout L;
        memset(&L, 0, sizeof L);
        unsigned count = (unsigned)(rndr(0, 3) == 0 ? rndr(1, 40) : rndr(1, CB_KPARAMS_MAX));
        if (r == 0)
            count = CB_KPARAMS_MAX;
        if (r == 1)
            count = 3000; /* several launches */
        L.dir = -1;
        L.count = count;
        snprintf(L.name, sizeof L.name, "verify#%d n=%u", r, count);
        L.c = xmalloc(sizeof(struct copy) * count);
        size_t so[3] = {0, 0, 0}, dof[3] = {0, 0, 0}; /* per direction cursors */
        size_t limit = CAP / 2;
        for (unsigned i = 0; i < count; i++) {
            int d = (int)rndr(0, 2);
            unsigned cl = (unsigned)rndr(0, 9);
            size_t n = cl < 3 ? rndr(1, 64) : cl < 7 ? rndr(1, 8192) : cl < 9 ? 4096 * rndr(1, 8)
                                                                              : rndr(1, 200000);
            int aligned = rndr(0, 1);
            /* D2H and the others write different buffers; H2D reads hsrc, the others dsrc */
            int sb = d == H2D ? 0 : 1, db = d == D2H ? 0 : 1;
            size_t s = so[sb] + (aligned ? 0 : rndr(0, 15)), t = dof[db] + (aligned ? 0 : rndr(0, 15));
            if (aligned) {
                s = (s + 15) & ~(size_t)15;
                t = (t + 15) & ~(size_t)15;
            }
            if (s + n + 64 > limit || t + n + 64 > limit)
                n = 1;
            so[sb] = s + n + rndr(1, 48);
            dof[db] = t + n + rndr(1, 48);
            L.c[i] = (struct copy){d, s, t, n};
        }
        layout_finish(&L);
        expect_build(&L);
        poison(&L);
        int grid = (int)(rndr(0, 3) == 0 ? 0 : rndr(1, 600));
        int block = (int)(rndr(0, 3) == 0 ? rndr(1, 1024) : 32 * rndr(1, 16));
        int tier = r % 3 == 0 ? -1 : 3;
        CUstream st = r % 5 == 0 ? CU_STREAM_LEGACY : s_nb;
        for (int j = 0; j < L.nl; j++)
            do_launch(&L.kp[j], grid, block, tier, st);
        sync_stream(st);
        char vn[64];
        snprintf(vn, sizeof vn, "kernel grid %d block %d tier %d", grid, block, tier);
        bad += check(&L, vn);
        layout_free(&L);
    }
    sumf("verify: %d random kernel runs, mixed directions/sizes/alignments: %s\n",
         rounds, bad ? "WRONG BYTES" : "all bytes and gaps correct");
}

/* ------------------------------------------------------------------ part 3 */

struct shape {
    const char *name;
    unsigned grid, block, smem;
    unsigned iters;
    int prio; /* copies on the high-priority stream */
    double alone_ms;
};

static double burn_once(const struct shape *sh, CUevent e0, CUevent e1)
{
    void *args[] = {&d_dummy, (void *)&sh->iters};
    CK(cuEventRecord(e0, s_A));
    CK(cuLaunchKernel(k_burn, sh->grid, 1, 1, sh->block, 1, 1, sh->smem, s_A, args, NULL));
    CK(cuEventRecord(e1, s_A));
    CK(cuStreamSynchronize(s_A));
    float ms;
    CK(cuEventElapsedTime(&ms, e0, e1));
    return ms;
}

static void calibrate(struct shape *sh, CUevent e0, CUevent e1, double target_ms)
{
    sh->iters = 20000;
    burn_once(sh, e0, e1);
    for (int k = 0; k < 3; k++) {
        double ms = burn_once(sh, e0, e1);
        double want_it = (double)sh->iters * target_ms / (ms > 0.01 ? ms : 0.01);
        if (want_it > 2e9)
            want_it = 2e9;
        sh->iters = (unsigned)want_it;
        if (ms > target_ms * 0.9 && ms < target_ms * 1.1)
            break;
    }
    sh->alone_ms = burn_once(sh, e0, e1);
}

struct engine {
    char name[24];
    int dir;   /* layout */
    int kind;  /* 0 nothing, 1 batch, 2 kernel */
    unsigned flags;
    int grid;
};

/* 40 runs on stream st; returns total us. */
static double copy_runs(const struct layout *L, const struct engine *e, CUstream st, int runs)
{
    double t0 = now_us();
    for (int r = 0; r < runs; r++) {
        if (e->kind == 1)
            do_batch(L->bdst, L->bsrc, L->bsz, L->count, e->flags, st);
        else
            for (int j = 0; j < L->nl; j++)
                do_launch(&L->kp[j], e->grid, CB_KBLOCK_DEFAULT, 3, st);
        CK(cuStreamSynchronize(st));
    }
    return now_us() - t0;
}

static void part3(void)
{
    const int runs = 40;
    struct shape shapes_full[4] = {
        {"full", 0, 512, 0, 0, 0, 0},     /* SMs x 4 x 512 threads: every thread slot, one wave */
        {"waves", 0, 512, 0, 0, 0, 0},    /* 16 waves of short blocks */
        {"wprio", 0, 512, 0, 0, 1, 0},    /* same, copies on a high-priority stream */
        {"smem", 0, 256, 160 << 10, 0, 0, 0}}; /* 1 block/SM, 160 KiB smem: room left */
    int nsh = O.quick ? 2 : 4;
    struct shape *shapes = shapes_full;
    if (O.quick) /* full and smem */
        shapes[1] = shapes_full[3];
    int maxb = g_maxthr_sm / 512;
    if (maxb < 1)
        maxb = 1;
    for (int s = 0; s < nsh; s++) {
        if (!strcmp(shapes[s].name, "full"))
            shapes[s].grid = (unsigned)(g_sms * maxb);
        else if (!strcmp(shapes[s].name, "smem"))
            shapes[s].grid = (unsigned)g_sms;
        else
            shapes[s].grid = (unsigned)(g_sms * maxb * 16);
    }
    CUevent e0, e1;
    CK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    int smem_ok = g_smem_optin >= (int)(160 << 10);
    if (smem_ok)
        CK(cuFuncSetAttribute(k_burn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 160 << 10));
    double target = O.quick ? 20.0 : 30.0;
    for (int s = 0; s < nsh; s++) {
        if (!strcmp(shapes[s].name, "smem") && !smem_ok) {
            shapes[s].smem = 0;
            shapes[s].name = "1blk";
        }
        calibrate(&shapes[s], e0, e1, target);
        logf_("[%5.0fs] part3 shape %s: grid %u block %u smem %u iters %u: %.2f ms\n",
              elapsed_s(), shapes[s].name, shapes[s].grid, shapes[s].block, shapes[s].smem,
              shapes[s].iters, shapes[s].alone_ms);
    }

    struct layout Lh, Ld;
    layout_cell(&Lh, H2D, 1024, 4096, 0, 0);
    layout_cell(&Ld, D2D, 1024, 4096, 0, 0);
    const int *grids = O.quick ? grids_quick : grids_full;
    int ngr = O.quick ? 4 : 8;
    struct engine es[32];
    int ne = 0;
    es[ne++] = (struct engine){"nothing", H2D, 0, 0, 0};
    es[ne++] = (struct engine){"nothing2", H2D, 0, 0, 0};
    for (int d = 0; d < 2; d++) {
        int dir = d ? D2D : H2D;
        if (g_have_batch) {
            struct engine e = {"", dir, 1, 0, 0};
            snprintf(e.name, sizeof e.name, "%s batch", dir_name[dir]);
            es[ne++] = e;
            if (dir == H2D) {
                e.flags = CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE;
                snprintf(e.name, sizeof e.name, "%s batch+ovl", dir_name[dir]);
                es[ne++] = e;
            }
        }
        for (int g = 0; g < ngr; g++) {
            struct engine e = {"", dir, 2, 0, grids[g] ? grids[g] : 1024};
            snprintf(e.name, sizeof e.name, "%s k%d", dir_name[dir], e.grid);
            es[ne++] = e;
        }
    }
    /* verify each engine once */
    for (int i = 0; i < ne; i++) {
        if (es[i].kind == 0)
            continue;
        const struct layout *L = es[i].dir == H2D ? &Lh : &Ld;
        expect_build(L);
        poison(L);
        copy_runs(L, &es[i], s_nb, 1);
        check(L, es[i].name);
    }
    int R = O.rounds;
    /* [shape][engine][round] */
    size_t cells = (size_t)nsh * (size_t)ne * (size_t)R;
    double *comp = xmalloc(sizeof(double) * cells), *cw = xmalloc(sizeof(double) * cells),
           *ca = xmalloc(sizeof(double) * cells);
    for (size_t i = 0; i < cells; i++)
        comp[i] = cw[i] = ca[i] = -1;
    FILE *tf = g_d[D_P3T];
    fprintf(tf, "shape,engine,round,compute_ms_with,copies_us_with,copies_us_alone\n");
    int done_shapes = 0;
    for (int s = 0; s < nsh; s++) {
        if (elapsed_s() > O.budget_s) {
            logf_("xbench: budget reached, part 3 stops before shape %s\n", shapes[s].name);
            break;
        }
        struct shape *sh = &shapes[s];
        CUstream B = sh->prio ? s_hi : s_nb;
        logf_("[%5.0fs] part3 shape %s, %d rounds x %d engines\n", elapsed_s(), sh->name, R, ne);
        /* warm-up: one of each */
        for (int i = 0; i < ne; i++)
            if (es[i].kind)
                copy_runs(es[i].dir == H2D ? &Lh : &Ld, &es[i], B, 2);
        for (int r = 0; r < R; r++)
            for (int k = 0; k < ne; k++) {
                int i = (k + r) % ne;
                const struct engine *e = &es[i];
                const struct layout *L = e->dir == H2D ? &Lh : &Ld;
                size_t at = ((size_t)s * (size_t)ne + (size_t)i) * (size_t)R + (size_t)r;
                /* with: compute first, then the copies */
                void *args[] = {&d_dummy, (void *)&sh->iters};
                CK(cuEventRecord(e0, s_A));
                CK(cuLaunchKernel(k_burn, sh->grid, 1, 1, sh->block, 1, 1, sh->smem, s_A, args,
                                  NULL));
                CK(cuEventRecord(e1, s_A));
                spin_ns(200000); /* let the compute kernel occupy the SMs */
                double w = e->kind ? copy_runs(L, e, B, runs) : 0;
                CK(cuStreamSynchronize(s_A));
                float ms;
                CK(cuEventElapsedTime(&ms, e0, e1));
                comp[at] = ms;
                cw[at] = w;
                /* alone */
                ca[at] = e->kind ? copy_runs(L, e, B, runs) : 0;
                fprintf(tf, "%s,%s,%d,%.4f,%.2f,%.2f\n", sh->name, e->name, r, comp[at],
                            cw[at], ca[at]);
            }
        done_shapes = s + 1;
    }

    FILE *pf = g_d[D_P3];
    fprintf(pf, "shape,grid,block,smem,iters,engine,rounds,comp_ms_med,comp_ms_min,comp_ms_max,"
                "comp_rel_pct,copies_with_us_med,copies_with_us_min,copies_with_us_max,"
                "copies_alone_us_med,copies_alone_us_min,copies_alone_us_max\n");
    sumf("== 3 interference, median of %d rounds: compute time %%, x = %d copy runs with/without "
         "compute ==\n",
         R, runs);
    sumf("%-13s %5s", "engine", "alone");
    for (int s = 0; s < done_shapes; s++)
        sumf(" | %-5.5s %5s", shapes[s].name, "x");
    sumf("\n");
    double base[4];
    for (int s = 0; s < done_shapes; s++)
        base[s] = stats(&comp[((size_t)s * (size_t)ne + 0) * (size_t)R], R).med;
    for (int i = 0; i < ne; i++) {
        double alone = -1;
        if (es[i].kind && done_shapes)
            alone = stats(&ca[((size_t)0 * (size_t)ne + (size_t)i) * (size_t)R], R).med / 1e3;
        sumf("%-13s %5s", es[i].name, es[i].kind ? FU(alone) : "");
        for (int s = 0; s < done_shapes; s++) {
            size_t at = ((size_t)s * (size_t)ne + (size_t)i) * (size_t)R;
            struct stat3 c = stats(&comp[at], R), w = stats(&cw[at], R), a = stats(&ca[at], R);
            double rel = base[s] > 0 ? (c.med / base[s] - 1) * 100 : 0;
            if (es[i].kind == 0 && i == 0)
                sumf(" | %5s %5s", FU(c.med), "ms");
            else
                sumf(" | %+5.1f %5s", rel, es[i].kind ? FU(a.med > 0 ? w.med / a.med : 0) : "");
            fprintf(pf, "%s,%u,%u,%u,%u,%s,%d,%.4f,%.4f,%.4f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f\n",
                        shapes[s].name, shapes[s].grid, shapes[s].block, shapes[s].smem,
                        shapes[s].iters, es[i].name, R, c.med, c.min, c.max, rel, w.med, w.min,
                        w.max, a.med, a.min, a.max);
        }
        sumf("\n");
    }
    free(comp);
    free(cw);
    free(ca);
    layout_free(&Lh);
    layout_free(&Ld);
    CK(cuEventDestroy(e0));
    CK(cuEventDestroy(e1));
}

/* ------------------------------------------------------------------ part 4 */

#define g_p4 g_d[D_P4]

static double *g_cs; /* samples, ns */

static void cost_row(const char *what, int n)
{
    struct stat3 s = stats(g_cs, n);
    double *t = xmalloc(sizeof(double) * (size_t)n);
    memcpy(t, g_cs, sizeof(double) * (size_t)n);
    qsort(t, (size_t)n, sizeof(double), cmp_dbl);
    double p10 = t[n / 10], p90 = t[(n * 9) / 10];
    free(t);
    sumf("%-42s %7.0f %6.0f\n", what, s.med, p90);
    (void)p10;
    if (g_p4)
        fprintf(g_p4, "\"%s\",%d,%.1f,%.1f,%.1f,%.1f,%.1f\n", what, n, s.med, s.min, p10, p90,
                s.max);
}

#define TIME_N(n, call)                                                                    \
    do {                                                                                   \
        for (int i_ = 0; i_ < (n); i_++) {                                                 \
            uint64_t a_ = now_ns();                                                        \
            call;                                                                          \
            g_cs[i_] = (double)(now_ns() - a_);                                            \
        }                                                                                  \
    } while (0)

static void part4(void)
{
    int N = O.costn;
    g_cs = xmalloc(sizeof(double) * (size_t)N);
    logf_("[%5.0fs] part4 costs, %d samples each\n", elapsed_s(), N);
    sumf("== 4 host ns per call, each timed alone (includes one clock read) ==\n");
    sumf("%-42s %7s %6s\n", "call", "median", "p90");

    /* clock */
    for (int i = 0; i < N; i++) {
        uint64_t a = now_ns();
        uint64_t b = now_ns();
        g_cs[i] = (double)(b - a);
    }
    cost_row("clock_gettime(MONOTONIC)", N);
    /* spin calibration for part 1 */
    for (int i = 0; i < 1000; i++) {
        uint64_t a = now_ns();
        spin_ns(100);
        g_cs[i] = (double)(now_ns() - a);
    }
    cost_row("busy-wait 100 ns (part 1 c=.1us)", 1000);
    for (int i = 0; i < 1000; i++) {
        uint64_t a = now_ns();
        spin_ns(1000);
        g_cs[i] = (double)(now_ns() - a);
    }
    cost_row("busy-wait 1000 ns (part 1 c=1us)", 1000);

    CK(cuStreamSynchronize(s_nb));
    CUresult qr = CUDA_SUCCESS;
    TIME_N(N, qr = cuStreamQuery(s_nb));
    if (qr != CUDA_SUCCESS)
        die_cu("cuStreamQuery(idle)", qr, __LINE__);
    cost_row("cuStreamQuery (idle stream)", N);

    CUevent ev, evt;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CK(cuEventCreate(&evt, CU_EVENT_DEFAULT));
    for (int i = 0; i < N; i++) {
        uint64_t a = now_ns();
        CK(cuEventRecord(ev, s_nb));
        g_cs[i] = (double)(now_ns() - a);
        if (i % 512 == 511)
            CK(cuStreamSynchronize(s_nb));
    }
    cost_row("cuEventRecord (DISABLE_TIMING)", N);
    for (int i = 0; i < N; i++) {
        uint64_t a = now_ns();
        CK(cuEventRecord(evt, s_nb));
        g_cs[i] = (double)(now_ns() - a);
        if (i % 512 == 511)
            CK(cuStreamSynchronize(s_nb));
    }
    cost_row("cuEventRecord (timing)", N);
    CK(cuEventRecord(ev, s_blk));
    for (int i = 0; i < N; i++) {
        uint64_t a = now_ns();
        CK(cuStreamWaitEvent(s_nb, ev, 0));
        g_cs[i] = (double)(now_ns() - a);
        if (i % 512 == 511)
            CK(cuStreamSynchronize(s_nb));
    }
    cost_row("cuStreamWaitEvent (other stream's event)", N);
    CK(cuStreamSynchronize(s_nb));
    CK(cuStreamSynchronize(s_blk));

    /* kernel launches: 4 copies of 64 B (D2D), grid 4, block 64; and 1360 */
    static struct cb_kparams kp;
    memset(&kp, 0, sizeof kp);
    kp.count = 4;
    for (unsigned i = 0; i < CB_KPARAMS_MAX; i++) {
        kp.c[i].dst = ddst + (uint64_t)i * 128;
        kp.c[i].src = dsrc + (uint64_t)i * 128;
        kp.c[i].bytes = 64;
    }
    for (int t = 0; t < 4; t++) {
        void *args[] = {&kp};
        for (int i = 0; i < N; i++) {
            uint64_t a = now_ns();
            CK(cuLaunchKernel(k_copy[t], 4, 1, 1, 64, 1, 1, 0, s_nb, args, NULL));
            g_cs[i] = (double)(now_ns() - a);
            if (i % 256 == 255)
                CK(cuStreamSynchronize(s_nb));
        }
        CK(cuStreamSynchronize(s_nb));
        char w[96];
        snprintf(w, sizeof w, "cuLaunchKernel %u B param, 4 copies", CB_KPARAMS_BYTES(k_cap[t]));
        cost_row(w, N);
    }
    {
        kp.count = CB_KPARAMS_MAX;
        void *args[] = {&kp};
        int n2 = N / 4;
        for (int i = 0; i < n2; i++) {
            uint64_t a = now_ns();
            CK(cuLaunchKernel(k_copy[3], 132, 1, 1, 256, 1, 1, 0, s_nb, args, NULL));
            g_cs[i] = (double)(now_ns() - a);
            if (i % 64 == 63)
                CK(cuStreamSynchronize(s_nb));
        }
        CK(cuStreamSynchronize(s_nb));
        cost_row("cuLaunchKernel 32648 B, 1360 copies, g132", n2);
        for (int i = 0; i < n2; i++) {
            uint64_t a = now_ns();
            CK(cuLaunchKernel(k_copy[3], 132, 1, 1, 256, 1, 1, 0, CU_STREAM_LEGACY, args, NULL));
            g_cs[i] = (double)(now_ns() - a);
            if (i % 64 == 63)
                CK(cuStreamSynchronize(CU_STREAM_LEGACY));
        }
        CK(cuStreamSynchronize(CU_STREAM_LEGACY));
        cost_row("  same, on CU_STREAM_LEGACY", n2);
    }
    /* single copies (enqueue only) */
    {
        int n2 = N / 4;
        for (int i = 0; i < n2; i++) {
            uint64_t a = now_ns();
            CK(cuMemcpyHtoDAsync(ddst + (size_t)(i % 64) * 4096, hsrc + (size_t)(i % 64) * 4096,
                                 4096, s_nb));
            g_cs[i] = (double)(now_ns() - a);
            if (i % 64 == 63)
                CK(cuStreamSynchronize(s_nb));
        }
        CK(cuStreamSynchronize(s_nb));
        cost_row("cuMemcpyHtoDAsync 4 KiB pinned (enqueue)", n2);
        for (int i = 0; i < n2; i++) {
            uint64_t a = now_ns();
            CK(cuMemcpyDtoDAsync(ddst + (size_t)(i % 64) * 4096, dsrc + (size_t)(i % 64) * 4096,
                                 4096, s_nb));
            g_cs[i] = (double)(now_ns() - a);
            if (i % 64 == 63)
                CK(cuStreamSynchronize(s_nb));
        }
        CK(cuStreamSynchronize(s_nb));
        cost_row("cuMemcpyDtoDAsync 4 KiB (enqueue)", n2);
    }

    /* pointer attributes */
    size_t regsz = 1 << 20;
    unsigned char *reg = aligned_alloc(4096, regsz), *pageable = xmalloc(4096);
    if (!reg) {
        logf_("xbench: aligned_alloc failed\n");
        exit(1);
    }
    memset(reg, 1, regsz);
    memset(pageable, 1, 4096);
    CK(cuMemHostRegister(reg, regsz, 0));
    CUpointer_attribute attrs[5] = {CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                    CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    CUcontext actx;
    unsigned mtype;
    CUdeviceptr dptr;
    unsigned managed;
    int ordinal;
    void *data[5] = {&actx, &mtype, &dptr, &managed, &ordinal};
    struct {
        const char *name;
        CUdeviceptr p;
    } ptrs[4] = {{"device", ddst + 4096},
                 {"AllocHost", (CUdeviceptr)(uintptr_t)(hsrc + 4096)},
                 {"registered", (CUdeviceptr)(uintptr_t)(reg + 4096)},
                 {"pageable", (CUdeviceptr)(uintptr_t)pageable}};
    for (int k = 0; k < 4; k++) {
        CUresult r = CUDA_SUCCESS;
        TIME_N(N, r = cuPointerGetAttributes(5, attrs, data, ptrs[k].p));
        if (r != CUDA_SUCCESS)
            die_cu("cuPointerGetAttributes", r, __LINE__);
        char w[96];
        snprintf(w, sizeof w, "cuPointerGetAttributes(5), %s", ptrs[k].name);
        cost_row(w, N);
    }
    CUdeviceptr dp_pinned = 0, dp_reg = 0;
    TIME_N(N, CK(cuPointerGetAttribute(&dp_pinned, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                       (CUdeviceptr)(uintptr_t)hsrc)));
    cost_row("cuPointerGetAttribute(DEV_PTR), AllocHost", N);
    TIME_N(N, CK(cuPointerGetAttribute(&dp_reg, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                       (CUdeviceptr)(uintptr_t)reg)));
    cost_row("cuPointerGetAttribute(DEV_PTR), registered", N);
    CUcontext cur;
    TIME_N(N, CK(cuCtxGetCurrent(&cur)));
    cost_row("cuCtxGetCurrent", N);
    /* what the library pays once: load the embedded image, find the entries */
    for (int k = 0; k < 2; k++) {
        const void *im = k ? (const void *)cb_copy_fatbin_default : (const void *)cb_copy_fatbin;
        int ok = 1;
        for (int i = 0; i < 20 && ok; i++) {
            CUmodule m;
            CUfunction fn;
            uint64_t a = now_ns();
            if (cuModuleLoadData(&m, im) != CUDA_SUCCESS) {
                ok = 0;
                break;
            }
            CK(cuModuleGetFunction(&fn, m, CB_KERNEL_NAME_40));
            CK(cuModuleGetFunction(&fn, m, CB_KERNEL_NAME_168));
            CK(cuModuleGetFunction(&fn, m, CB_KERNEL_NAME_680));
            CK(cuModuleGetFunction(&fn, m, CB_KERNEL_NAME));
            g_cs[i] = (double)(now_ns() - a);
            CK(cuModuleUnload(m));
        }
        char w[96];
        snprintf(w, sizeof w, "cuModuleLoadData+4 GetFunc, %s %zuK", k ? "default" : "size",
                 (k ? sizeof cb_copy_fatbin_default : sizeof cb_copy_fatbin) >> 10);
        if (ok)
            cost_row(w, 20);
        else
            sumf("%-42s FAILED to load\n", w);
    }

    int can_host_ptr = -1;
    CK(cuDeviceGetAttribute(&can_host_ptr, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
                            g_dev));
    int lo, hi;
    CK(cuCtxGetStreamPriorityRange(&lo, &hi));
    sumf("facts: dev ptr == host ptr: AllocHost %s, registered %s; "
         "CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM=%d; SMs=%d; CC %d.%d; "
         "driver %d; stream prio %d..%d\n",
         dp_pinned == (CUdeviceptr)(uintptr_t)hsrc ? "yes" : "NO",
         dp_reg == (CUdeviceptr)(uintptr_t)reg ? "yes" : "NO", can_host_ptr, g_sms, g_cc_major,
         g_cc_minor, g_drv, lo, hi);
    CK(cuMemHostUnregister(reg));
    free(reg);
    free(pageable);
    CK(cuEventDestroy(ev));
    CK(cuEventDestroy(evt));
    free(g_cs);
}

/* ------------------------------------------------------------------ setup */

static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        logf_("xbench: cannot open %s: %s\n", path, strerror(errno));
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = aligned_alloc(64, ((size_t)n + 64) & ~(size_t)63);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
        logf_("xbench: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static int g_completed;
static volatile sig_atomic_t g_signal;

/* At exit (normal or through a CUDA error): print the tables, write DIR. */
static void finish(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    g_sumf = g_sumv[SUM_TAIL];
    if (!g_completed)
        sumf("######## %s: RUN ENDED EARLY (%s); %d variants byte-checked%s; %.0f s\n",
             O.pin_note, g_signal ? "signal" : "see the messages above", g_checked,
             g_fail ? ", WRONG BYTES FOUND" : "", elapsed_s());
    for (int k = 0; k < SUM_N; k++)
        fclose(g_sumv[k]);
    for (int d = 0; d < D_N; d++) {
        fclose(g_d[d]);
        g_d[d] = NULL; /* logf_ after this point goes to stderr only */
    }
    fflush(stderr);
    for (int k = 0; k < SUM_N; k++)
        fputs(g_sum[k], stdout);
    fflush(stdout);
    if (!O.out)
        return;
    mkdir(O.out, 0777);
    char pth[4096];
    snprintf(pth, sizeof pth, "%s/summary.txt", O.out);
    FILE *f = fopen(pth, "w");
    if (f) {
        for (int k = 0; k < SUM_N; k++)
            fputs(g_sum[k], f);
        fclose(f);
    }
    snprintf(pth, sizeof pth, "%s/data.txt", O.out);
    f = fopen(pth, "w");
    if (!f) {
        fprintf(stderr, "xbench: cannot write %s: %s\n", pth, strerror(errno));
        return;
    }
    for (int d = 0; d < D_N; d++)
        fprintf(f, "### %s\n%s%s", d_names[d], g_dbuf[d],
                g_dlen[d] && g_dbuf[d][g_dlen[d] - 1] != '\n' ? "\n" : "");
    fclose(f);
}

/* SIGTERM (timeout) or SIGINT: keep what was measured.  finish() is not
 * async-signal-safe; a stuck stdio lock is the price of not losing the run. */
static void on_signal(int sig)
{
    g_signal = sig;
    finish();
    _exit(128 + sig);
}

static void usage(void)
{
    fprintf(stderr, "usage: xbench [--out DIR] [--quick] [--only costs,verify,batch,kernel,align,"
                    "interf] [--pin-note TEXT] [--reps N] [--reps2 N] [--rounds N] [--budget SEC] "
                    "[--fatbin FILE] [--seed N]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV()                                                                            \
    do {                                                                                   \
        if (!v)                                                                            \
            usage();                                                                       \
        i++;                                                                               \
    } while (0)
        if (!strcmp(a, "--out")) {
            NEEDV();
            O.out = v;
        } else if (!strcmp(a, "--quick"))
            O.quick = 1;
        else if (!strcmp(a, "--only")) {
            NEEDV();
            char *dup = strdup(v), *save = NULL;
            for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int found = 0;
                for (int s = 0; s < 6; s++)
                    if (!strcmp(tok, sec_names[s])) {
                        O.only |= 1u << s;
                        found = 1;
                    }
                if (!found) {
                    fprintf(stderr, "xbench: unknown section %s\n", tok);
                    usage();
                }
            }
            free(dup);
        } else if (!strcmp(a, "--pin-note")) {
            NEEDV();
            O.pin_note = v;
        } else if (!strcmp(a, "--reps")) {
            NEEDV();
            O.reps = atoi(v);
        } else if (!strcmp(a, "--reps2")) {
            NEEDV();
            O.reps2 = atoi(v);
        } else if (!strcmp(a, "--rounds")) {
            NEEDV();
            O.rounds = atoi(v);
        } else if (!strcmp(a, "--budget")) {
            NEEDV();
            O.budget_s = atof(v);
        } else if (!strcmp(a, "--fatbin")) {
            NEEDV();
            O.fatbin = v;
        } else if (!strcmp(a, "--seed")) {
            NEEDV();
            g_rng = strtoull(v, NULL, 0) | 1;
        } else
            usage();
    }
    if (O.reps < 1 || O.reps2 < 1 || O.rounds < 1)
        usage();
    if (O.quick) {
        O.costn = 2000;
        O.reps2 = O.reps2 > 15 ? 15 : O.reps2;
    }
    g_t_start = now_us() / 1e6;
    for (int k = 0; k < SUM_N; k++)
        if (!(g_sumv[k] = open_memstream(&g_sum[k], &g_sum_len[k]))) {
            fprintf(stderr, "xbench: open_memstream failed\n");
            return 1;
        }
    g_sumf = g_sumv[SUM_TAIL];
    for (int d = 0; d < D_N; d++)
        if (!(g_d[d] = open_memstream(&g_dbuf[d], &g_dlen[d]))) {
            fprintf(stderr, "xbench: open_memstream failed\n");
            return 1;
        }
    atexit(finish);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    fprintf(g_samples, "section,cell,variant,rep,submit_us,total_us\n");
    {
        const char *vh = "section,cell,dir,count,size,variant,kind,sched,cost_ns,grid,block,"
                         "tier,stream,reps,total_med_us,total_min_us,total_max_us,submit_med_us,"
                         "submit_min_us,submit_max_us,verify\n";
        fputs(vh, g_p1);
        fputs(vh, g_p2);
        fputs("call,n,median_ns,min_ns,p10_ns,p90_ns,max_ns\n", g_p4);
    }

    CUresult r = cuInit(0);
    if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_NOT_FOUND) {
        fprintf(stderr, "xbench: no GPU\n");
        return 77;
    }
    CK(r);
    CK(cuDriverGetVersion(&g_drv));
    CK(cuDeviceGet(&g_dev, 0));
    CK(cuDevicePrimaryCtxRetain(&g_ctx, g_dev));
    CK(cuCtxSetCurrent(g_ctx));
    CK(cuDeviceGetName(g_devname, sizeof g_devname, g_dev));
    CK(cuDeviceGetAttribute(&g_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g_dev));
    CK(cuDeviceGetAttribute(&g_cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g_dev));
    CK(cuDeviceGetAttribute(&g_cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g_dev));
    CK(cuDeviceGetAttribute(&g_maxthr_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
                            g_dev));
    CK(cuDeviceGetAttribute(&g_smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                            g_dev));
    g_have_batch = g_drv >= 13000 && CUDA_VERSION >= 13000;
    logf_("xbench: %s, CC %d.%d, %d SMs, driver %d, batch API %s, note '%s'\n", g_devname,
          g_cc_major, g_cc_minor, g_sms, g_drv, g_have_batch ? "yes" : "NO", O.pin_note);

    /* modules: the copy kernel from its fatbin image, as the library will load it */
    const void *img = cb_copy_fatbin;
    size_t img_len = sizeof cb_copy_fatbin;
    const char *img_name = "embedded, compress-mode=size";
    if (O.fatbin) {
        img = read_file(O.fatbin, &img_len);
        img_name = O.fatbin;
    }
    double tl0 = now_us();
    r = cuModuleLoadData(&m_copy, img);
    if (r != CUDA_SUCCESS && !O.fatbin) {
        const char *en = "?";
        cuGetErrorName(r, &en);
        logf_("xbench: the size-compressed image failed to load (%s); using the default one\n",
              en);
        img = cb_copy_fatbin_default;
        img_len = sizeof cb_copy_fatbin_default;
        img_name = "embedded, default compression (size mode FAILED)";
        r = cuModuleLoadData(&m_copy, img);
    }
    CK(r);
    double tl1 = now_us();
    CK(cuModuleGetFunction(&k_copy[0], m_copy, CB_KERNEL_NAME_40));
    CK(cuModuleGetFunction(&k_copy[1], m_copy, CB_KERNEL_NAME_168));
    CK(cuModuleGetFunction(&k_copy[2], m_copy, CB_KERNEL_NAME_680));
    CK(cuModuleGetFunction(&k_copy[3], m_copy, CB_KERNEL_NAME));
    CK(cuModuleLoadData(&m_bench, xb_kernels_fatbin));
    CK(cuModuleGetFunction(&k_burn, m_bench, "cb_burn"));
    char kfacts[1024];
    {
        int regs, lmem, bin, ptx, occ;
        size_t poff = 0, psz = 0;
        CK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k_copy[3]));
        CK(cuFuncGetAttribute(&lmem, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k_copy[3]));
        CK(cuFuncGetAttribute(&bin, CU_FUNC_ATTRIBUTE_BINARY_VERSION, k_copy[3]));
        CK(cuFuncGetAttribute(&ptx, CU_FUNC_ATTRIBUTE_PTX_VERSION, k_copy[3]));
        CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k_copy[3], 256, 0));
        CK(cuFuncGetParamInfo(k_copy[3], 0, &poff, &psz));
        snprintf(kfacts, sizeof kfacts,
                 "copy kernel: image %zu B (%s), cuModuleLoadData %.0f us, SASS %d (ptx %d), "
                 "%d regs, %d B local, param %zu B at %zu, %d blocks/SM at 256 thr",
                 img_len, img_name, tl1 - tl0, bin, ptx, regs, lmem, psz,
                 poff, occ);
        logf_("%s\n", kfacts);
    }

    CK(cuStreamCreate(&s_nb, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&s_blk, CU_STREAM_DEFAULT));
    CK(cuStreamCreate(&s_A, CU_STREAM_NON_BLOCKING));
    {
        int lo, hi;
        CK(cuCtxGetStreamPriorityRange(&lo, &hi));
        CK(cuStreamCreateWithPriority(&s_hi, CU_STREAM_NON_BLOCKING, hi));
    }

    void *p;
    CK(cuMemAllocHost(&p, CAP));
    hsrc = p;
    CK(cuMemAllocHost(&p, CAP));
    hdst = p;
    CK(cuMemHostGetDevicePointer(&hsrc_d, hsrc, 0));
    CK(cuMemHostGetDevicePointer(&hdst_d, hdst, 0));
    CK(cuMemAlloc(&dsrc, CAP));
    CK(cuMemAlloc(&ddst, CAP));
    CK(cuMemAlloc(&d_dummy, 4096));
    hchk = xmalloc(CAP);
    hexp_h = xmalloc(CAP);
    hexp_d = xmalloc(CAP);
    g_adst = xmalloc(sizeof(CUdeviceptr) * 8192);
    g_asrc = xmalloc(sizeof(CUdeviceptr) * 8192);
    g_asz = xmalloc(sizeof(size_t) * 8192);
    {
        uint64_t *w = (uint64_t *)hsrc;
        for (size_t i = 0; i < CAP / 8; i++) {
            uint64_t x = rnd();
            /* no byte equal to the poison, so that a missed byte always shows */
            for (int b = 0; b < 8; b++)
                if (((x >> (8 * b)) & 0xFF) == POISON)
                    x ^= (uint64_t)0x01 << (8 * b);
            w[i] = x;
        }
        CK(cuMemcpyHtoD(dsrc, hsrc, CAP));
        memset(hdst, 0, CAP);
        CK(cuMemsetD8(ddst, 0, CAP));
        CK(cuCtxSynchronize());
    }
    {
        FILE *f = g_d[D_FACTS];
        {
            fprintf(f, "device %s\nCC %d.%d\nSMs %d\nmax threads/SM %d\nsmem optin %d\n"
                       "driver %d\nbatch %d\nnote %s\nquick %d\nreps %d reps2 %d rounds %d\n%s\n"
                       "hsrc %p -> device %#llx\nhdst %p -> device %#llx\n",
                    g_devname, g_cc_major, g_cc_minor, g_sms, g_maxthr_sm, g_smem_optin, g_drv,
                    g_have_batch, O.pin_note, O.quick, O.reps, O.reps2, O.rounds, kfacts,
                    (void *)hsrc, (unsigned long long)hsrc_d, (void *)hdst,
                    (unsigned long long)hdst_d);
        }
    }

    sumf("######## xbench %s | %s | %s | CC %d.%d | %d SMs | driver %d\n", O.pin_note,
         O.quick ? "quick" : "full", g_devname, g_cc_major, g_cc_minor, g_sms, g_drv);
    sumf("%s\n", kfacts);
    if (want(S_VERIFY))
        verify_random();
    g_sumf = g_sumv[SUM_MAIN];
    if (want(S_BATCH))
        part1();
    if (want(S_KERNEL))
        part2();
    if (want(S_ALIGN))
        part2b();
    if (want(S_INTERF)) {
        if (elapsed_s() < O.budget_s)
            part3();
        else
            sumf("== 3 skipped: budget ==\n");
    }
    if (want(S_COSTS)) {
        g_sumf = g_sumv[SUM_COSTS];
        part4();
    }
    g_sumf = g_sumv[SUM_TAIL];

    sumf("######## %s: %d variants byte-checked, %s; %.0f s\n", O.pin_note, g_checked,
         g_fail ? "WRONG BYTES FOUND (see log)" : "all correct", elapsed_s());
    g_completed = 1;
    finish();
    CK(cuMemFreeHost(hsrc));
    CK(cuMemFreeHost(hdst));
    CK(cuMemFree(dsrc));
    CK(cuMemFree(ddst));
    CK(cuMemFree(d_dummy));
    CK(cuModuleUnload(m_copy));
    CK(cuModuleUnload(m_bench));
    CK(cuDevicePrimaryCtxRelease(g_dev));
    return g_fail ? 1 : 0;
}
