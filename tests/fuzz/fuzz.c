/* fuzz.c - differential fuzzer for cubatch (see tests/fuzz/README.md).
 *
 * One program, three roles:
 *   fuzz gen  --seed S --len N            print the generated op list
 *   fuzz run  (--seed S --len N | --ops FILE)
 *                                         validate, execute against the driver this
 *                                         binary is linked to (the simulated one), and
 *                                         print what it observed
 *   fuzz drive [--seeds A-B] [--seconds T] [--len N] [-j J] --lib LIBCUBATCH
 *              [--regress DIR] [--replay FILE...]
 *                                         run every seed plain and under LD_PRELOAD,
 *                                         compare, shrink divergences, save them
 *
 * Programs are generated against a happens-before model (vector clocks over
 * streams and host threads): every pair of conflicting accesses (same bytes, one
 * a write) is ordered by stream order, events, legacy-stream semantics or host
 * synchronization, so the final bytes do not depend on scheduling, and a program
 * run with and without cubatch must print the same thing.  A replayed op list
 * (a shrinking candidate or a saved regression) is validated against the same
 * model first; a list that would race is refused (exit 3), never run. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define __CUDA_API_VERSION_INTERNAL 1 /* call exact variants: _v2, _ptsz, _ptds */
#include <cuda.h>

#include "../harness/harness.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ limits */

enum { NSLOT = 8, NSTREAM = 6, NEV = 4, MAXA = 64, MAXW = 3, MAXSUB = 64, MAXOPS = 4096, MAXCAPOPS = 32 };

/* allocation kinds */
enum { K_DEV, K_PIN, K_HA, K_REG, K_MAN, K_PAGE, NKIND };
static const char *kname[NKIND] = {"dev", "pin", "hostalloc", "reg", "managed", "page"};

/* op types */
enum {
    O_ALLOC, O_FREE, O_SCREATE, O_SDESTROY, O_COPY, O_MEMSET, O_HFUNC, O_EREC, O_EWAIT, O_ESYNC, O_EQUERY,
    O_SSYNC, O_SQUERY, O_CSYNC, O_HWRITE, O_HREAD, O_SYNCCOPY, O_CAPTURE, O_THREADS, O_EELAPSED, O_EDESTROY,
    O_KERNEL, O_CBEGIN, O_CEND, O_CTXROUND, NOPT
};
static const char *oname[NOPT] = {"alloc", "free", "screate", "sdestroy", "copy", "memset", "hfunc", "erec",
                                  "ewait", "esync", "equery", "ssync", "squery", "csync", "hwrite", "hread",
                                  "synccopy", "capture", "threads", "eelapsed", "edestroy", "kernel", "cbegin",
                                  "cend", "ctxround"};
/* Events by index: without timing, with timing, blocking with timing, and
 * interprocess (whose records cubatch must never hold back: rule 11). */
static const unsigned evflags[NEV] = {CU_EVENT_DISABLE_TIMING, CU_EVENT_DEFAULT, CU_EVENT_BLOCKING_SYNC,
                                      CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING};

/* copy entry points */
enum { A_ANY, A_H2D, A_D2H, A_D2D, NAPI };
static const char *aname[NAPI] = {"any", "h2d", "d2h", "d2d"};

struct op {
    int type;
    int api, ptsz, hf; /* entry point, _ptsz twin, handle form (0 NULL, 1 special constant, 2 handle) */
    int s;             /* stream slot: 0 legacy, 1 per-thread, 2.. created */
    int a, b;          /* allocation slots: destination, source */
    size_t ao, bo, n;
    size_t size_at[2]; /* a copy as drawn: its slots' sizes (a copy continuing it needs them unchanged) */
    int e;
    unsigned val;      /* memset value, pattern, hfunc constant, stream flags, capture mode, kernel polls */
    unsigned grid, block; /* kernel: blocks, threads per block */
    unsigned rows;     /* copy: 0 a 1D copy; else a 2D copy of `rows` rows `pitch` apart on both sides,
                        * whose last row ends at n (the model sees each side's whole span) */
    size_t pitch;
    int kind;          /* alloc kind */
    int err;           /* deliberate error: 1 overrun, 2 stale stream handle */
    int w;             /* worker (threads sub-op) */
    int ls, lptsz, lhf, reps; /* capture: launch stream */
    int nsub;
    struct op *sub;
    /* runtime */
    void *hfp;
};

static struct op g_ops[MAXOPS];
static int g_nops;

/* ------------------------------------------------------------------ small helpers */

static uint64_t rng_state;
static uint64_t rnd(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static size_t rn(size_t n) { return n ? (size_t)(rnd() % n) : 0; }
static int pct(int p) { return (int)rn(100) < p; }

static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 0x9e37u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (unsigned char)x;
    }
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

/* ------------------------------------------------------------------ the model */

typedef struct { uint32_t c[MAXA]; } vc_t;
struct acc { size_t off, len; uint32_t t; uint16_t actor; uint8_t w; };

/* A capture under way on a created stream (cbegin .. cend): its mode (0 global,
 * 1 thread-local, 2 relaxed), the host actor of the thread that began it, and the
 * ops it captured, which take effect only when cend launches the graph. */
struct capst {
    int active, mode, host, id, nops;
    struct op ops[MAXCAPOPS];
};

struct model {
    vc_t vc[MAXA];
    int nact;
    /* allocation slots */
    int live[NSLOT], kind[NSLOT];
    size_t size[NSLOT];
    int nacc[NSLOT], base[NSLOT];
    /* stream slots */
    int s_live[NSTREAM], s_actor[NSTREAM], s_blocking[NSTREAM], s_stale[NSTREAM];
    int ev_rec[NEV];
    vc_t ev[NEV];
    /* Where each event was last recorded: 0 outside any capture; > 0 the id of the
     * capture that recorded it; -1 by a graph launch (a captured record).  Such an
     * event is never observed (query, synchronize, elapsed time, a wait outside its
     * own capture) until recorded again outside: the real driver refuses that while
     * the capture is active (907, 905), and afterwards the simulated driver and the
     * real one disagree about what the event stands for. */
    int ev_cap[NEV];
    struct capst cap[NSTREAM];
    int ncap;    /* captures begun so far (their ids) */
    int bad_sub; /* a thread block that failed: the sub-op that failed (-1: the block) */
    int blocks; /* thread blocks so far */
    char why[160];
};

static struct acc *g_acc[NSLOT];
static int g_acccap[NSLOT];

/* The executing thread's view: its host actor, the legacy stream as it sees it,
 * its per-thread stream, and (for a worker) the allocations it may touch. */
struct view {
    int host, legacy, pts;
    int main; /* 1: the main thread (created streams usable) */
    unsigned slots; /* worker: allowed slots bitmask */
    unsigned streams; /* worker: the created streams it owns (bitmask of stream slots) */
    /* worker: another worker of its block captures (xany), in global mode (xglobal).
     * The threads' interleaving is not known, so the capture may be under way during
     * any of this worker's calls: the rules of capture hold for all of them. */
    int xany, xglobal;
};

static void vjoin(vc_t *a, const vc_t *b)
{
    for (int i = 0; i < MAXA; i++)
        if (b->c[i] > a->c[i])
            a->c[i] = b->c[i];
}

static int new_actor(struct model *m)
{
    if (m->nact >= MAXA)
        return -1;
    int a = m->nact++;
    memset(&m->vc[a], 0, sizeof m->vc[a]);
    return a;
}

static void model_init(struct model *m)
{
    memset(m, 0, sizeof *m);
    m->nact = 0;
    new_actor(m); /* 0: main host */
    new_actor(m); /* 1: legacy stream */
    new_actor(m); /* 2: main per-thread stream */
    m->s_live[0] = m->s_live[1] = 1;
    m->s_actor[0] = 1;
    m->s_actor[1] = 2;
    m->s_blocking[0] = m->s_blocking[1] = 1;
    for (int i = 0; i < NSLOT; i++)
        m->nacc[i] = m->base[i] = 0;
}

static int fail(struct model *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->why, sizeof m->why, fmt, ap);
    va_end(ap);
    return -1;
}

/* Record an access by `actor` at its current time; -1 if it races. */
static int access_(struct model *m, int slot, size_t off, size_t len, int write, int actor)
{
    if (len == 0)
        return 0;
    if (!m->live[slot])
        return fail(m, "slot %d not live", slot);
    if (off > m->size[slot] || len > m->size[slot] - off)
        return fail(m, "slot %d range %zu+%zu out of %zu", slot, off, len, m->size[slot]);
    const vc_t *v = &m->vc[actor];
    for (int i = m->base[slot]; i < m->nacc[slot]; i++) {
        const struct acc *r = &g_acc[slot][i];
        if (r->off < off + len && off < r->off + r->len && (write || r->w) && r->t > v->c[r->actor])
            return fail(m, "race on slot %d [%zu,+%zu) with actor %d", slot, off, len, r->actor);
    }
    if (m->nacc[slot] == g_acccap[slot]) {
        g_acccap[slot] = g_acccap[slot] ? 2 * g_acccap[slot] : 256;
        g_acc[slot] = realloc(g_acc[slot], (size_t)g_acccap[slot] * sizeof(struct acc));
        if (!g_acc[slot])
            abort();
    }
    g_acc[slot][m->nacc[slot]++] = (struct acc){off, len, v->c[actor], (uint16_t)actor, (uint8_t)write};
    return 0;
}

static void host_tick(struct model *m, const struct view *vw) { m->vc[vw->host].c[vw->host]++; }

/* Actor of stream slot s as seen by view vw (-1: not usable). */
static int stream_actor(const struct model *m, const struct view *vw, int s)
{
    if (s == 0)
        return vw->legacy;
    if (s == 1)
        return vw->pts;
    if (s >= NSTREAM || !m->s_live[s] || (!vw->main && !(vw->streams >> s & 1)))
        return -1;
    return m->s_actor[s];
}

/* Enqueue one operation on stream slot s: returns the stream's actor, ticked. */
static int enqueue(struct model *m, const struct view *vw, int s)
{
    int a = stream_actor(m, vw, s);
    if (a < 0)
        return fail(m, "stream %d not usable", s);
    vjoin(&m->vc[a], &m->vc[vw->host]);
    if (s == 0) {
        /* legacy: after the last op of every blocking stream it can see */
        for (int i = 1; i < NSTREAM; i++)
            if (m->s_live[i] && m->s_blocking[i] && (i >= 2 ? vw->main || 1 : 1))
                vjoin(&m->vc[a], &m->vc[m->s_actor[i]]);
        if (vw->pts != m->s_actor[1])
            vjoin(&m->vc[a], &m->vc[vw->pts]);
    } else if (s == 1 || m->s_blocking[s]) {
        vjoin(&m->vc[a], &m->vc[vw->legacy]);
    }
    m->vc[a].c[a]++;
    return a;
}

static void host_join(struct model *m, const struct view *vw, int actor) { vjoin(&m->vc[vw->host], &m->vc[actor]); }

static void host_join_all(struct model *m, const struct view *vw)
{
    for (int a = 0; a < m->nact; a++)
        host_join(m, vw, a);
}

static int is_devside(int k) { return k == K_DEV || k == K_MAN; }
static int is_hostside(int k) { return k != K_DEV; }

/* The copy's accesses.  stream actor a; `cap`: inside a graph (no host effects). */
static int copy_accesses(struct model *m, const struct view *vw, const struct op *o, int a, int cap)
{
    if (o->n == 0)
        return 0;
    if (m->kind[o->b] == K_PAGE && !cap) {
        host_tick(m, vw); /* staged at call time */
        if (access_(m, o->b, o->bo, o->n, 0, vw->host))
            return -1;
    } else if (access_(m, o->b, o->bo, o->n, 0, a)) {
        return -1;
    }
    if (access_(m, o->a, o->ao, o->n, 1, a))
        return -1;
    if (m->kind[o->a] == K_PAGE && !cap)
        host_join(m, vw, a); /* synchronous */
    return 0;
}

static int copy_kinds_ok(const struct model *m, const struct op *o)
{
    int dk = m->kind[o->a], sk = m->kind[o->b];
    switch (o->api) {
    case A_H2D: return is_devside(dk) && is_hostside(sk);
    case A_D2H: return is_hostside(dk) && is_devside(sk);
    case A_D2D: return is_devside(dk) && is_devside(sk);
    default: return 1;
    }
}

static int ranges_overlap(const struct op *o)
{
    return o->a == o->b && o->n && o->ao < o->bo + o->n && o->bo < o->ao + o->n;
}

static int handle_ok(const struct op *o, int s)
{
    /* NULL means legacy through a plain entry, per-thread through a _ptsz one */
    if (o->hf == 0)
        return (s == 0 && !o->ptsz) || (s == 1 && o->ptsz);
    if (o->hf == 1)
        return s <= 1;
    return s >= 2;
}

static int apply(struct model *m, struct op *o, const struct view *vw, int cap_stream);

/* ---- the rules of capture ----
 *
 * What the real driver refuses while a stream captures, and which invalidates the
 * capture (tests/data/capture-legal-h200.txt, measured on an H200 by
 * tests/gpu/capture_legal.c): in global mode no thread may synchronize or query
 * any stream or event, allocate or free memory or load a module; in thread-local
 * mode the capturing thread may not; in any mode nobody synchronizes or queries the
 * capturing stream or synchronizes the context, nothing goes on the legacy stream
 * while a blocking stream captures, and the capture waits only for events recorded
 * in it.  A program must never do any of these (cubatch must not either: that is
 * what the fuzzer looks for), so the model refuses them, and more where nothing was
 * measured: pageable copies (the driver synchronizes for them), deliberate errors,
 * creating or destroying streams and events, synchronous copies, timed and
 * interprocess events in a capture. */
static const char *cap_forbids(const struct model *m, const struct op *o, int mode, int same, int cs, int blocking)
{
    int strict = mode == 0 || (mode == 1 && same);
    switch (o->type) {
    case O_CSYNC: return "a context synchronize";
    case O_SYNCCOPY: return "a synchronous copy";
    case O_ALLOC:
    case O_FREE: return "an allocation or a free";
    case O_SCREATE:
    case O_SDESTROY:
    case O_EDESTROY: return "a stream or event created or destroyed";
    case O_CAPTURE:
    case O_THREADS: return "another capture or a thread block";
    case O_CTXROUND: return "a context created or destroyed";
    case O_CBEGIN: return same ? "a second capture in one thread" : NULL;
    case O_CEND:
        /* the graph launch after the end: legacy-stream work, unless it ends this capture */
        return o->s != cs && o->ls == 0 && blocking ? "legacy-stream work while a blocking stream captures" : NULL;
    case O_HWRITE:
    case O_HREAD: return NULL;
    case O_SSYNC:
    case O_SQUERY:
        if (o->s == cs)
            return "synchronizing or querying the capturing stream";
        if (strict)
            return "a stream synchronize or query";
        break;
    case O_ESYNC:
    case O_EQUERY:
    case O_EELAPSED: return strict ? "an event synchronize, query or elapsed time" : NULL;
    default: /* stream work: copies, memsets, host functions, kernels, records, waits */
        if (o->err)
            return "a deliberate error";
        if (o->type == O_COPY && o->a >= 0 && o->a < NSLOT && o->b >= 0 && o->b < NSLOT &&
            (m->kind[o->a] == K_PAGE || m->kind[o->b] == K_PAGE))
            return "a pageable copy";
        break;
    }
    if (o->s == 0 && blocking)
        return "legacy-stream work while a blocking stream captures";
    return NULL;
}

/* Refuses op o (not a graph's replay) if a capture that may be under way forbids it. */
static int cap_rules(struct model *m, const struct op *o, const struct view *vw)
{
    for (int x = 2; x < NSTREAM; x++)
        if (m->cap[x].active) {
            const char *why = cap_forbids(m, o, m->cap[x].mode, m->cap[x].host == vw->host, x, m->s_blocking[x]);
            if (why)
                return fail(m, "%s while stream %d captures", why, x);
        }
    if (vw->xany) { /* another worker's capture, on a non-blocking stream this one cannot name */
        const char *why = cap_forbids(m, o, vw->xglobal ? 0 : 2, 0, -1, 0);
        if (why)
            return fail(m, "%s while another worker may capture", why);
    }
    return 0;
}

static int capturing(const struct model *m, int s) { return s >= 2 && s < NSTREAM && m->cap[s].active; }

/* Op o names the capturing stream s: captured, to take effect at the graph's launch. */
static int capture_add(struct model *m, const struct op *o, const struct view *vw)
{
    struct capst *c = &m->cap[o->s];
    if (stream_actor(m, vw, o->s) < 0 || c->host != vw->host)
        return fail(m, "captured from another thread");
    if (c->nops >= MAXCAPOPS)
        return fail(m, "capture too long");
    c->ops[c->nops++] = *o;
    return 0;
}

/* A stream op (copy, memset, hfunc) on stream slot s; cap >= 0: replayed from a
 * graph on actor cap. */
static int stream_op(struct model *m, struct op *o, const struct view *vw, int cap)
{
    if (o->a < 0 || o->a >= NSLOT || !m->live[o->a])
        return fail(m, "dst slot");
    if ((o->type != O_MEMSET) && (o->b < 0 || o->b >= NSLOT || !m->live[o->b]))
        return fail(m, "src slot");
    if (!vw->main && (!(vw->slots >> o->a & 1) || (o->type != O_MEMSET && !(vw->slots >> o->b & 1))))
        return fail(m, "worker slot");
    if (cap < 0 && !handle_ok(o, o->s))
        return fail(m, "handle form");
    if (o->err == 2) {
        if (o->s < 2 || o->s >= NSTREAM || !m->s_stale[o->s])
            return fail(m, "no stale handle");
        return 0;
    }
    if (o->type == O_COPY) {
        if (!copy_kinds_ok(m, o))
            return fail(m, "copy kinds");
        if (ranges_overlap(o))
            return fail(m, "copy overlaps itself");
        if (o->rows && (o->rows < 2 || o->pitch == 0 || o->err || o->n <= (o->rows - 1) * o->pitch ||
                        o->n - (o->rows - 1) * o->pitch > o->pitch))
            return fail(m, "2D shape");
        if (o->err == 1) {
            /* overrun a device-side range: the driver refuses it, nothing happens */
            int side = o->api == A_D2H ? o->b : o->a;
            if (!is_devside(m->kind[side]))
                return fail(m, "overrun needs a device side");
            return 0;
        }
        if ((cap >= 0 || capturing(m, o->s)) && (m->kind[o->a] == K_PAGE || m->kind[o->b] == K_PAGE))
            return fail(m, "pageable in a graph");
    } else if (o->type == O_MEMSET) {
        if (m->kind[o->a] == K_PAGE)
            return fail(m, "memset of pageable");
    } else {
        if (m->kind[o->a] == K_PAGE || m->kind[o->b] == K_PAGE)
            return fail(m, "kernel on pageable");
    }
    if (cap < 0 && capturing(m, o->s))
        return capture_add(m, o, vw);
    if (o->n == 0 && o->type != O_HFUNC)
        return 0; /* a 0-byte copy or memset is no stream operation at all */
    int a = cap >= 0 ? cap : enqueue(m, vw, o->s);
    if (a < 0)
        return -1;
    if (cap >= 0)
        m->vc[a].c[a]++;
    if (o->type == O_COPY)
        return copy_accesses(m, vw, o, a, cap >= 0);
    if (o->type == O_MEMSET)
        return access_(m, o->a, o->ao, o->n, 1, a);
    if (access_(m, o->b, o->bo, o->n, 0, a))
        return -1;
    return access_(m, o->a, o->ao, o->n, 1, a);
}

static int apply(struct model *m, struct op *o, const struct view *vw, int cap)
{
    if (cap < 0 && cap_rules(m, o, vw))
        return -1;
    switch (o->type) {
    case O_COPY:
    case O_MEMSET:
    case O_HFUNC:
        return stream_op(m, o, vw, cap);
    case O_KERNEL:
        /* compute (the simulated driver's cusim_compute): stream order, no memory */
        if (!handle_ok(o, o->s) || o->grid == 0 || o->block == 0 || o->block > 1024)
            return fail(m, "kernel");
        if (capturing(m, o->s))
            return capture_add(m, o, vw);
        return enqueue(m, vw, o->s) < 0 ? -1 : 0;
    case O_CBEGIN: {
        if (o->s < 2 || o->s >= NSTREAM || !m->s_live[o->s] || stream_actor(m, vw, o->s) < 0 ||
            m->cap[o->s].active || o->val > 2)
            return fail(m, "cbegin");
        struct capst *c = &m->cap[o->s];
        c->active = 1;
        c->mode = (int)o->val;
        c->host = vw->host;
        c->id = ++m->ncap;
        c->nops = 0;
        return 0;
    }
    case O_CEND: {
        if (!capturing(m, o->s) || m->cap[o->s].host != vw->host || o->reps < 1 || o->reps > 8)
            return fail(m, "cend");
        struct op l = {0};
        l.s = o->ls;
        l.ptsz = o->lptsz;
        l.hf = o->lhf;
        if (o->ls < 0 || o->ls >= NSTREAM || !handle_ok(&l, o->ls) || stream_actor(m, vw, o->ls) < 0 ||
            (o->ls != o->s && capturing(m, o->ls)))
            return fail(m, "graph launch stream");
        struct capst *c = &m->cap[o->s];
        c->active = 0;
        /* Each launch enqueues the graph's nodes in capture order, as the simulated
         * driver does: copies, memsets, host functions and (no-op nodes) event
         * records; its compute and its waits leave no node.  A launch that enqueues
         * nothing orders nothing (no legacy-stream ordering either), so those are
         * left out here too, which assumes less ordering than a real graph launch
         * gives.  A captured record records its event at every launch: from then
         * on, as far as the model knows, it is unobservable. */
        for (int r = 0; r < o->reps; r++)
            for (int j = 0; j < c->nops; j++) {
                struct op *q = &c->ops[j];
                if (q->type == O_KERNEL || q->type == O_EWAIT || (q->n == 0 && (q->type == O_COPY || q->type == O_MEMSET)))
                    continue;
                int a = enqueue(m, vw, o->ls);
                if (a < 0)
                    return -1;
                if (q->type == O_EREC) {
                    m->ev_cap[q->e] = -1;
                    continue;
                }
                if (apply(m, q, vw, a))
                    return -1;
            }
        return 0;
    }
    case O_ALLOC:
        if (!vw->main || o->a < 0 || o->a >= NSLOT || m->live[o->a] || o->n == 0 || o->kind < 0 || o->kind >= NKIND)
            return fail(m, "alloc");
        m->live[o->a] = 1;
        m->kind[o->a] = o->kind;
        m->size[o->a] = o->n;
        m->base[o->a] = m->nacc[o->a];
        host_tick(m, vw);
        return access_(m, o->a, 0, o->n, 1, vw->host);
    case O_FREE:
        if (!vw->main || o->a < 0 || o->a >= NSLOT || !m->live[o->a])
            return fail(m, "free");
        if (m->kind[o->a] == K_PAGE) {
            /* free(): the host must know every access is over */
            host_tick(m, vw);
            if (access_(m, o->a, 0, m->size[o->a], 1, vw->host))
                return -1;
            m->live[o->a] = 0;
            return 0;
        }
        host_join_all(m, vw); /* the driver finishes the device's work first */
        if (m->kind[o->a] == K_REG)
            m->kind[o->a] = K_PAGE;
        else
            m->live[o->a] = 0;
        return 0;
    case O_SCREATE:
        if (!vw->main || o->s < 2 || o->s >= NSTREAM || m->s_live[o->s])
            return fail(m, "screate");
        {
            int a = new_actor(m);
            if (a < 0)
                return fail(m, "out of actors");
            m->s_live[o->s] = 1;
            m->s_actor[o->s] = a;
            m->s_blocking[o->s] = !(o->val & CU_STREAM_NON_BLOCKING);
            vjoin(&m->vc[a], &m->vc[vw->host]);
        }
        return 0;
    case O_SDESTROY:
        if (!vw->main || o->s < 2 || o->s >= NSTREAM || !m->s_live[o->s])
            return fail(m, "sdestroy");
        m->s_live[o->s] = 0;
        m->s_stale[o->s] = 1;
        return 0;
    case O_EREC: {
        if (o->e < 0 || o->e >= NEV || !handle_ok(o, o->s))
            return fail(m, "erec");
        if (capturing(m, o->s)) {
            /* measured in a capture: events without timing only */
            if (evflags[o->e] != CU_EVENT_DISABLE_TIMING)
                return fail(m, "only events without timing are recorded in a capture");
            if (capture_add(m, o, vw))
                return -1;
            m->ev_cap[o->e] = m->cap[o->s].id;
            return 0;
        }
        int a = enqueue(m, vw, o->s);
        if (a < 0)
            return -1;
        m->ev[o->e] = m->vc[a];
        m->ev_rec[o->e] = 1;
        m->ev_cap[o->e] = 0;
        return 0;
    }
    case O_EWAIT: {
        if (o->e < 0 || o->e >= NEV || !handle_ok(o, o->s))
            return fail(m, "ewait");
        if (capturing(m, o->s)) {
            if (m->ev_cap[o->e] != m->cap[o->s].id)
                return fail(m, "a capture waits only for an event recorded in it");
            return capture_add(m, o, vw);
        }
        if (m->ev_cap[o->e])
            return fail(m, "a wait for an event recorded in a capture");
        int a = enqueue(m, vw, o->s);
        if (a < 0)
            return -1;
        if (m->ev_rec[o->e])
            vjoin(&m->vc[a], &m->ev[o->e]);
        return 0;
    }
    case O_ESYNC:
        if (o->e < 0 || o->e >= NEV || m->ev_cap[o->e])
            return fail(m, "esync");
        if (m->ev_rec[o->e])
            vjoin(&m->vc[vw->host], &m->ev[o->e]);
        return 0;
    case O_EQUERY:
        if (o->e < 0 || o->e >= NEV || m->ev_cap[o->e])
            return fail(m, "equery");
        return 0; /* an answer is not relied on */
    case O_EELAPSED:
        if (o->e < 0 || o->e >= NEV || o->val >= NEV || m->ev_cap[o->e] || m->ev_cap[o->val])
            return fail(m, "eelapsed");
        return 0; /* an answer is not relied on (nor waited for) */
    case O_EDESTROY:
        if (!vw->main || o->e < 0 || o->e >= NEV)
            return fail(m, "edestroy");
        m->ev_rec[o->e] = 0; /* created again at once: recorded never */
        m->ev_cap[o->e] = 0;
        return 0;
    case O_SSYNC:
    case O_SQUERY: {
        if (!handle_ok(o, o->s))
            return fail(m, "handle form");
        int a = stream_actor(m, vw, o->s);
        if (a < 0)
            return fail(m, "ssync stream");
        if (o->type == O_SSYNC)
            host_join(m, vw, a);
        return 0;
    }
    case O_CSYNC:
        if (!vw->main)
            return fail(m, "csync in a worker");
        host_join_all(m, vw);
        return 0;
    case O_CTXROUND: /* its own context, streams and memory: nothing of the model's */
        if (!vw->main || o->n < 1 || o->n > 64)
            return fail(m, "ctxround");
        return 0;
    case O_HWRITE:
    case O_HREAD:
        if (o->a < 0 || o->a >= NSLOT || !m->live[o->a] || (!vw->main && !(vw->slots >> o->a & 1)))
            return fail(m, "host access slot");
        host_tick(m, vw);
        return access_(m, o->a, o->ao, o->n, o->type == O_HWRITE, vw->host);
    case O_SYNCCOPY: {
        if (o->a < 0 || o->a >= NSLOT || o->b < 0 || o->b >= NSLOT || !m->live[o->a] || !m->live[o->b] || !vw->main)
            return fail(m, "synccopy");
        if (!copy_kinds_ok(m, o) || ranges_overlap(o))
            return fail(m, "synccopy kinds");
        if (o->n == 0)
            return 0; /* returns at once, waits for nothing */
        int a = enqueue(m, vw, o->ptsz ? 1 : 0);
        if (a < 0)
            return -1;
        if (o->n && access_(m, o->b, o->bo, o->n, 0, a))
            return -1;
        if (o->n && access_(m, o->a, o->ao, o->n, 1, a))
            return -1;
        host_join(m, vw, a);
        return 0;
    }
    case O_CAPTURE: {
        if (!vw->main || o->s < 2 || o->s >= NSTREAM || !m->s_live[o->s] || o->nsub < 1 || o->reps < 1)
            return fail(m, "capture");
        for (int j = 0; j < o->nsub; j++) {
            const struct op *q = &o->sub[j];
            if ((q->type != O_COPY && q->type != O_MEMSET && q->type != O_HFUNC) || q->s != o->s || q->hf != 2 ||
                q->err)
                return fail(m, "capture sub-op");
        }
        struct op l = {0};
        l.s = o->ls;
        l.ptsz = o->lptsz;
        l.hf = o->lhf;
        if (!handle_ok(&l, o->ls))
            return fail(m, "launch handle");
        /* a launch enqueues the graph's operations one by one (an empty graph:
         * nothing at all, so no legacy-stream ordering either) */
        for (int r = 0; r < o->reps; r++)
            for (int j = 0; j < o->nsub; j++) {
                if (o->sub[j].n == 0 && o->sub[j].type != O_HFUNC)
                    continue;
                int a = enqueue(m, vw, o->ls);
                if (a < 0 || apply(m, &o->sub[j], vw, a))
                    return -1;
            }
        return 0;
    }
    case O_THREADS: {
        m->bad_sub = -1;
        if (!vw->main || o->w < 2 || o->w > MAXW)
            return fail(m, "threads");
        /* Which workers capture (one at most: whether the real driver lets a thread
         * instantiate a graph while another thread's capture is under way was not
         * measured), and in which modes. */
        unsigned capw = 0, globw = 0;
        for (int j = 0; j < o->nsub; j++)
            if (o->sub[j].type == O_CBEGIN && o->sub[j].w >= 0 && o->sub[j].w < MAXW) {
                capw |= 1u << o->sub[j].w;
                if (o->sub[j].val == 0)
                    globw |= 1u << o->sub[j].w;
            }
        if (capw & (capw - 1))
            return fail(m, "two workers capture");
        struct view wv[MAXW];
        for (int w = 0; w < o->w; w++) {
            wv[w].main = 0;
            wv[w].slots = 0;
            wv[w].streams = 0;
            wv[w].xany = (capw & ~(1u << w)) != 0;
            wv[w].xglobal = (globw & ~(1u << w)) != 0;
            wv[w].host = new_actor(m);
            wv[w].legacy = new_actor(m);
            wv[w].pts = new_actor(m);
            if (wv[w].pts < 0)
                return fail(m, "out of actors");
            vjoin(&m->vc[wv[w].host], &m->vc[vw->host]);
            vjoin(&m->vc[wv[w].legacy], &m->vc[vw->legacy]);
        }
        unsigned evown[MAXW] = {0};
        int began[NSTREAM] = {-1, -1, -1, -1, -1, -1};
        for (int j = 0; j < o->nsub; j++) {
            struct op *q = &o->sub[j];
            m->bad_sub = j;
            if (q->w < 0 || q->w >= o->w || q->err)
                return fail(m, "worker index");
            unsigned mine = 0, ev = 0;
            if (q->type == O_COPY || q->type == O_MEMSET || q->type == O_HFUNC || q->type == O_HWRITE ||
                q->type == O_HREAD) {
                if (q->a < 0 || q->a >= NSLOT || ((q->type == O_COPY || q->type == O_HFUNC) && (q->b < 0 || q->b >= NSLOT)))
                    return fail(m, "worker slot");
                mine |= 1u << q->a;
                if (q->type == O_COPY || q->type == O_HFUNC)
                    mine |= 1u << q->b;
            } else if (q->type == O_EREC || q->type == O_EWAIT || q->type == O_ESYNC || q->type == O_EQUERY ||
                       q->type == O_EELAPSED) {
                /* each event belongs to one worker of the block: which record is
                 * the latest must not depend on the threads' interleaving */
                ev = 1u << (q->e & 31);
                if (q->type == O_EELAPSED)
                    ev |= 1u << (q->val & 31);
                for (int w = 0; w < o->w; w++)
                    if (w != q->w && (evown[w] & ev))
                        return fail(m, "event shared between workers");
                evown[q->w] |= ev;
            } else if (q->type != O_SSYNC && q->type != O_SQUERY && q->type != O_KERNEL && q->type != O_CBEGIN &&
                       q->type != O_CEND) {
                return fail(m, "worker op type");
            }
            /* each slot belongs to one worker, and so does each created stream
             * (the order of two threads' work on one stream would depend on
             * their interleaving) */
            for (int w = 0; w < o->w; w++)
                if (w != q->w && (wv[w].slots & mine))
                    return fail(m, "slot shared between workers");
            int named[2] = {q->type != O_HWRITE && q->type != O_HREAD ? q->s : -1, q->type == O_CEND ? q->ls : -1};
            for (int k = 0; k < 2; k++) {
                int s = named[k];
                if (s < 2 || s >= NSTREAM)
                    continue;
                /* non-blocking only: another worker's legacy-stream work would
                 * order a blocking one by the threads' interleaving */
                if (m->s_blocking[s])
                    return fail(m, "blocking stream in a worker");
                for (int w = 0; w < o->w; w++)
                    if (w != q->w && (wv[w].streams >> s & 1))
                        return fail(m, "stream shared between workers");
                wv[q->w].streams |= 1u << s;
            }
            wv[q->w].slots |= mine;
            if (q->type == O_CBEGIN && q->s >= 2 && q->s < NSTREAM)
                began[q->s] = j;
            if (apply(m, q, &wv[q->w], -1))
                return -1;
        }
        for (int x = 2; x < NSTREAM; x++)
            for (int w = 0; w < o->w; w++)
                if (m->cap[x].active && m->cap[x].host == wv[w].host) {
                    m->bad_sub = began[x];
                    return fail(m, "a worker's capture never ended");
                }
        m->bad_sub = -1;
        for (int w = 0; w < o->w; w++) {
            host_join(m, vw, wv[w].host);
            vjoin(&m->vc[vw->legacy], &m->vc[wv[w].legacy]);
        }
        return 0;
    }
    }
    return fail(m, "unknown op");
}

static int validate(struct op *ops, int n, char *why, size_t whylen)
{
    static struct model m;
    model_init(&m);
    struct view vw = {0, 1, 2, 1, ~0u, ~0u, 0, 0};
    for (int i = 0; i < n; i++)
        if (apply(&m, &ops[i], &vw, -1)) {
            snprintf(why, whylen, "op %d (%s): %s", i, oname[ops[i].type], m.why);
            return -1;
        }
    for (int x = 2; x < NSTREAM; x++)
        if (m.cap[x].active) {
            snprintf(why, whylen, "the capture on stream %d never ended", x);
            return -1;
        }
    return 0;
}

/* ------------------------------------------------------------------ text form */

static void print_op(FILE *f, const struct op *o, const char *indent)
{
    fprintf(f, "%s%s", indent, oname[o->type]);
    switch (o->type) {
    case O_ALLOC: fprintf(f, " a=%d kind=%s n=%zu val=%u", o->a, kname[o->kind], o->n, o->val); break;
    case O_FREE: fprintf(f, " a=%d", o->a); break;
    case O_SCREATE: fprintf(f, " s=%d val=%u", o->s, o->val); break;
    case O_SDESTROY: fprintf(f, " s=%d", o->s); break;
    case O_COPY:
    case O_SYNCCOPY:
        fprintf(f, " api=%s ptsz=%d hf=%d s=%d a=%d ao=%zu b=%d bo=%zu n=%zu err=%d", aname[o->api], o->ptsz, o->hf,
                o->s, o->a, o->ao, o->b, o->bo, o->n, o->err);
        if (o->rows)
            fprintf(f, " rows=%u pitch=%zu", o->rows, o->pitch);
        break;
    case O_MEMSET:
        fprintf(f, " ptsz=%d hf=%d s=%d a=%d ao=%zu n=%zu val=%u", o->ptsz, o->hf, o->s, o->a, o->ao, o->n, o->val);
        break;
    case O_HFUNC:
        fprintf(f, " ptsz=%d hf=%d s=%d a=%d ao=%zu b=%d bo=%zu n=%zu val=%u", o->ptsz, o->hf, o->s, o->a, o->ao, o->b,
                o->bo, o->n, o->val);
        break;
    case O_EREC:
    case O_EWAIT: fprintf(f, " e=%d ptsz=%d hf=%d s=%d", o->e, o->ptsz, o->hf, o->s); break;
    case O_ESYNC:
    case O_EQUERY:
    case O_EDESTROY: fprintf(f, " e=%d", o->e); break;
    case O_EELAPSED: fprintf(f, " e=%d val=%u", o->e, o->val); break;
    case O_SSYNC:
    case O_SQUERY: fprintf(f, " ptsz=%d hf=%d s=%d", o->ptsz, o->hf, o->s); break;
    case O_CSYNC: break;
    case O_CTXROUND: fprintf(f, " n=%zu val=%u", o->n, o->val); break;
    case O_HWRITE: fprintf(f, " a=%d ao=%zu n=%zu val=%u", o->a, o->ao, o->n, o->val); break;
    case O_HREAD: fprintf(f, " a=%d ao=%zu n=%zu", o->a, o->ao, o->n); break;
    case O_CAPTURE:
        fprintf(f, " s=%d val=%u ptsz=%d ls=%d lptsz=%d lhf=%d reps=%d nsub=%d", o->s, o->val, o->ptsz, o->ls,
                o->lptsz, o->lhf, o->reps, o->nsub);
        break;
    case O_THREADS: fprintf(f, " w=%d nsub=%d", o->w, o->nsub); break;
    case O_KERNEL:
        fprintf(f, " ptsz=%d hf=%d s=%d grid=%u block=%u val=%u", o->ptsz, o->hf, o->s, o->grid, o->block, o->val);
        break;
    case O_CBEGIN: fprintf(f, " s=%d val=%u ptsz=%d", o->s, o->val, o->ptsz); break;
    case O_CEND:
        fprintf(f, " s=%d ptsz=%d ls=%d lptsz=%d lhf=%d reps=%d", o->s, o->ptsz, o->ls, o->lptsz, o->lhf, o->reps);
        break;
    }
    if (indent[0] && o->w >= 0 && o->type != O_THREADS)
        fprintf(f, " w=%d", o->w);
    fputc('\n', f);
    for (int j = 0; j < o->nsub; j++)
        print_op(f, &o->sub[j], "  ");
}

static int lookup(const char *const *names, int n, const char *v)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], v))
            return i;
    return -1;
}

static int parse_line(char *line, struct op *o)
{
    memset(o, 0, sizeof *o);
    o->w = -1;
    char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
    if (!tok)
        return -1;
    o->type = lookup(oname, NOPT, tok);
    if (o->type < 0)
        return -1;
    while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return -1;
        *eq = 0;
        const char *k = tok, *v = eq + 1;
        long long x = strtoll(v, NULL, 10);
        if (!strcmp(k, "api")) o->api = lookup(aname, NAPI, v);
        else if (!strcmp(k, "kind")) o->kind = lookup(kname, NKIND, v);
        else if (!strcmp(k, "ptsz")) o->ptsz = (int)x;
        else if (!strcmp(k, "hf")) o->hf = (int)x;
        else if (!strcmp(k, "s")) o->s = (int)x;
        else if (!strcmp(k, "a")) o->a = (int)x;
        else if (!strcmp(k, "b")) o->b = (int)x;
        else if (!strcmp(k, "ao")) o->ao = (size_t)x;
        else if (!strcmp(k, "bo")) o->bo = (size_t)x;
        else if (!strcmp(k, "n")) o->n = (size_t)x;
        else if (!strcmp(k, "e")) o->e = (int)x;
        else if (!strcmp(k, "val")) o->val = (unsigned)x;
        else if (!strcmp(k, "err")) o->err = (int)x;
        else if (!strcmp(k, "w")) o->w = (int)x;
        else if (!strcmp(k, "ls")) o->ls = (int)x;
        else if (!strcmp(k, "lptsz")) o->lptsz = (int)x;
        else if (!strcmp(k, "lhf")) o->lhf = (int)x;
        else if (!strcmp(k, "reps")) o->reps = (int)x;
        else if (!strcmp(k, "nsub")) o->nsub = (int)x;
        else if (!strcmp(k, "grid")) o->grid = (unsigned)x;
        else if (!strcmp(k, "block")) o->block = (unsigned)x;
        else if (!strcmp(k, "rows")) o->rows = (unsigned)x;
        else if (!strcmp(k, "pitch")) o->pitch = (size_t)x;
        else return -1;
    }
    if (o->api < 0 || o->kind < 0 || o->nsub < 0 || o->nsub > MAXSUB)
        return -1;
    return 0;
}

/* Reads an op list; lines starting with '#' or "env " are ignored. */
static int parse_file(const char *path, struct op *ops, int *n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    int cnt = 0, pending = 0;
    struct op *parent = NULL;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || !strncmp(line, "env ", 4) || line[strspn(line, " \t\r\n")] == 0)
            continue;
        struct op o;
        int sub = line[0] == ' ';
        if (parse_line(line, &o)) {
            fclose(f);
            return -1;
        }
        if (sub) {
            if (!parent || pending <= 0) {
                fclose(f);
                return -1;
            }
            parent->sub[parent->nsub - pending--] = o;
            continue;
        }
        if (pending || cnt >= MAXOPS) {
            fclose(f);
            return -1;
        }
        ops[cnt] = o;
        parent = &ops[cnt++];
        if (o.nsub) {
            parent->sub = calloc((size_t)o.nsub, sizeof(struct op));
            pending = o.nsub;
        }
    }
    fclose(f);
    *n = cnt;
    return pending ? -1 : 0;
}

/* ------------------------------------------------------------------ the generator */

static struct model g_m;

static int pick_slot(const struct model *m, unsigned allowed, int (*ok)(int kind))
{
    int c[NSLOT], k = 0;
    for (int i = 0; i < NSLOT; i++)
        if (m->live[i] && (allowed >> i & 1) && (!ok || ok(m->kind[i])))
            c[k++] = i;
    return k ? c[rn((size_t)k)] : -1;
}

static int ok_dev(int k) { return is_devside(k); }
static int ok_host(int k) { return is_hostside(k); }
static int ok_notpage(int k) { return k != K_PAGE; }

static size_t pick_len(size_t size)
{
    switch (rn(10)) {
    case 0: return pct(50) ? 0 : 1;
    case 1: return size;
    case 2: return size / 2;
    case 3: return size / 4;
    case 4: return size / 8 ? size / 8 : 1;
    case 5: return 1 + rn(16);
    case 6: return 1 + rn(4096);
    default: return 1 + rn(size < 65536 ? size : 65536);
    }
}

static size_t pick_off(size_t size, size_t n)
{
    size_t room = size - n;
    switch (rn(6)) {
    case 0: return 0;
    case 1: return room;
    case 2: return room / 2;
    case 3: return (size / 4) <= room ? size / 4 : room;
    case 4: return rn(room + 1) & ~(size_t)63;
    default: return rn(room + 1);
    }
}

/* ranges of a copy: dst in slot a, src in slot b, not overlapping each other */
static void pick_ranges(struct op *o, const struct model *m)
{
    size_t sa = m->size[o->a], sb = m->size[o->b];
    size_t lim = sa < sb ? sa : sb;
    for (int tries = 0; tries < 8; tries++) {
        o->n = pick_len(lim);
        if (o->n > lim)
            o->n = lim;
        o->ao = pick_off(sa, o->n);
        o->bo = pick_off(sb, o->n);
        if (!ranges_overlap(o))
            return;
    }
    o->n = 0;
}

static int pick_stream(const struct model *m, const struct view *vw, int *last)
{
    if (*last >= 0 && stream_actor(m, vw, *last) >= 0 && pct(75))
        return *last;
    for (;;) {
        int s = vw->main ? (int)rn(NSTREAM) : (int)rn(2);
        if (s == 0 && pct(25))
            continue; /* the legacy stream: a little less than the others */
        if (stream_actor(m, vw, s) >= 0)
            return *last = s;
    }
}

static void pick_handle(struct op *o, int s)
{
    if (s == 0) {
        o->hf = pct(60) ? 0 : 1;
        o->ptsz = o->hf == 0 ? 0 : (int)rn(2);
    } else if (s == 1) {
        o->hf = pct(60) ? 0 : 1;
        o->ptsz = o->hf == 0 ? 1 : (int)rn(2);
    } else {
        o->hf = 2;
        o->ptsz = (int)rn(2);
    }
}

/* Each stream's previous copy as generated: the next copy may continue it. */
static struct op g_prev_copy[NSTREAM];

/* Ranges for o, a copy between the slots of p, its stream's previous copy,
 * through the same entry point, drawn for rule 18: both sides continue p's (the
 * merged case), one side only (kept apart), or the destination overlapping the
 * end of p's (a hazard: the run goes out first); 0 when they do not fit. */
static int continue_ranges(struct op *o, const struct op *p, const struct model *m)
{
    size_t n = pct(70) ? p->n : 1 + rn(4096), ao = p->ao + p->n, bo = p->bo + p->n;
    switch (rn(5)) {
    case 0: ao = pick_off(m->size[o->a], n); break;
    case 1: bo = pick_off(m->size[o->b], n); break;
    case 2: ao -= 1 + rn(p->n < 64 ? p->n : 64); break;
    default: break;
    }
    if (ao + n > m->size[o->a] || bo + n > m->size[o->b])
        return 0;
    o->n = n, o->ao = ao, o->bo = bo;
    return !ranges_overlap(o);
}

/* Make copy o a 2D one (rule 19) within its ranges: 2 to 5 rows, the same
 * pitch on both sides, the last row ending at or before n (which shrinks to
 * it), so that the model's ranges cover every row; between the rows nothing
 * is written. */
static void as_rows(struct op *o)
{
    unsigned r = 2 + (unsigned)rn(4);
    while (r > 2 && o->n < 2 * r)
        r--;
    size_t p = o->n / r, w = 1 + rn(p);
    o->rows = r;
    o->pitch = p;
    o->n = (r - 1) * p + w;
}

/* The previous copy p of o's stream (g_prev_copy holds one per stream) may be
 * continued by o: the same entry point, stream argument and slots, still live
 * and allowed. */
static int may_continue(struct op *o, const struct op *p, const struct model *m, unsigned allowed)
{
    if (p->type != O_COPY || p->err || p->n == 0 || !pct(40))
        return 0;
    for (int side = 0; side < 2; side++) {
        int slot = side ? p->b : p->a;
        if (slot < 0 || slot >= NSLOT || !m->live[slot] || !(allowed >> slot & 1) || m->size[slot] != p->size_at[side])
            return 0;
    }
    o->api = p->api, o->hf = p->hf, o->ptsz = p->ptsz, o->a = p->a, o->b = p->b;
    return 1;
}

/* A stream op (copy, memset, hfunc) on slot set `allowed`; 0 on success. */
static int gen_stream_op(struct op *o, const struct model *m, const struct view *vw, int s, unsigned allowed,
                         int nopage)
{
    (void)vw;
    memset(o, 0, sizeof *o);
    o->w = -1;
    o->s = s;
    pick_handle(o, s);
    int r = (int)rn(100);
    if (r < 70) {
        o->type = O_COPY;
        struct op *prev = s >= 0 && s < NSTREAM ? &g_prev_copy[s] : NULL;
        int cont = prev && may_continue(o, prev, m, allowed);
        if (!cont)
            o->api = (int)rn(NAPI);
        int (*dk)(int) = NULL, (*sk)(int) = NULL;
        if (o->api == A_H2D) dk = ok_dev, sk = ok_host;
        if (o->api == A_D2H) dk = ok_host, sk = ok_dev;
        if (o->api == A_D2D) dk = ok_dev, sk = ok_dev;
        if (nopage) {
            if (!dk) dk = ok_notpage;
            if (!sk) sk = ok_notpage;
        }
        if (cont && ((dk && !dk(m->kind[o->a])) || (sk && !sk(m->kind[o->b]))))
            cont = 0; /* the slots' memory changed kind: p's entry point, new slots */
        if (!cont) {
            o->a = pick_slot(m, allowed, dk);
            o->b = pct(20) ? o->a : pick_slot(m, allowed, sk);
        }
        if (o->a < 0 || o->b < 0)
            return -1;
        if (o->a == o->b && sk && !sk(m->kind[o->a]))
            return -1;
        if (nopage && (m->kind[o->a] == K_PAGE || m->kind[o->b] == K_PAGE))
            return -1;
        if (!cont || !continue_ranges(o, prev, m))
            pick_ranges(o, m);
        o->size_at[0] = m->size[o->a], o->size_at[1] = m->size[o->b];
        if (o->n > 1 && pct(nopage ? 0 : 2)) {
            int side = o->api == A_D2H ? o->b : o->a;
            if (is_devside(m->kind[side])) {
                o->err = 1;
                size_t *off = o->api == A_D2H ? &o->bo : &o->ao;
                /* starts inside the allocation and runs past its end, so the
                 * driver can tell (a start outside every allocation would be
                 * taken for pageable host memory and overwrite the heap) */
                size_t k = o->n - 1 < 64 ? o->n - 1 : 64;
                *off = m->size[side] - 1 - rn(k);
                if (o->api != A_D2H && o->b == o->a)
                    o->b = o->a, o->bo = 0;
            }
        }
        if (!o->err && !cont && o->n >= 4 && pct(15))
            as_rows(o);
        if (!o->err && s >= 2 && !nopage && m->s_stale[s] && pct(2)) {
            /* a copy on a handle that was destroyed earlier */
            o->err = 2;
        }
        if (prev)
            *prev = *o;
        return 0;
    }
    if (r < 85) {
        o->type = O_MEMSET;
        o->a = pick_slot(m, allowed, ok_notpage);
        if (o->a < 0)
            return -1;
        o->n = pick_len(m->size[o->a]);
        o->ao = pick_off(m->size[o->a], o->n);
        o->val = (unsigned)rn(256);
        return 0;
    }
    o->type = O_HFUNC;
    o->a = pick_slot(m, allowed, ok_notpage);
    o->b = pct(30) ? o->a : pick_slot(m, allowed, ok_notpage);
    if (o->a < 0 || o->b < 0)
        return -1;
    pick_ranges(o, m);
    if (o->n && o->a == o->b && pct(30))
        o->bo = o->ao; /* in place */
    o->val = (unsigned)rn(256);
    return 0;
}

static void free_subs(struct op *o)
{
    free(o->sub);
    o->sub = NULL;
    o->nsub = 0;
}

/* Try op o against the model: keep the effect (0) or roll back (-1). */
static int try_op(struct op *o)
{
    static struct model snap;
    snap = g_m;
    struct view vw = {0, 1, 2, 1, ~0u, ~0u, 0, 0};
    if (apply(&g_m, o, &vw, -1) == 0)
        return 0;
    memcpy(snap.why, g_m.why, sizeof snap.why); /* the reason outlives the roll-back */
    g_m = snap;
    return -1;
}

static size_t pick_alloc_size(void)
{
    switch (rn(10)) {
    case 0: return 16 + rn(112);
    case 1: return ((size_t)1 << 20) + rn((size_t)3 << 20); /* megabytes */
    case 2: return 65536 + rn(200000);
    default: return 256 + rn(32768);
    }
}

static void gen_alloc(struct op *o, int slot)
{
    memset(o, 0, sizeof *o);
    o->w = -1;
    o->type = O_ALLOC;
    o->a = slot;
    o->kind = (int)rn(NKIND);
    o->n = pick_alloc_size();
    o->val = (unsigned)rnd();
}

/* Compute on stream s: a grid that leaves SMs free, or one that fills the GPU
 * (the simulated driver's occupancy: 2048 threads an SM, 132 SMs, so 1056 blocks
 * of 256 threads fill it and 1055 do not), which makes cubatch ask the stream
 * before a copy-kernel launch (rule 12).  It runs until `val` queries found it
 * running (sometimes for good: only a synchronization ends it). */
static void gen_kernel(struct op *o, int s)
{
    memset(o, 0, sizeof *o);
    o->w = -1;
    o->type = O_KERNEL;
    o->s = s;
    pick_handle(o, s);
    switch (rn(5)) {
    case 0: o->grid = 1 + (unsigned)rn(64), o->block = 32u << rn(4); break;
    case 1: o->grid = 1055 + (unsigned)rn(2), o->block = 256; break;
    case 2: o->grid = 264 + (unsigned)rn(8), o->block = 1024; break;
    default: o->grid = 4096, o->block = 256; break;
    }
    o->val = pct(50) ? 0 : pct(80) ? 1 + (unsigned)rn(4) : 1u << 20;
}

/* A capture's graph launch: on a stream the view may use (the capturing one is
 * always usable), 1-3 times. */
static void gen_cend(struct op *o, int cs, const struct view *vw)
{
    memset(o, 0, sizeof *o);
    o->w = -1;
    o->type = O_CEND;
    o->s = cs;
    o->ptsz = (int)rn(2);
    int ls = cs;
    for (int tries = 0; tries < 8 && ls == cs && pct(70); tries++) {
        int c = (int)rn(NSTREAM);
        if (stream_actor(&g_m, vw, c) >= 0)
            ls = c;
    }
    o->ls = ls;
    struct op l = {0};
    pick_handle(&l, ls);
    o->lptsz = l.ptsz;
    o->lhf = l.hf;
    o->reps = 1 + (int)rn(3);
}

/* A stream other than the capturing one (not the legacy stream while a blocking
 * stream captures: that is refused). */
static int pick_other(const struct view *vw, int cs, int *last)
{
    for (int tries = 0; tries < 16; tries++) {
        int s = pick_stream(&g_m, vw, last);
        if (s != cs && !(s == 0 && g_m.s_blocking[cs]))
            return s;
    }
    return 1;
}

/* One op of a capture on cs by a thread of view vw: captured (on cs: copies,
 * memsets, host functions, compute, records of event 0, the one without timing,
 * and waits for it) or not (the same on other streams, records and waits of any
 * event, synchronizations and queries, host accesses).  The model refuses what the
 * capture's mode forbids; `evok` are the events the thread may use. */
static int gen_cap_inner(struct op *o, int cs, const struct view *vw, unsigned evok, int *last)
{
    memset(o, 0, sizeof *o);
    o->w = -1;
    int r = (int)rn(100), s;
    if (r < 36) {
        if (gen_stream_op(o, &g_m, vw, cs, vw->slots, 1))
            return -1;
        o->hf = 2;
        o->err = 0;
        return 0;
    }
    if (r < 46) {
        gen_kernel(o, cs);
        return 0;
    }
    if (r < 54) {
        o->type = r < 50 ? O_EREC : O_EWAIT;
        o->e = 0;
        o->s = cs;
        pick_handle(o, cs);
        return evok & 1 ? 0 : -1;
    }
    s = pick_other(vw, cs, last);
    if (r < 72) {
        if (gen_stream_op(o, &g_m, vw, s, vw->slots, 1))
            return -1;
        o->err = 0;
        return 0;
    }
    if (r < 78) {
        gen_kernel(o, s);
        return 0;
    }
    if (!evok && r < 94)
        return -1;
    if (r < 86) {
        o->type = pct(50) ? O_EREC : O_EWAIT;
        do
            o->e = (int)rn(NEV);
        while (!(evok >> o->e & 1));
        o->s = s;
        pick_handle(o, s);
        return 0;
    }
    if (r < 94) {
        int k = (int)rn(6);
        o->type = k < 2 ? O_SSYNC : k < 3 ? O_SQUERY : k < 4 ? O_ESYNC : k < 5 ? O_EQUERY : O_EELAPSED;
        o->s = s;
        pick_handle(o, s);
        do
            o->e = (int)rn(NEV);
        while (!(evok >> o->e & 1));
        do
            o->val = (unsigned)rn(NEV);
        while (!(evok >> o->val & 1));
        if (o->type == O_SSYNC || o->type == O_SQUERY)
            o->e = o->val = 0;
        return 0;
    }
    o->type = pct(50) ? O_HWRITE : O_HREAD;
    o->a = pick_slot(&g_m, vw->slots, NULL);
    if (o->a < 0)
        return -1;
    o->n = pick_len(g_m.size[o->a]);
    o->ao = pick_off(g_m.size[o->a], o->n);
    o->val = (unsigned)rnd();
    return 0;
}

/* A burst template: copies of one chunk size between two allocations (no
 * pageable memory), for count copies over consecutive chunks. */
static int gen_burst_copy(struct op *bt, const struct view *vw, int s)
{
    static const size_t chunks[] = {8, 64, 512, 4096, 16384};
    if (gen_stream_op(bt, &g_m, vw, s, vw->slots, 1) || bt->type != O_COPY || bt->err)
        return -1;
    size_t lim = g_m.size[bt->a] < g_m.size[bt->b] ? g_m.size[bt->a] : g_m.size[bt->b];
    bt->n = chunks[rn(5)];
    return bt->n * 2 <= lim ? 0 : -1;
}

static void burst_chunk(struct op *o, const struct op *bt, size_t i)
{
    size_t lim = g_m.size[bt->a] < g_m.size[bt->b] ? g_m.size[bt->a] : g_m.size[bt->b];
    size_t k = lim / bt->n;
    *o = *bt;
    o->ao = i % k * bt->n;
    o->bo = (i + 1) % k * bt->n;
}

/* Try op o inside the main thread's capture on cs: kept only if the capture can
 * still end and launch its graph on cs (its replay would not race with what
 * happened meanwhile), so that the end always fits. */
static int try_in_capture(struct op *o, int cs)
{
    static struct model pre, post;
    pre = g_m;
    if (try_op(o))
        return -1;
    post = g_m;
    struct op e;
    memset(&e, 0, sizeof e);
    e.w = -1;
    e.type = O_CEND;
    e.s = e.ls = cs;
    e.lhf = 2;
    e.reps = 1; /* more launches on cs race with nothing more: they follow the first */
    if (try_op(&e)) {
        g_m = pre;
        return -1;
    }
    g_m = post;
    return 0;
}

/* The main thread captures on a created stream: begin, ops (captured or not),
 * sometimes compute filling the GPU first and a burst of copies on another stream
 * (a run that goes out while the capture is under way, by its size, the timer or
 * a wait), end, instantiate, launch.  Every op is tried against the model; the end
 * always fits. */
static void gen_capture(int *last)
{
    struct view vw = {0, 1, 2, 1, ~0u, ~0u, 0, 0};
    int cs = -1;
    for (int i = 2; i < NSTREAM; i++)
        if (g_m.s_live[i] && (cs < 0 || pct(50)))
            cs = i;
    if (cs < 0 || g_nops + 4 * MAXCAPOPS > MAXOPS)
        return;
    struct op *o = &g_ops[g_nops];
    memset(o, 0, sizeof *o);
    o->w = -1;
    o->type = O_CBEGIN;
    o->s = cs;
    o->val = (unsigned)rn(3); /* GLOBAL, THREAD_LOCAL, RELAXED */
    o->ptsz = (int)rn(2);
    if (try_op(o))
        return;
    g_nops++;
    if (pct(50)) {
        gen_kernel(&g_ops[g_nops], cs);
        if (try_in_capture(&g_ops[g_nops], cs) == 0)
            g_nops++;
    }
    int k = 1 + (int)rn(14), burst_at = pct(45) ? (int)rn((size_t)k) : -1;
    for (int j = 0; j < k; j++) {
        if (j == burst_at) {
            struct op bt;
            int s = pick_other(&vw, cs, last);
            if (gen_burst_copy(&bt, &vw, s) == 0)
                for (size_t i = 0, n = 2 + rn(40); i < n; i++) {
                    burst_chunk(&g_ops[g_nops], &bt, i);
                    if (ranges_overlap(&g_ops[g_nops]) || try_in_capture(&g_ops[g_nops], cs))
                        break;
                    g_nops++;
                }
        }
        if (gen_cap_inner(&g_ops[g_nops], cs, &vw, (1u << NEV) - 1, last) == 0 &&
            try_in_capture(&g_ops[g_nops], cs) == 0)
            g_nops++;
    }
    for (int tries = 0;; tries++) {
        gen_cend(&g_ops[g_nops], cs, &vw);
        if (tries > 8)
            g_ops[g_nops].ls = cs, g_ops[g_nops].lhf = 2;
        if (try_op(&g_ops[g_nops]) == 0)
            break;
        if (tries > 8)
            die("fuzz: a capture's end does not fit: %s", g_m.why);
    }
    g_nops++;
}

/* A worker's capture on one of its streams, for a thread block: begin, k ops
 * (captured, or on its other streams while it captures), end and launch; put into
 * sub-ops at *n (the array has room).  Its mode decides what the other workers may
 * do meanwhile (the model's view of them). */
static void gen_worker_capture(struct op *sub, int *n, int w, unsigned slots, unsigned streams, unsigned evs)
{
    int cs;
    do
        cs = 2 + (int)rn(NSTREAM - 2);
    while (!(streams >> cs & 1));
    struct view wv = {0, 0, 0, 0, slots, streams, 0, 0};
    struct op *o = &sub[(*n)++];
    memset(o, 0, sizeof *o);
    o->type = O_CBEGIN;
    o->s = cs;
    o->val = (unsigned)rn(3);
    o->ptsz = (int)rn(2);
    o->w = w;
    int last = -1, k = 1 + (int)rn(10);
    if (pct(50)) {
        gen_kernel(&sub[*n], cs);
        sub[(*n)++].w = w;
    }
    for (int j = 0; j < k; j++) {
        o = &sub[*n];
        /* the worker's streams as gen_stream_op sees them: its per-thread and
         * legacy streams, or its own created ones */
        if (gen_cap_inner(o, cs, &wv, evs, &last))
            continue;
        o->w = w;
        (*n)++;
    }
    gen_cend(&sub[*n], cs, &wv);
    sub[(*n)++].w = w;
}

static void generate(uint64_t seed, int len)
{
    rng_state = seed * 0x2545F4914F6CDD1Dull + 7;
    model_init(&g_m);
    g_nops = 0;
    memset(g_prev_copy, 0, sizeof g_prev_copy);
    int nslots = 4 + (int)rn(NSLOT - 3);
    for (int i = 0; i < nslots; i++) {
        gen_alloc(&g_ops[g_nops], i);
        if (try_op(&g_ops[g_nops]) == 0)
            g_nops++;
    }
    int nstreams = 1 + (int)rn(NSTREAM - 2);
    for (int i = 0; i < nstreams; i++) {
        struct op *o = &g_ops[g_nops];
        memset(o, 0, sizeof *o);
        o->w = -1;
        o->type = O_SCREATE;
        o->s = 2 + i;
        o->val = pct(50) ? CU_STREAM_NON_BLOCKING : 0;
        if (try_op(o) == 0)
            g_nops++;
    }
    int last = -1;
    struct view vw = {0, 1, 2, 1, ~0u, ~0u, 0, 0};
    /* op-class weights vary per program so that some are dense with copies */
    int wcopy = 50 + (int)rn(40);
    /* bursts: many copies in a row on one stream, over consecutive chunks, so that
     * runs get long, fill up, and meet chained and overlapping ranges */
    int burst = 0, bi = 0;
    struct op bt = {0};
    while (g_nops < len && g_nops < MAXOPS - 2) {
        struct op *o = &g_ops[g_nops];
        int ok = 0;
        if (!burst && pct(8)) {
            memset(&bt, 0, sizeof bt);
            bt.s = pick_stream(&g_m, &vw, &last);
            if (gen_stream_op(&bt, &g_m, &vw, bt.s, ~0u, 0) == 0 && bt.type == O_COPY && !bt.err) {
                size_t lim = g_m.size[bt.a] < g_m.size[bt.b] ? g_m.size[bt.a] : g_m.size[bt.b];
                static const size_t chunks[] = {1, 8, 64, 512, 4096, 16384, 65536};
                bt.n = chunks[rn(7)];
                if (bt.n * 2 <= lim) {
                    burst = 2 + (int)rn(60);
                    bi = 0;
                    bt.val = (unsigned)rn(3); /* 0 same offsets both sides, 1 shifted, 2 reversed */
                    if (pct(30) && g_nops < MAXOPS - 3) {
                        /* compute filling the GPU on another stream first, and the
                         * burst made uploads from pinned memory where there is some:
                         * its copies meet rule 12 and the measured choice, and pass on
                         * spells when they pass (seed_env's CUSIM_COST, CUBATCH_MEASURE) */
                        int dv = -1, hs = -1;
                        for (int i = 0; i < NSLOT; i++) {
                            if (g_m.live[i] && g_m.kind[i] == K_DEV && (dv < 0 || pct(50)))
                                dv = i;
                            if (g_m.live[i] && (g_m.kind[i] == K_PIN || g_m.kind[i] == K_HA) && (hs < 0 || pct(50)))
                                hs = i;
                        }
                        if (dv >= 0 && hs >= 0 && g_m.size[dv] >= 2 * bt.n && g_m.size[hs] >= 2 * bt.n && pct(70))
                            bt.a = dv, bt.b = hs, bt.ao = bt.bo = 0, bt.api = pct(50) ? 1 : 0;
                        gen_kernel(o, pick_other(&vw, bt.s, &last));
                        o->grid = 4096, o->block = 256, o->val = 1u << 20;
                        if (try_op(o) == 0)
                            g_nops++;
                        continue;
                    }
                }
            }
        }
        if (burst && pct(12)) {
            /* an event record between the burst's copies: a marker in its run
             * (rule 11), observed later by any stream or thread, or recorded again */
            memset(o, 0, sizeof *o);
            o->w = -1;
            o->type = O_EREC;
            o->e = (int)rn(NEV);
            o->s = bt.s;
            pick_handle(o, bt.s);
            if (try_op(o) == 0)
                g_nops++;
            continue;
        }
        if (burst) {
            size_t lim = g_m.size[bt.a] < g_m.size[bt.b] ? g_m.size[bt.a] : g_m.size[bt.b];
            size_t k = lim / bt.n, i = (size_t)bi++;
            *o = bt;
            o->val = 0;
            if (pct(15)) {
                /* a stray copy in the middle of the burst: hazards with it */
                gen_stream_op(o, &g_m, &vw, bt.s, ~0u, 0);
            } else {
                size_t ia = i % k, ib = bt.val == 2 ? k - 1 - ia : bt.val == 1 ? (ia + 1) % k : ia;
                o->ao = ia * bt.n;
                o->bo = ib * bt.n;
                if (pct(10))
                    o->n = 1 + rn(bt.n);
            }
            if (--burst == 0 || ranges_overlap(o) || try_op(o)) {
                burst = 0;
                continue;
            }
            g_nops++;
            continue;
        }
        int done = 0; /* gen_capture added its ops itself */
        for (int tries = 0; tries < 12 && !ok; tries++) {
            memset(o, 0, sizeof *o);
            o->w = -1;
            int r = (int)rn(100);
            if (r < wcopy) {
                int s = pick_stream(&g_m, &vw, &last);
                if (gen_stream_op(o, &g_m, &vw, s, ~0u, 0))
                    continue;
            } else {
                r = (int)rn(100);
                if (r < 12) {
                    o->type = O_EREC;
                    o->e = (int)rn(NEV);
                    o->s = pick_stream(&g_m, &vw, &last);
                    pick_handle(o, o->s);
                } else if (r < 24) {
                    o->type = O_EWAIT;
                    o->e = (int)rn(NEV);
                    o->s = pick_stream(&g_m, &vw, &last);
                    pick_handle(o, o->s);
                } else if (r < 30) {
                    int k = (int)rn(8);
                    o->type = k < 3 ? O_ESYNC : k < 5 ? O_EQUERY : k < 7 ? O_EELAPSED : O_EDESTROY;
                    o->e = (int)rn(NEV);
                    o->val = (unsigned)rn(NEV);
                } else if (r < 42) {
                    o->type = pct(70) ? O_SSYNC : O_SQUERY;
                    o->s = pick_stream(&g_m, &vw, &last);
                    pick_handle(o, o->s);
                } else if (r < 47) {
                    o->type = O_CSYNC;
                    if (pct(60)) { /* a context made, used and destroyed among the copies */
                        o->type = O_CTXROUND;
                        o->n = 1 + rn(64);
                        o->val = (unsigned)rnd();
                    }
                } else if (r < 55) {
                    o->type = pct(50) ? O_HWRITE : O_HREAD;
                    o->a = pick_slot(&g_m, ~0u, NULL);
                    if (o->a < 0)
                        continue;
                    o->n = pick_len(g_m.size[o->a]);
                    o->ao = pick_off(g_m.size[o->a], o->n);
                    o->val = (unsigned)rnd();
                } else if (r < 60) {
                    o->type = O_SYNCCOPY;
                    o->api = (int)rn(NAPI);
                    o->ptsz = (int)rn(2);
                    int (*dk)(int) = NULL, (*sk)(int) = NULL;
                    if (o->api == A_H2D) dk = ok_dev, sk = ok_host;
                    if (o->api == A_D2H) dk = ok_host, sk = ok_dev;
                    if (o->api == A_D2D) dk = ok_dev, sk = ok_dev;
                    o->a = pick_slot(&g_m, ~0u, dk);
                    o->b = pick_slot(&g_m, ~0u, sk);
                    if (o->a < 0 || o->b < 0)
                        continue;
                    pick_ranges(o, &g_m);
                } else if (r < 66) {
                    if (pct(50)) {
                        o->type = O_FREE;
                        o->a = pick_slot(&g_m, ~0u, NULL);
                        if (o->a < 0)
                            continue;
                    } else {
                        int slot = -1;
                        for (int i = 0; i < NSLOT; i++)
                            if (!g_m.live[i])
                                slot = i;
                        if (slot < 0)
                            continue;
                        gen_alloc(o, slot);
                    }
                } else if (r < 70) {
                    int s = 2 + (int)rn(NSTREAM - 2);
                    o->s = s;
                    if (g_m.s_live[s]) {
                        o->type = O_SDESTROY;
                    } else {
                        o->type = O_SCREATE;
                        o->val = pct(50) ? CU_STREAM_NON_BLOCKING : 0;
                    }
                } else if (r < 77) {
                    /* a capture (several ops, tried one by one), then its launch */
                    gen_capture(&last);
                    done = 1;
                    break;
                } else if (r < 83) {
                    gen_kernel(o, pick_stream(&g_m, &vw, &last));
                } else {
                    /* several threads, each on its own per-thread stream, the legacy
                     * one and created streams it owns */
                    if (g_m.nact + 3 * MAXW > MAXA)
                        continue;
                    o->type = O_THREADS;
                    o->w = 2 + (int)rn(MAXW - 1);
                    unsigned own[MAXW] = {0}, ownev[MAXW] = {0}, ownst[MAXW] = {0};
                    for (int i = 2; i < NSTREAM; i++)
                        if (g_m.s_live[i] && !g_m.s_blocking[i] && pct(60))
                            ownst[rn((size_t)o->w)] |= 1u << i;
                    for (int i = 0; i < NSLOT; i++)
                        if (g_m.live[i] && pct(80))
                            own[rn((size_t)o->w)] |= 1u << i;
                    for (int i = 0; i < NEV; i++)
                        if (pct(60))
                            ownev[rn((size_t)o->w)] |= 1u << i;
                    int k = 2 + (int)rn(20);
                    o->sub = calloc((size_t)k + MAXCAPOPS, sizeof(struct op)); /* room for a capture */
                    int wl[MAXW];
                    for (int w = 0; w < o->w; w++)
                        wl[w] = -1;
                    for (int j = 0; j < k; j++) {
                        int w = (int)rn((size_t)o->w);
                        struct view wv = {0, 0, 0, 0, own[w], ownst[w], 0, 0};
                        struct op *q = &o->sub[o->nsub];
                        int s = pct(70) ? 1 : 0;
                        if (ownst[w] && pct(50))
                            do
                                s = 2 + (int)rn(NSTREAM - 2);
                            while (!(ownst[w] >> s & 1));
                        if (wl[w] >= 0 && pct(70))
                            s = wl[w];
                        wl[w] = s;
                        int rr = (int)rn(100);
                        if (rr < 70) {
                            if (gen_stream_op(q, &g_m, &wv, s, own[w], 0))
                                continue;
                            q->err = 0;
                        } else if (rr < 75) {
                            gen_kernel(q, s);
                        } else if (rr < 84 && ownev[w]) {
                            /* the worker's own events, on its streams */
                            memset(q, 0, sizeof *q);
                            int k = (int)rn(10);
                            q->type = k < 4 ? O_EREC : k < 6 ? O_EWAIT : k < 7 ? O_ESYNC : k < 8 ? O_EQUERY : O_EELAPSED;
                            do
                                q->e = (int)rn(NEV);
                            while (!(ownev[w] >> q->e & 1));
                            do
                                q->val = (unsigned)rn(NEV);
                            while (!(ownev[w] >> q->val & 1));
                            q->s = s;
                            pick_handle(q, s);
                        } else if (rr < 90) {
                            memset(q, 0, sizeof *q);
                            q->type = pct(70) ? O_SSYNC : O_SQUERY;
                            q->s = s;
                            pick_handle(q, s);
                        } else {
                            memset(q, 0, sizeof *q);
                            q->type = pct(50) ? O_HWRITE : O_HREAD;
                            q->a = pick_slot(&g_m, own[w], NULL);
                            if (q->a < 0)
                                continue;
                            q->n = pick_len(g_m.size[q->a]);
                            q->ao = pick_off(g_m.size[q->a], q->n);
                            q->val = (unsigned)rnd();
                        }
                        q->w = w;
                        o->nsub++;
                    }
                    /* a worker captures on a stream of its own while the others
                     * go on (their calls then obey the capture's rules) */
                    int cw = (int)rn((size_t)o->w);
                    if (ownst[cw] && pct(40)) {
                        struct op grp[MAXCAPOPS];
                        int gn = 0, pos = (int)rn((size_t)o->nsub + 1);
                        gen_worker_capture(grp, &gn, cw, own[cw], ownst[cw], ownev[cw]);
                        memmove(&o->sub[pos + gn], &o->sub[pos], (size_t)(o->nsub - pos) * sizeof(struct op));
                        memcpy(&o->sub[pos], grp, (size_t)gn * sizeof(struct op));
                        o->nsub += gn;
                    }
                    if (!o->nsub) {
                        free_subs(o);
                        continue;
                    }
                    /* drop the sub-op the model refuses (a race, a call a capture
                     * forbids; the capture's begin or end: both), one at a time,
                     * until the block fits */
                    while (o->nsub) {
                        struct model snap = g_m;
                        struct view mv = {0, 1, 2, 1, ~0u, ~0u, 0, 0};
                        g_m.bad_sub = -1;
                        int bad = apply(&g_m, o, &mv, -1) ? g_m.bad_sub : -2;
                        g_m = snap;
                        if (bad == -2)
                            break;
                        if (bad < 0 || bad >= o->nsub) {
                            o->nsub = 0;
                            break;
                        }
                        int t = o->sub[bad].type, kept = 0;
                        for (int j = 0; j < o->nsub; j++) {
                            int u = o->sub[j].type;
                            if (j == bad || ((t == O_CBEGIN || t == O_CEND) && (u == O_CBEGIN || u == O_CEND)))
                                continue;
                            o->sub[kept++] = o->sub[j];
                        }
                        o->nsub = kept;
                    }
                    if (!o->nsub) {
                        free_subs(o);
                        continue;
                    }
                }
            }
            if (try_op(o) == 0)
                ok = 1;
            else if (o->nsub)
                free_subs(o);
        }
        if (done)
            continue;
        if (!ok) {
            /* nothing fits: synchronize, which makes everything fit again */
            memset(o, 0, sizeof *o);
            o->w = -1;
            if (pct(50)) {
                o->type = O_CSYNC;
            } else {
                o->type = O_SSYNC;
                o->s = pick_stream(&g_m, &vw, &last);
                pick_handle(o, o->s);
            }
            if (try_op(o))
                continue;
        }
        g_nops++;
    }
}

/* ------------------------------------------------------------------ execution */

static CUcontext g_ctx;
static CUevent g_ev[NEV];
static CUstream g_st[NSTREAM], g_stale[NSTREAM];
static unsigned char *g_ptr[NSLOT];
static int g_kind[NSLOT], g_live[NSLOT];
static size_t g_size[NSLOT];
static int g_relaxed; /* the program has deliberate errors: compare error codes per epoch */
static int g_reuse;   /* CUSIM_HANDLE_REUSE=1: the simulated driver gives dead handles again */
static int g_polls;   /* the program has compute that stream queries find running */
static CUfunction g_compute; /* the simulated driver's compute kernel */
static CUgraphExec g_execs[MAXOPS];
static int g_nexecs;
static pthread_mutex_t g_execs_mu = PTHREAD_MUTEX_INITIALIZER; /* workers launch graphs too */

/* output: per thread buffer so that workers' lines come out in a fixed order */
struct out {
    char *b;
    size_t n, cap;
};
static struct out g_out;
static int g_epoch;
static int g_errs[4096], g_nerrs;
static pthread_mutex_t g_errs_mu = PTHREAD_MUTEX_INITIALIZER; /* workers record errors too */

static void outf(struct out *o, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    if ((size_t)k >= sizeof tmp)
        k = sizeof tmp - 1;
    if (o->n + (size_t)k + 1 > o->cap) {
        o->cap = (o->n + (size_t)k + 1) * 2;
        o->b = realloc(o->b, o->cap);
        if (!o->b)
            abort();
    }
    memcpy(o->b + o->n, tmp, (size_t)k);
    o->n += (size_t)k;
    o->b[o->n] = 0;
}

static void record_rc(struct out *o, const char *label, CUresult rc)
{
    /* The capture errors (900-908): the generator makes only programs whose
     * captures the driver accepts, so a plain run that meets one is the fuzzer's
     * mistake (the driver process checks), a preloaded one cubatch's. */
    if (rc >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && rc <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)
        outf(o, "# capture-refused %s %d\n", label, (int)rc);
    if (!g_relaxed) {
        outf(o, "rc %s %d\n", label, (int)rc);
        return;
    }
    outf(o, "# rc %s %d\n", label, (int)rc);
    if (rc == CUDA_SUCCESS)
        return;
    pthread_mutex_lock(&g_errs_mu);
    if (g_nerrs < 4096)
        g_errs[g_nerrs++] = (int)rc;
    pthread_mutex_unlock(&g_errs_mu);
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* End of an epoch: every run of the context was flushed (context synchronize, a
 * free, a synchronous copy), so every deferred error has surfaced by now. */
static void epoch_end(void)
{
    if (!g_relaxed)
        return;
    qsort(g_errs, (size_t)g_nerrs, sizeof(int), cmp_int);
    outf(&g_out, "epoch %d errors", g_epoch++);
    for (int i = 0; i < g_nerrs; i++)
        outf(&g_out, " %d", g_errs[i]);
    outf(&g_out, "\n");
    g_nerrs = 0;
}

/* A context made, used and destroyed among the program's copies (ctxround): on
 * its own created stream (val bit 0: non-blocking; bit 1: destroyed before the
 * context, else it dies with it) n uploads then n downloads, n downloads on its
 * legacy stream, and a thread's n per-thread downloads flushed when it exits;
 * every byte read back hashed.  Then, back in the primary context, a stream of
 * the other blocking kind: n uploads on it, n downloads of them on the legacy
 * stream (which follows a blocking stream's work, rule 3).  With
 * CUSIM_HANDLE_REUSE=1 (half the seeds) the contexts and streams made get the
 * dead ones' handles, as on the real driver (that stream the round's own dead
 * one's): what cubatch kept of the old ones must not serve them. */
struct round_arg { CUcontext ctx; CUdeviceptr d; unsigned char *out; size_t n, sz; CUresult rc; };
static void *round_thread(void *p)
{
    struct round_arg *a = p;
    a->rc = cuCtxSetCurrent(a->ctx);
    for (size_t i = 0; i < a->n && !a->rc; i++)
        a->rc = cuMemcpyDtoHAsync_v2_ptsz(a->out + i * a->sz, a->d + i * a->sz, a->sz, NULL);
    return NULL;
}
static void ctx_round(const struct op *o, const char *label)
{
    enum { SZ = 512 };
    size_t n = o->n, tot = n * SZ;
    CUdevice dev;
    CUcontext c = NULL, popped;
    CUstream s = NULL;
    CUresult rc = cuDeviceGet(&dev, 0);
    if (!rc)
        rc = cuCtxCreate_v2(&c, 0, dev);
    if (!rc)
        rc = cuStreamCreate(&s, o->val & 1 ? CU_STREAM_NON_BLOCKING : 0);
    unsigned char *in = NULL, *out = NULL, *out2 = NULL;
    CUdeviceptr d = 0;
    if (!rc)
        rc = cuMemAllocHost_v2((void **)&in, tot);
    if (!rc)
        rc = cuMemAllocHost_v2((void **)&out, tot);
    if (!rc)
        rc = cuMemAllocHost_v2((void **)&out2, tot);
    if (!rc)
        rc = cuMemAlloc_v2(&d, tot);
    if (rc)
        die("ctxround setup: %d", (int)rc);
    fill_pattern(in, tot, o->val);
    memset(out, 0, tot);
    memset(out2, 0, tot);
    for (size_t i = 0; i < n; i++)
        record_rc(&g_out, label, cuMemcpyHtoDAsync_v2(d + i * SZ, in + i * SZ, SZ, s));
    for (size_t i = 0; i < n; i++)
        record_rc(&g_out, label, cuMemcpyDtoHAsync_v2(out + i * SZ, d + i * SZ, SZ, s));
    record_rc(&g_out, label, cuStreamSynchronize(s));
    outf(&g_out, "ctxround %s stream %016llx\n", label, (unsigned long long)hash_bytes(out, tot));
    memset(out, 0, tot);
    for (size_t i = 0; i < n; i++)
        record_rc(&g_out, label, cuMemcpyDtoHAsync_v2(out + i * SZ, d + i * SZ, SZ, NULL));
    record_rc(&g_out, label, cuCtxSynchronize());
    outf(&g_out, "ctxround %s legacy %016llx\n", label, (unsigned long long)hash_bytes(out, tot));
    struct round_arg a = {c, d, out2, n, SZ, CUDA_SUCCESS};
    pthread_t th;
    if (pthread_create(&th, NULL, round_thread, &a))
        die("ctxround thread");
    pthread_join(th, NULL);
    record_rc(&g_out, label, a.rc);
    record_rc(&g_out, label, cuCtxSynchronize());
    outf(&g_out, "ctxround %s thread %016llx\n", label, (unsigned long long)hash_bytes(out2, tot));
    if (o->val & 2)
        record_rc(&g_out, label, cuStreamDestroy_v2(s));
    record_rc(&g_out, label, cuCtxPopCurrent_v2(&popped));
    record_rc(&g_out, label, cuCtxDestroy_v2(c));
    record_rc(&g_out, label, cuCtxSetCurrent(g_ctx));
    /* its memory died with it: the primary context's own */
    if ((rc = cuStreamCreate(&s, o->val & 1 ? 0 : CU_STREAM_NON_BLOCKING)) || (rc = cuMemAllocHost_v2((void **)&in, tot)) ||
        (rc = cuMemAllocHost_v2((void **)&out, tot)) || (rc = cuMemAlloc_v2(&d, tot)))
        die("ctxround primary setup: %d", (int)rc);
    fill_pattern(in, tot, o->val + 1);
    memset(out, 0, tot);
    for (size_t i = 0; i < n; i++)
        record_rc(&g_out, label, cuMemcpyHtoDAsync_v2(d + i * SZ, in + i * SZ, SZ, s));
    if (o->val & 1) /* blocking: the legacy stream follows it */
        for (size_t i = 0; i < n; i++)
            record_rc(&g_out, label, cuMemcpyDtoHAsync_v2(out + i * SZ, d + i * SZ, SZ, CU_STREAM_LEGACY));
    else
        record_rc(&g_out, label, cuStreamSynchronize(s));
    record_rc(&g_out, label, cuStreamSynchronize(CU_STREAM_LEGACY));
    record_rc(&g_out, label, cuStreamSynchronize(s));
    if (!(o->val & 1))
        for (size_t i = 0; i < n; i++)
            record_rc(&g_out, label, cuMemcpyDtoHAsync_v2(out + i * SZ, d + i * SZ, SZ, s));
    record_rc(&g_out, label, cuStreamSynchronize(s));
    outf(&g_out, "ctxround %s after %016llx\n", label, (unsigned long long)hash_bytes(out, tot));
    record_rc(&g_out, label, cuStreamDestroy_v2(s));
    record_rc(&g_out, label, cuMemFree_v2(d));
    record_rc(&g_out, label, cuMemFreeHost(in));
    record_rc(&g_out, label, cuMemFreeHost(out));
    epoch_end();
}

static CUstream handle(const struct op *o, int s)
{
    if (o->err == 2)
        return g_stale[s];
    if (o->hf == 0)
        return NULL;
    if (o->hf == 1)
        return s == 0 ? CU_STREAM_LEGACY : CU_STREAM_PER_THREAD;
    return g_st[s];
}

struct hfarg {
    unsigned char *d;
    const unsigned char *s;
    size_t n;
    unsigned k;
};

/* a "kernel": reads device data and writes device data, never calls CUDA */
static void CUDA_CB kernel(void *p)
{
    struct hfarg *a = p;
    for (size_t i = 0; i < a->n; i++)
        a->d[i] = (unsigned char)(a->d[i] * 5u + a->s[i] + a->k);
}

static CUdeviceptr P(int slot, size_t off) { return (CUdeviceptr)(uintptr_t)(g_ptr[slot] + off); }

/* A 2D copy: the memory types its entry point's direction names (UNIFIED for
 * cuMemcpyAsync's), both sides `pitch` apart. */
static CUresult do_copy2d(const struct op *o, CUstream h)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    int shost = o->api == A_H2D, dhost = o->api == A_D2H, any = o->api == A_ANY;
    c.srcMemoryType = any ? CU_MEMORYTYPE_UNIFIED : shost ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    c.dstMemoryType = any ? CU_MEMORYTYPE_UNIFIED : dhost ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    if (shost)
        c.srcHost = g_ptr[o->b] + o->bo;
    else
        c.srcDevice = P(o->b, o->bo);
    if (dhost)
        c.dstHost = g_ptr[o->a] + o->ao;
    else
        c.dstDevice = P(o->a, o->ao);
    c.srcPitch = c.dstPitch = o->pitch;
    c.Height = o->rows;
    c.WidthInBytes = o->n - (o->rows - 1) * o->pitch;
    return o->ptsz ? cuMemcpy2DAsync_v2_ptsz(&c, h) : cuMemcpy2DAsync_v2(&c, h);
}

static CUresult do_copy(const struct op *o, CUstream h)
{
    CUdeviceptr d = P(o->a, o->ao), s = P(o->b, o->bo);
    void *dh = g_ptr[o->a] + o->ao;
    const void *sh = g_ptr[o->b] + o->bo;
    if (o->rows)
        return do_copy2d(o, h);
    switch (o->api * 2 + o->ptsz) {
    case A_ANY * 2: return cuMemcpyAsync(d, s, o->n, h);
    case A_ANY * 2 + 1: return cuMemcpyAsync_ptsz(d, s, o->n, h);
    case A_H2D * 2: return cuMemcpyHtoDAsync_v2(d, sh, o->n, h);
    case A_H2D * 2 + 1: return cuMemcpyHtoDAsync_v2_ptsz(d, sh, o->n, h);
    case A_D2H * 2: return cuMemcpyDtoHAsync_v2(dh, s, o->n, h);
    case A_D2H * 2 + 1: return cuMemcpyDtoHAsync_v2_ptsz(dh, s, o->n, h);
    case A_D2D * 2: return cuMemcpyDtoDAsync_v2(d, s, o->n, h);
    default: return cuMemcpyDtoDAsync_v2_ptsz(d, s, o->n, h);
    }
}

static CUresult do_synccopy(const struct op *o)
{
    CUdeviceptr d = P(o->a, o->ao), s = P(o->b, o->bo);
    void *dh = g_ptr[o->a] + o->ao;
    const void *sh = g_ptr[o->b] + o->bo;
    switch (o->api * 2 + o->ptsz) {
    case A_ANY * 2: return cuMemcpy(d, s, o->n);
    case A_ANY * 2 + 1: return cuMemcpy_ptds(d, s, o->n);
    case A_H2D * 2: return cuMemcpyHtoD_v2(d, sh, o->n);
    case A_H2D * 2 + 1: return cuMemcpyHtoD_v2_ptds(d, sh, o->n);
    case A_D2H * 2: return cuMemcpyDtoH_v2(dh, s, o->n);
    case A_D2H * 2 + 1: return cuMemcpyDtoH_v2_ptds(dh, s, o->n);
    case A_D2D * 2: return cuMemcpyDtoD_v2(d, s, o->n);
    default: return cuMemcpyDtoD_v2_ptds(d, s, o->n);
    }
}

/* copy, memset, hfunc (also inside a capture: stream `h` given) */
/* Host functions also go through what newer drivers added (design.md rule 17),
 * where the simulated driver acts as one (CUSIM_DRIVER_VERSION, half the seeds,
 * both runs): cuLaunchHostFunc_v2, and cuFutureLaunchHostFunc, which no header
 * names.  Which one an op takes follows from the op, the same in both runs. */
static int g_driver_version;
typedef CUresult(CUDAAPI *hostfn_v2_t)(CUstream, CUhostFn, void *, unsigned int);
typedef CUresult(CUDAAPI *hostfn_t)(CUstream, CUhostFn, void *);
static void *newer_proc(const char *sym, int version, int ptsz)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    if (g_driver_version < version ||
        cuGetProcAddress_v2(sym, &p, version, ptsz ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, &st))
        return NULL;
    return p;
}
static CUresult launch_host_func(const struct op *o, CUstream h)
{
    unsigned variant = (unsigned)((o->ao ^ o->bo ^ o->n) % 3);
    hostfn_v2_t v2 = variant == 1 ? (hostfn_v2_t)newer_proc("cuLaunchHostFunc", 13010, o->ptsz) : NULL;
    hostfn_t future = variant == 2 && !o->ptsz ? (hostfn_t)newer_proc("cuFutureLaunchHostFunc", 13060, 0) : NULL;
    if (v2)
        return v2(h, kernel, o->hfp, o->val & 1);
    if (future)
        return future(h, kernel, o->hfp);
    return o->ptsz ? cuLaunchHostFunc_ptsz(h, kernel, o->hfp) : cuLaunchHostFunc(h, kernel, o->hfp);
}

static CUresult do_stream_op(struct op *o, CUstream h)
{
    if (o->type == O_COPY)
        return do_copy(o, h);
    if (o->type == O_MEMSET)
        return o->ptsz ? cuMemsetD8Async_ptsz(P(o->a, o->ao), (unsigned char)o->val, o->n, h)
                       : cuMemsetD8Async(P(o->a, o->ao), (unsigned char)o->val, o->n, h);
    if (!o->hfp) {
        struct hfarg *a = malloc(sizeof *a);
        a->d = g_ptr[o->a] + o->ao;
        a->s = g_ptr[o->b] + o->bo;
        a->n = o->n;
        a->k = o->val;
        o->hfp = a;
    }
    return launch_host_func(o, h);
}

/* An event recorded behind compute may be found running, or done where the
 * plain run's query found it running (as for a stream query): either answer
 * is right. */
static CUresult do_equery(const struct op *o)
{
    CUresult rc = cuEventQuery(g_ev[o->e]);
    return g_polls && rc == CUDA_ERROR_NOT_READY ? CUDA_SUCCESS : rc;
}

static CUresult do_ssync(struct out *out, const struct op *o)
{
    CUstream h = handle(o, o->s);
    if (o->type == O_SSYNC)
        return o->ptsz ? cuStreamSynchronize_ptsz(h) : cuStreamSynchronize(h);
    CUresult rc = o->ptsz ? cuStreamQuery_ptsz(h) : cuStreamQuery(h);
    if (g_polls && rc == CUDA_ERROR_NOT_READY) {
        /* Compute runs until so many queries found it running; cubatch asks such
         * streams itself (rule 12), so the program's own query may find it done
         * where the plain run's did not.  Either answer is right (the model relies
         * on none). */
        outf(out, "# query not ready\n");
        rc = CUDA_SUCCESS;
    }
    return rc;
}

static CUresult do_kernel(const struct op *o, CUstream h)
{
    unsigned polls = o->val;
    void *params[] = {&polls};
    return o->ptsz ? cuLaunchKernel_ptsz(g_compute, o->grid, 1, 1, o->block, 1, 1, 0, h, params, NULL)
                   : cuLaunchKernel(g_compute, o->grid, 1, 1, o->block, 1, 1, 0, h, params, NULL);
}

static CUstreamCaptureMode capture_mode(unsigned v)
{
    return v == 0 ? CU_STREAM_CAPTURE_MODE_GLOBAL
           : v == 1 ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL : CU_STREAM_CAPTURE_MODE_RELAXED;
}

static CUresult do_cbegin(const struct op *o)
{
    CUstream cs = g_st[o->s];
    return o->ptsz ? cuStreamBeginCapture_v2_ptsz(cs, capture_mode(o->val))
                   : cuStreamBeginCapture_v2(cs, capture_mode(o->val));
}

/* The end of a capture: end, instantiate, launch 1-3 times (each call's code
 * recorded), keep the executable graph until the end of the program. */
static void do_cend(struct out *out, const struct op *o, const char *label)
{
    CUstream cs = g_st[o->s];
    CUgraph g = NULL;
    CUgraphExec ge = NULL;
    CUresult rc = o->ptsz ? cuStreamEndCapture_ptsz(cs, &g) : cuStreamEndCapture(cs, &g);
    record_rc(out, label, rc);
    if (rc != CUDA_SUCCESS || !g)
        return;
    rc = cuGraphInstantiateWithFlags(&ge, g, 0);
    record_rc(out, label, rc);
    if (rc == CUDA_SUCCESS) {
        struct op l = {0};
        l.hf = o->lhf;
        CUstream lh = handle(&l, o->ls);
        for (int r = 0; r < o->reps; r++)
            record_rc(out, label, o->lptsz ? cuGraphLaunch_ptsz(ge, lh) : cuGraphLaunch(ge, lh));
        pthread_mutex_lock(&g_execs_mu);
        if (g_nexecs < MAXOPS)
            g_execs[g_nexecs++] = ge;
        else
            cuGraphExecDestroy(ge); /* its launches are enqueued: they still run */
        pthread_mutex_unlock(&g_execs_mu);
    }
    cuGraphDestroy(g);
}

static void host_read(struct out *out, const struct op *o, const char *label)
{
    outf(out, "obs %s %016llx\n", label, (unsigned long long)hash_bytes(g_ptr[o->a] + o->ao, o->n));
}

/* an event op of a worker thread (also elapsed times in the main thread) */
static CUresult do_event_op(const struct op *o)
{
    float ms;
    switch (o->type) {
    case O_EREC: return o->ptsz ? cuEventRecord_ptsz(g_ev[o->e], handle(o, o->s)) : cuEventRecord(g_ev[o->e], handle(o, o->s));
    case O_EWAIT:
        return o->ptsz ? cuStreamWaitEvent_ptsz(handle(o, o->s), g_ev[o->e], 0)
                       : cuStreamWaitEvent(handle(o, o->s), g_ev[o->e], 0);
    case O_ESYNC: return cuEventSynchronize(g_ev[o->e]);
    case O_EQUERY: return do_equery(o);
    default: return o->val & 1 ? cuEventElapsedTime_v2(&ms, g_ev[o->e], g_ev[o->val]) : cuEventElapsedTime(&ms, g_ev[o->e], g_ev[o->val]);
    }
}

struct worker {
    struct op *parent;
    int w;
    int idx;
    struct out out;
};

static void *worker_main(void *p)
{
    struct worker *wk = p;
    CUresult rc = cuCtxSetCurrent(g_ctx);
    if (rc != CUDA_SUCCESS)
        outf(&wk->out, "rc setcurrent %d\n", (int)rc);
    for (int j = 0; j < wk->parent->nsub; j++) {
        struct op *q = &wk->parent->sub[j];
        if (q->w != wk->w)
            continue;
        char label[32];
        snprintf(label, sizeof label, "%d.%d", wk->idx, j);
        switch (q->type) {
        case O_COPY:
        case O_MEMSET:
        case O_HFUNC: record_rc(&wk->out, label, do_stream_op(q, handle(q, q->s))); break;
        case O_SSYNC:
        case O_SQUERY: record_rc(&wk->out, label, do_ssync(&wk->out, q)); break;
        case O_KERNEL: record_rc(&wk->out, label, do_kernel(q, handle(q, q->s))); break;
        case O_CBEGIN: record_rc(&wk->out, label, do_cbegin(q)); break;
        case O_CEND: do_cend(&wk->out, q, label); break;
        case O_EREC:
        case O_EWAIT:
        case O_ESYNC:
        case O_EQUERY:
        case O_EELAPSED: record_rc(&wk->out, label, do_event_op(q)); break;
        case O_HWRITE: fill_pattern(g_ptr[q->a] + q->ao, q->n, q->val); break;
        case O_HREAD: host_read(&wk->out, q, label); break;
        }
    }
    return NULL;
}

static void execute(struct op *ops, int n)
{
    CUdevice dev;
    CUresult rc;
    if ((rc = cuInit(0)) || (rc = cuDeviceGet(&dev, 0)) || (rc = cuDevicePrimaryCtxRetain(&g_ctx, dev)) ||
        (rc = cuCtxSetCurrent(g_ctx)))
        die("setup failed: %d", (int)rc);
    for (int i = 0; i < NEV; i++)
        if ((rc = cuEventCreate(&g_ev[i], evflags[i])))
            die("event create: %d", (int)rc);
    /* the compute kernel: a module of any image the simulated driver takes
     * (tests/sim/README.md), loaded before anything can capture */
    static const uint32_t image[4] = {0xBA55ED50u, 0, 0, 0};
    CUmodule mod;
    if ((rc = cuModuleLoadData(&mod, image)) || (rc = cuModuleGetFunction(&g_compute, mod, "cusim_compute")))
        die("compute kernel: %d", (int)rc);
    g_relaxed = g_polls = 0;
    g_reuse = getenv("CUSIM_HANDLE_REUSE") && !strcmp(getenv("CUSIM_HANDLE_REUSE"), "1");
    if (cuDriverGetVersion(&g_driver_version))
        g_driver_version = 0;
    for (int i = 0; i < n; i++) {
        g_relaxed |= ops[i].err != 0;
        g_polls |= ops[i].type == O_KERNEL && ops[i].val;
        for (int j = 0; j < ops[i].nsub; j++) {
            g_relaxed |= ops[i].sub[j].err != 0;
            g_polls |= ops[i].sub[j].type == O_KERNEL && ops[i].sub[j].val;
        }
    }
    for (int i = 0; i < n; i++) {
        struct op *o = &ops[i];
        char label[32];
        snprintf(label, sizeof label, "%d", i);
        switch (o->type) {
        case O_ALLOC: {
            void *p = NULL;
            CUdeviceptr d = 0;
            switch (o->kind) {
            case K_DEV: rc = cuMemAlloc_v2(&d, o->n); p = (void *)(uintptr_t)d; break;
            case K_MAN: rc = cuMemAllocManaged(&d, o->n, CU_MEM_ATTACH_GLOBAL); p = (void *)(uintptr_t)d; break;
            case K_PIN: rc = cuMemAllocHost_v2(&p, o->n); break;
            case K_HA: rc = cuMemHostAlloc(&p, o->n, o->val & 1 ? CU_MEMHOSTALLOC_PORTABLE : 0); break;
            case K_REG:
                p = aligned_alloc(4096, (o->n + 4095) & ~(size_t)4095);
                rc = cuMemHostRegister_v2(p, o->n, 0);
                break;
            default: p = malloc(o->n); rc = p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY; break;
            }
            if (rc != CUDA_SUCCESS || !p)
                die("alloc of %zu (%s) failed: %d", o->n, kname[o->kind], (int)rc);
            g_ptr[o->a] = p;
            g_kind[o->a] = o->kind;
            g_size[o->a] = o->n;
            g_live[o->a] = 1;
            fill_pattern(p, o->n, o->val);
            break;
        }
        case O_FREE:
            switch (g_kind[o->a]) {
            case K_DEV:
            case K_MAN: rc = cuMemFree_v2(P(o->a, 0)); break;
            case K_PIN:
            case K_HA: rc = cuMemFreeHost(g_ptr[o->a]); break;
            case K_REG: rc = cuMemHostUnregister(g_ptr[o->a]); break;
            default: free(g_ptr[o->a]); rc = CUDA_SUCCESS; break;
            }
            if (g_kind[o->a] == K_PAGE) {
                g_live[o->a] = 0;
                break;
            }
            record_rc(&g_out, label, rc);
            if (g_kind[o->a] == K_REG)
                g_kind[o->a] = K_PAGE;
            else
                g_live[o->a] = 0;
            epoch_end();
            break;
        case O_SCREATE:
            rc = cuStreamCreate(&g_st[o->s], o->val);
            if (rc)
                die("stream create: %d", (int)rc);
            break;
        case O_SDESTROY:
            record_rc(&g_out, label, cuStreamDestroy_v2(g_st[o->s]));
            g_stale[o->s] = g_st[o->s];
            break;
        case O_COPY:
        case O_MEMSET:
        case O_HFUNC:
            /* a dead stream's handle may be a live stream's again (CUSIM_HANDLE_REUSE),
             * and not the same one in both runs (cubatch makes streams too) */
            if (o->err == 2 && g_reuse)
                record_rc(&g_out, label, CUDA_ERROR_INVALID_HANDLE);
            else
                record_rc(&g_out, label, do_stream_op(o, handle(o, o->s)));
            break;
        case O_EREC:
            rc = o->ptsz ? cuEventRecord_ptsz(g_ev[o->e], handle(o, o->s)) : cuEventRecord(g_ev[o->e], handle(o, o->s));
            record_rc(&g_out, label, rc);
            break;
        case O_EWAIT:
            rc = o->ptsz ? cuStreamWaitEvent_ptsz(handle(o, o->s), g_ev[o->e], 0)
                         : cuStreamWaitEvent(handle(o, o->s), g_ev[o->e], 0);
            record_rc(&g_out, label, rc);
            break;
        case O_ESYNC: record_rc(&g_out, label, cuEventSynchronize(g_ev[o->e])); break;
        case O_EQUERY: record_rc(&g_out, label, do_equery(o)); break;
        case O_EELAPSED: record_rc(&g_out, label, do_event_op(o)); break;
        case O_EDESTROY:
            record_rc(&g_out, label, cuEventDestroy_v2(g_ev[o->e]));
            if ((rc = cuEventCreate(&g_ev[o->e], evflags[o->e])))
                die("event create: %d", (int)rc);
            break;
        case O_SSYNC:
        case O_SQUERY: record_rc(&g_out, label, do_ssync(&g_out, o)); break;
        case O_KERNEL: record_rc(&g_out, label, do_kernel(o, handle(o, o->s))); break;
        case O_CBEGIN: record_rc(&g_out, label, do_cbegin(o)); break;
        case O_CEND: do_cend(&g_out, o, label); break;
        case O_CSYNC:
            record_rc(&g_out, label, cuCtxSynchronize());
            epoch_end();
            break;
        case O_CTXROUND: ctx_round(o, label); break;
        case O_HWRITE: fill_pattern(g_ptr[o->a] + o->ao, o->n, o->val); break;
        case O_HREAD: host_read(&g_out, o, label); break;
        case O_SYNCCOPY:
            record_rc(&g_out, label, do_synccopy(o));
            epoch_end();
            break;
        case O_CAPTURE: {
            CUstream cs = g_st[o->s];
            CUgraph g = NULL;
            CUgraphExec ge = NULL;
            CUstreamCaptureMode mode = o->val == 0   ? CU_STREAM_CAPTURE_MODE_GLOBAL
                                       : o->val == 1 ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                                                     : CU_STREAM_CAPTURE_MODE_RELAXED;
            rc = o->ptsz ? cuStreamBeginCapture_v2_ptsz(cs, mode) : cuStreamBeginCapture_v2(cs, mode);
            record_rc(&g_out, label, rc);
            for (int j = 0; j < o->nsub; j++) {
                char l2[40];
                snprintf(l2, sizeof l2, "%d.%d", i, j);
                record_rc(&g_out, l2, do_stream_op(&o->sub[j], cs));
            }
            rc = o->ptsz ? cuStreamEndCapture_ptsz(cs, &g) : cuStreamEndCapture(cs, &g);
            record_rc(&g_out, label, rc);
            if (rc == CUDA_SUCCESS && g) {
                rc = cuGraphInstantiateWithFlags(&ge, g, 0);
                record_rc(&g_out, label, rc);
                if (rc == CUDA_SUCCESS) {
                    struct op l = {0};
                    l.hf = o->lhf;
                    CUstream lh = handle(&l, o->ls);
                    for (int r = 0; r < o->reps; r++)
                        record_rc(&g_out, label, o->lptsz ? cuGraphLaunch_ptsz(ge, lh) : cuGraphLaunch(ge, lh));
                    g_execs[g_nexecs++] = ge;
                }
                cuGraphDestroy(g);
            }
            break;
        }
        case O_THREADS: {
            struct worker wk[MAXW];
            pthread_t th[MAXW];
            for (int w = 0; w < o->w; w++) {
                memset(&wk[w], 0, sizeof wk[w]);
                wk[w].parent = o;
                wk[w].w = w;
                wk[w].idx = i;
                if (pthread_create(&th[w], NULL, worker_main, &wk[w]))
                    die("pthread_create");
            }
            for (int w = 0; w < o->w; w++) {
                pthread_join(th[w], NULL);
                outf(&g_out, "%s", wk[w].out.b ? wk[w].out.b : "");
                free(wk[w].out.b);
            }
            break;
        }
        }
    }
    record_rc(&g_out, "final", cuCtxSynchronize());
    epoch_end();
    for (int i = 0; i < NSLOT; i++)
        if (g_live[i])
            outf(&g_out, "alloc %d %s %zu %016llx\n", i, kname[g_kind[i]], g_size[i],
                 (unsigned long long)hash_bytes(g_ptr[i], g_size[i]));
    unsigned long (*errs)(void) = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "cusim_errors");
    if (errs)
        outf(&g_out, "sim_errors %lu\n", errs());
    for (int i = 0; i < g_nexecs; i++)
        cuGraphExecDestroy(g_execs[i]);
    fwrite(g_out.b, 1, g_out.n, stdout);
    fflush(stdout);
}

/* ------------------------------------------------------------------ the driver */

struct cfg {
    const char *self, *lib, *simdir, *regress;
    int len, jobs, verbose;
    double seconds;
    uint64_t s0, s1;
};

/* Environment of the preloaded run for a seed: option variations. */
static int seed_env(uint64_t seed, char env[][96], int max)
{
    uint64_t save = rng_state;
    rng_state = seed ^ 0xC0FFEE1234567ull;
    int k = 0;
    static const char *orders[] = {"reverse", "forward", "shuffle"};
    snprintf(env[k++], 96, "CUSIM_BATCH_ORDER=%s", orders[rn(3)]);
    snprintf(env[k++], 96, "CUSIM_SEED=%llu", (unsigned long long)(seed % 100000 + 1));
    snprintf(env[k++], 96, "CUBATCH_POLICY=%s", pct(75) ? "all" : "default");
    static const unsigned mb[] = {2, 3, 4, 7, 16, 4096};
    snprintf(env[k++], 96, "CUBATCH_MAX_BATCH=%u", mb[rn(6)]);
    if (pct(20))
        snprintf(env[k++], 96, "CUBATCH_MIN_RUN=%u", 3 + (unsigned)rn(3));
    static const unsigned fl[] = {1000000, 1000000, 1000000, 10, 100, 1000};
    int flush = k;
    unsigned flush_us = fl[rn(6)];
    snprintf(env[k++], 96, "CUBATCH_FLUSH_US=%u", flush_us);
    static const char *engines[] = {"auto", "auto", "kernel", "batch"};
    snprintf(env[k++], 96, "CUBATCH_ENGINE=%s", engines[rn(4)]);
    if (pct(30))
        snprintf(env[k++], 96, "CUBATCH_PIPELINE=0");
    if (pct(15)) /* rule 18 off: every copy its own entry */
        snprintf(env[k++], 96, "CUBATCH_MERGE_ADJACENT=0");
    if (pct(25))
        snprintf(env[k++], 96, "CUBATCH_MAX_COPY=%s", pct(50) ? "64K" : "4M");
    /* The pace rule (off by default: 1 s).  On the simulated driver calls are
     * microseconds apart, so a threshold of 2-20 us lets some copies through as
     * slow and defers others, and 0 passes every look's copies through: a stream
     * switches between the two while its run is open.  The pace is measured at
     * the timer's looks, so the timer must look: 10 us to 1 ms. */
    if (pct(30)) {
        snprintf(env[k++], 96, "CUBATCH_SLOW_NS=%u", pct(15) ? 0u : 2000u + (unsigned)rn(18001));
        if (flush_us == 1000000)
            snprintf(env[flush], 96, "CUBATCH_FLUSH_US=%u", fl[3 + rn(3)]);
    }
    /* The measured choice's arms (docs/design.md section 5): batches that cost the
     * simulated GPU more than the copies they carry make the pass arm win, and its
     * copies pass on their thread's spells; batch calls dear only after other
     * driver calls (the cold term) make the held arm win, whose runs stay open
     * to the burst's end; with the choice off, uploads beside a filling kernel
     * pass on the load verdict's spells (both runs get the cost: it moves only
     * the simulated clock). */
    if (pct(20))
        snprintf(env[k++], 96, "CUSIM_COST=copy=1000,batch=20000,entry=2000");
    else if (pct(20))
        snprintf(env[k++], 96, "CUSIM_COST=copy=4000,batch=2000,entry=300,cold=3000");
    else if (pct(15))
        snprintf(env[k++], 96, "CUBATCH_MEASURE=0");
    /* Which of a node's dependencies the simulated driver runs first (both
     * runs): a copy cubatch issued without an ordering the program had (a wait
     * for a side submission missed) then runs before what it should follow. */
    if (pct(50))
        snprintf(env[k++], 96, "CUSIM_DEP_ORDER=reverse");
    /* Handles of dead contexts and streams given again (both runs): ctxround's. */
    if (pct(50))
        snprintf(env[k++], 96, "CUSIM_HANDLE_REUSE=1");
    /* A driver newer than the newest headers checked (both runs): host functions
     * through cuLaunchHostFunc_v2 and a function no table names (the net). */
    if (pct(50))
        snprintf(env[k++], 96, "CUSIM_DRIVER_VERSION=13060");
    /* 2D copies deferred (rule 19, as shipped) in most seeds, passed through
     * in the others. */
    if (!pct(80))
        snprintf(env[k++], 96, "CUBATCH_DEFER_2D=0");
    (void)max;
    rng_state = save;
    return k;
}

struct result {
    int status; /* exit code, or 128 + the signal (128 + SIGALRM: the 60 s limit) */
    char *out;
    char *err; /* what a preloaded run wrote to stderr (cubatch's warnings, a sanitizer's report) */
};

/* Runs `self run <args>` with a clean environment; preload adds LD_PRELOAD and the
 * seed's option variations (penv). */
static struct result child(const struct cfg *c, const char *tmpdir, char *const args[], int preload, char penv[][96],
                           int npenv, const char *tag)
{
    char outp[256], errp[256];
    snprintf(outp, sizeof outp, "%s/%s.out", tmpdir, tag);
    snprintf(errp, sizeof errp, "%s/%s.err", tmpdir, tag);
    const char *env[32];
    int ne = 0;
    static __thread char e_ld[512], e_pre[512];
    /* The seed's variations first: getenv returns the first of duplicates. */
    for (int i = 0; i < npenv && ne < 20; i++)
        if (strncmp(penv[i], "CUBATCH_", 8) || preload)
            env[ne++] = penv[i];
    ne += (int)th_env_clean(env + ne, 32 - (size_t)ne);
    snprintf(e_ld, sizeof e_ld, "LD_LIBRARY_PATH=%s", c->simdir);
    env[ne++] = e_ld;
    env[ne++] = "CUBATCH_FLUSH_US=1000000";
    /* the simulated driver is slow: without this the pace rule would pass most
     * copies through and the fuzzer would test little of the queue (a seed that
     * varies it says so first: seed_env) */
    env[ne++] = "CUBATCH_SLOW_NS=1000000000";
    if (preload) {
        snprintf(e_pre, sizeof e_pre, "LD_PRELOAD=%s", c->lib);
        env[ne++] = e_pre;
    }
    env[ne] = NULL;
    char *argv[16];
    int na = 0;
    argv[na++] = (char *)c->self;
    argv[na++] = "run";
    for (int i = 0; args[i] && na < 14; i++)
        argv[na++] = args[i];
    argv[na] = NULL;
    struct result r;
    r.status = th_run(argv, (char *const *)env, outp, errp, 60);
    r.out = th_slurp(outp);
    r.err = preload ? th_slurp(errp) : NULL; /* only a preloaded run's is ever kept */
    unlink(outp);
    if (!c->verbose || r.status == 0)
        unlink(errp);
    return r;
}

/* compared text: every line not starting with '#' */
static char *compared(const char *s)
{
    char *b = malloc(strlen(s) + 1), *o = b;
    for (const char *p = s; *p;) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p + 1) : strlen(p);
        if (*p != '#') {
            memcpy(o, p, l);
            o += l;
        }
        p += l;
    }
    *o = 0;
    return b;
}

/* 0 same, 1 diverged, 3 the program is invalid (plain run refused it), 2 plain failed.
 * On a divergence *err_out (when err_out is not NULL) takes the preloaded
 * run's stderr, for the caller to keep beside the saved program. */
static int compare_runs(const struct cfg *c, const char *tmpdir, char *const args[], char penv[][96], int npenv,
                        char *what, size_t wl, char **err_out)
{
    struct result a = child(c, tmpdir, args, 0, penv, npenv, "plain");
    int ret = 0;
    if (a.status == 3) {
        ret = 3;
        snprintf(what, wl, "invalid program");
    } else if (a.status != 0) {
        ret = 2;
        snprintf(what, wl, "plain run failed with status %d", a.status);
    } else if (strstr(a.out, "# capture-refused")) {
        /* the generator's rules of capture let through a call the driver refuses */
        const char *l = strstr(a.out, "# capture-refused");
        ret = 2;
        snprintf(what, wl, "the plain run had a capture call refused: %.*s", (int)strcspn(l, "\n"), l);
    } else {
        struct result b = child(c, tmpdir, args, 1, penv, npenv, "preload");
        if (b.status != 0) {
            ret = 1;
            snprintf(what, wl, "preloaded run failed with status %d", b.status);
        } else {
            char *x = compared(a.out), *y = compared(b.out);
            if (strcmp(x, y)) {
                ret = 1;
                /* first differing line */
                const char *p = x, *q = y;
                while (*p && *p == *q)
                    p++, q++;
                while (p > x && p[-1] != '\n')
                    p--, q--;
                snprintf(what, wl, "plain: %.*s | preload: %.*s", (int)strcspn(p, "\n"), p, (int)strcspn(q, "\n"), q);
            }
            free(x);
            free(y);
        }
        free(b.out);
        if (ret == 1 && err_out) {
            *err_out = b.err;
            b.err = NULL;
        }
        free(b.err);
    }
    free(a.out);
    free(a.err);
    return ret;
}

static void write_prog(const char *path, const struct op *ops, const int *keep, int n, uint64_t seed, int len,
                       char penv[][96], int npenv, const char *what)
{
    FILE *f = fopen(path, "w");
    if (!f)
        die("cannot write %s: %s", path, strerror(errno));
    fprintf(f, "# cubatch fuzz program: seed=%llu len=%d\n", (unsigned long long)seed, len);
    if (what)
        fprintf(f, "# divergence: %s\n", what);
    for (int i = 0; i < npenv; i++)
        fprintf(f, "env %s\n", penv[i]);
    for (int i = 0; i < n; i++)
        if (!keep || keep[i])
            print_op(f, &ops[i], "");
    fclose(f);
}

/* Delta debugging over the top-level ops of a diverging program. */
static int shrink(const struct cfg *c, const char *tmpdir, struct op *ops, int n, int *keep, uint64_t seed,
                  char penv[][96], int npenv, char *what, size_t wl)
{
    char path[256];
    snprintf(path, sizeof path, "%s/cand.ops", tmpdir);
    char *args[] = {"--ops", path, NULL};
    int *cand = malloc((size_t)n * sizeof(int));
    int *idx = malloc((size_t)n * sizeof(int));
    int gran = 2, tests = 0;
    char w2[512];
    for (;;) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (keep[i])
                idx[m++] = i;
        if (m <= 1 || tests > 400)
            break;
        if (gran > m)
            gran = m;
        int reduced = 0;
        for (int part = 0; part < gran && !reduced; part++) {
            /* try the complement of chunk `part` */
            memcpy(cand, keep, (size_t)n * sizeof(int));
            int lo = part * m / gran, hi = (part + 1) * m / gran;
            for (int k = lo; k < hi; k++)
                cand[idx[k]] = 0;
            write_prog(path, ops, cand, n, seed, 0, penv, npenv, NULL);
            tests++;
            if (compare_runs(c, tmpdir, args, penv, npenv, w2, sizeof w2, NULL) == 1) {
                memcpy(keep, cand, (size_t)n * sizeof(int));
                snprintf(what, wl, "%s", w2);
                gran = gran > 2 ? gran - 1 : 2;
                reduced = 1;
            }
        }
        if (!reduced) {
            if (gran >= m)
                break;
            gran = gran * 2 < m ? gran * 2 : m;
        }
    }
    /* then the sub-ops of captures and thread blocks, one at a time */
    for (int i = 0; i < n && tests < 800; i++) {
        struct op *o = &ops[i];
        if (!keep[i])
            continue;
        for (int j = o->nsub - 1; j >= 0 && o->nsub > 1; j--) {
            struct op save = o->sub[j];
            memmove(&o->sub[j], &o->sub[j + 1], (size_t)(o->nsub - j - 1) * sizeof(struct op));
            o->nsub--;
            write_prog(path, ops, keep, n, seed, 0, penv, npenv, NULL);
            tests++;
            if (compare_runs(c, tmpdir, args, penv, npenv, w2, sizeof w2, NULL) == 1) {
                snprintf(what, wl, "%s", w2);
                continue;
            }
            memmove(&o->sub[j + 1], &o->sub[j], (size_t)(o->nsub - j) * sizeof(struct op));
            o->sub[j] = save;
            o->nsub++;
        }
    }
    unlink(path);
    free(cand);
    free(idx);
    return tests;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One seed: 0 same, 1 diverged (saved), 2 fuzzer problem. */
static int one_seed(const struct cfg *c, const char *tmpdir, uint64_t seed)
{
    char penv[24][96];
    int npenv = seed_env(seed, penv, 24);
    char sbuf[32], lbuf[32];
    snprintf(sbuf, sizeof sbuf, "%llu", (unsigned long long)seed);
    snprintf(lbuf, sizeof lbuf, "%d", c->len);
    char *args[] = {"--seed", sbuf, "--len", lbuf, NULL};
    char what[512], *err = NULL;
    int r = compare_runs(c, tmpdir, args, penv, npenv, what, sizeof what, &err);
    if (r == 0)
        return 0;
    if (r != 1) {
        fprintf(stderr, "seed %llu: FUZZER PROBLEM: %s\n", (unsigned long long)seed, what);
        return 2;
    }
    fprintf(stderr, "seed %llu: DIVERGENCE: %s\n", (unsigned long long)seed, what);
    generate(seed, c->len);
    int n = g_nops;
    int *keep = malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++)
        keep[i] = 1;
    int tests = shrink(c, tmpdir, g_ops, n, keep, seed, penv, npenv, what, sizeof what);
    int kept = 0;
    for (int i = 0; i < n; i++)
        kept += keep[i];
    char path[512];
    snprintf(path, sizeof path, "%s/%llu.ops", c->regress, (unsigned long long)seed);
    mkdir(c->regress, 0755);
    write_prog(path, g_ops, keep, n, seed, c->len, penv, npenv, what);
    fprintf(stderr, "seed %llu: shrunk to %d of %d ops in %d runs: %s\n  saved %s\n", (unsigned long long)seed, kept,
            n, tests, what, path);
    /* the whole program's preloaded stderr (the first divergence, before
     * shrinking): cubatch's warnings and a sanitizer's report are there */
    char errpath[520];
    snprintf(errpath, sizeof errpath, "%s/%llu.err", c->regress, (unsigned long long)seed);
    FILE *ef = err && *err ? fopen(errpath, "w") : NULL;
    if (ef) {
        fputs(err, ef);
        fclose(ef);
        fprintf(stderr, "  its stderr (preloaded, before shrinking) %s\n", errpath);
    }
    free(err);
    free(keep);
    return 1;
}

/* Replays a saved program (its env lines) plain and preloaded: 0 same. */
static int replay(const struct cfg *c, const char *tmpdir, const char *path)
{
    char penv[24][96];
    int npenv = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 2;
    }
    char line[1024];
    while (fgets(line, sizeof line, f) && npenv < 16)
        if (!strncmp(line, "env ", 4)) {
            line[strcspn(line, "\r\n")] = 0;
            snprintf(penv[npenv++], 96, "%.90s", line + 4);
        }
    fclose(f);
    char *args[] = {"--ops", (char *)path, NULL};
    char what[512];
    int r = compare_runs(c, tmpdir, args, penv, npenv, what, sizeof what, NULL);
    if (r)
        fprintf(stderr, "%s: %s\n", path, what);
    return r;
}

static int drive(struct cfg *c, char **replays, int nreplay)
{
    char tmpdir[] = "/tmp/cubatch-fuzz-XXXXXX";
    if (!mkdtemp(tmpdir))
        die("mkdtemp: %s", strerror(errno));
    int bad = 0;
    double t0 = now_s();
    for (int i = 0; i < nreplay; i++) {
        int r = replay(c, tmpdir, replays[i]);
        if (r) {
            fprintf(stderr, "regression %s: FAILED\n", replays[i]);
            bad++;
        }
    }
    if (nreplay)
        fprintf(stderr, "fuzz: %d saved program(s) replayed, %d failed\n", nreplay, bad);
    if (c->s1 < c->s0) {
        rmdir(tmpdir);
        return bad ? 1 : 0;
    }
    /* seeds split over jobs; each job reports its counts through a pipe */
    int pfd[2];
    if (pipe(pfd))
        die("pipe");
    pid_t pids[64];
    int jobs = c->jobs < 1 ? 1 : c->jobs > 64 ? 64 : c->jobs;
    for (int j = 0; j < jobs; j++) {
        pids[j] = fork();
        if (pids[j] == 0) {
            close(pfd[0]);
            char jd[64];
            snprintf(jd, sizeof jd, "%s/j%d", tmpdir, j);
            mkdir(jd, 0700);
            long ran = 0, div = 0, prob = 0;
            for (uint64_t s = c->s0 + (uint64_t)j; s <= c->s1; s += (uint64_t)jobs) {
                if (c->seconds > 0 && now_s() - t0 > c->seconds)
                    break;
                int r = one_seed(c, jd, s);
                ran++;
                div += r == 1;
                prob += r == 2;
                if (c->verbose && ran % 100 == 0)
                    fprintf(stderr, "job %d: %ld programs\n", j, ran);
            }
            rmdir(jd);
            char msg[96];
            int k = snprintf(msg, sizeof msg, "%ld %ld %ld\n", ran, div, prob);
            if (write(pfd[1], msg, (size_t)k) != k)
                _exit(2);
            _exit(0);
        }
    }
    close(pfd[1]);
    long ran = 0, div = 0, prob = 0;
    FILE *pf = fdopen(pfd[0], "r");
    long a, b, d;
    while (fscanf(pf, "%ld %ld %ld", &a, &b, &d) == 3)
        ran += a, div += b, prob += d;
    fclose(pf);
    for (int j = 0; j < jobs; j++)
        waitpid(pids[j], NULL, 0);
    rmdir(tmpdir);
    fprintf(stderr, "fuzz: %ld programs (seeds %llu..), %ld divergence(s), %ld fuzzer problem(s), %.1f s\n", ran,
            (unsigned long long)c->s0, div, prob, now_s() - t0);
    return bad || div || prob ? 1 : 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: fuzz gen --seed S [--len N]\n"
                    "       fuzz run (--seed S [--len N] | --ops FILE)\n"
                    "       fuzz drive --lib LIBCUBATCH --simdir DIR [--seeds A-B] [--seconds T] [--len N] [-j J]\n"
                    "                  [--regress DIR] [--verbose] [--replay FILE ...]\n");
    exit(2);
}

static int run_mode(const char *mode, uint64_t seed, int len, const char *opsfile, struct cfg *cp, char **replays,
                    int nreplay);

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    const char *mode = argv[1];
    uint64_t seed = 1;
    int len = 120;
    const char *opsfile = NULL;
    struct cfg c = {0};
    c.self = "/proc/self/exe";
    c.regress = "tests/fuzz/regressions";
    c.jobs = 1;
    c.s0 = 1;
    c.s1 = 0;
    char **replays = calloc((size_t)argc, sizeof(char *));
    int nreplay = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--seed") && v) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--len") && v) len = atoi(argv[++i]), c.len = len;
        else if (!strcmp(a, "--ops") && v) opsfile = argv[++i];
        else if (!strcmp(a, "--lib") && v) c.lib = argv[++i];
        else if (!strcmp(a, "--simdir") && v) c.simdir = argv[++i];
        else if (!strcmp(a, "--regress") && v) c.regress = argv[++i];
        else if (!strcmp(a, "--seconds") && v) c.seconds = atof(argv[++i]);
        else if (!strcmp(a, "-j") && v) c.jobs = atoi(argv[++i]);
        else if (!strcmp(a, "--verbose")) c.verbose = 1;
        else if (!strcmp(a, "--seeds") && v) {
            unsigned long long x = 0, y = 0;
            if (sscanf(argv[++i], "%llu-%llu", &x, &y) != 2)
                usage();
            c.s0 = x;
            c.s1 = y;
        } else if (!strcmp(a, "--replay") && v) {
            while (i + 1 < argc && argv[i + 1][0] != '-')
                replays[nreplay++] = argv[++i];
        } else
            usage();
    }
    if (len < 1 || len > MAXOPS - 16)
        die("--len must be 1..%d", MAXOPS - 16);
    c.len = len;
    int rc = run_mode(mode, seed, len, opsfile, &c, replays, nreplay);
    free(replays); /* LeakSanitizer checks the fuzzer too (ASAN_OPTIONS unset) */
    return rc;
}

static int run_mode(const char *mode, uint64_t seed, int len, const char *opsfile, struct cfg *cp, char **replays,
                    int nreplay)
{
    struct cfg c = *cp;
    if (!strcmp(mode, "gen")) {
        generate(seed, len);
        printf("# cubatch fuzz program: seed=%llu len=%d\n", (unsigned long long)seed, len);
        for (int i = 0; i < g_nops; i++)
            print_op(stdout, &g_ops[i], "");
        return 0;
    }
    if (!strcmp(mode, "run")) {
        if (opsfile) {
            if (parse_file(opsfile, g_ops, &g_nops))
                die("%s: cannot parse", opsfile);
        } else {
            generate(seed, len);
        }
        char why[256];
        if (validate(g_ops, g_nops, why, sizeof why)) {
            fprintf(stderr, "invalid program: %s\n", why);
            return 3;
        }
        execute(g_ops, g_nops);
        return 0;
    }
    if (!strcmp(mode, "drive")) {
        if (!c.lib || !c.simdir)
            usage();
        static char self[4096];
        ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
        if (k <= 0)
            die("readlink /proc/self/exe");
        self[k] = 0;
        c.self = self;
        return drive(&c, replays, nreplay);
    }
    usage();
    return 2;
}
