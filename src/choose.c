/* choose.c - engines chosen by what they measure (docs/design.md, section 5,
 * "The measured choice").
 *
 * Which way of submitting host memory copies is fastest depends on things
 * cubatch cannot predict: the load on the GPU, the direction and size, and how
 * many distinct allocations the copies touch (the batch API slows down with
 * many).  So for copies on created streams that the copy kernel may not take
 * (another stream may be filling the GPU, rule 12; or the copy is outside the
 * kernel's reach), cubatch measures.  A stream's burst is cut into segments of
 * one chunk each; every segment is given to one arm (passed through, the batch
 * API, the batch API with the overlap flag), and some segments are timed by an
 * event recorded on the stream before the segment's first copy and another
 * after its last: the GPU time between them is the time these copies took from
 * the moment the program issued the first, including the host's issue time
 * whenever the GPU waited for it.  Per copy, it is comparable across arms.
 *
 * Costs are kept per context and per class of segment (load, direction, size,
 * allocation density, burst length).  Each arm of a class is tried once, then
 * the cheapest is used; one segment in 16 of the cheapest is timed again, and
 * every other arm is tried again after 32 segments of the class, then after
 * twice as many each time it loses (at most 2,048), so a change of load is
 * noticed and a losing arm costs little.  Ties go to the first arm listed
 * (batch, pass, overlap).
 *
 * Every driver call here is a record, a query or an elapsed-time read of
 * cubatch's own events, none while any capture is under way (rule 13), and
 * samples are begun and harvested only when a segment begins: the copy path
 * pays nothing for the choice between segments. */
#include "choose.h"
#include "capture.h"
#include "ptds.h"
#include "stats.h"

#include <stdio.h>
#include <string.h>

const char *const cb_arm_names[CB_ARM_COUNT] = {
#define CB_ARM_NAME(NAME, word, doc) [CB_ARM_##NAME] = #word,
    CB_ARMS(CB_ARM_NAME)
#undef CB_ARM_NAME
};

/* ---- classes ------------------------------------------------------------------- */

/* A class: load (1 bit), direction (1), size (3), density (1), burst length (2). */
#define CB_CLASSES 256
#define CB_SIZE_BUCKETS 6
static const char *const cb_size_names[CB_SIZE_BUCKETS] = {"<=1K", "<=4K", "<=16K", "<=64K", "<=256K", ">256K"};
static const char *const cb_len_names[3] = {"short", "mid", "long"};

static unsigned size_bucket(size_t bytes)
{
    unsigned b = 0;
    for (size_t lim = 1024; b < CB_SIZE_BUCKETS - 1 && bytes > lim; lim *= 4)
        b++;
    return b;
}
static unsigned len_bucket(unsigned copies) { return copies < 8 ? 0 : copies < 32 ? 1 : 2; }

static unsigned class_of(const struct cb_choice_in *in, const struct cb_segment *sg)
{
    return (unsigned)(in->busy != 0) | (unsigned)(in->dir == CB_D_D2H) << 1 | size_bucket(in->bytes) << 2 |
           (unsigned)(sg->dense != 0) << 5 | (unsigned)sg->lenb << 6;
}

struct cb_arm_cost {
    float ns_per_copy;   /* running mean of the samples */
    unsigned samples;
    unsigned next_probe; /* the class's segment count at which it is tried again */
    unsigned backoff;    /* how often it lost in a row */
    int in_flight;       /* a sample of it is being taken */
};
struct cb_class_costs {
    unsigned segments;
    unsigned char best;  /* enum cb_arm; STATIC: none measured yet */
    struct cb_arm_cost arm[CB_ARM_COUNT];
};
#define CB_CHOOSE_CTXS 4
struct cb_ctx_costs {
    CUcontext ctx;
    struct cb_class_costs cls[CB_CLASSES];
};

/* ---- samples ------------------------------------------------------------------- */

enum { SLOT_FREE, SLOT_OPEN, SLOT_CLOSED };
struct cb_slot_sample {
    int state;
    uint64_t gen;        /* which use of the slot (a segment holds the gen it began) */
    CUcontext ctx;       /* of its events (NULL: none made yet) */
    CUevent ev_a, ev_b;
    int ctx_i;           /* the costs it adds to */
    unsigned cls, arm, copies;
    unsigned begun_at;   /* cb_choices when it began: a slot left open too long is taken back */
};
#define CB_SAMPLES 16

/* Everything below: under cb_choose_mu, a leaf lock (taken under a run lock,
 * never the other way). */
static pthread_mutex_t cb_choose_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cb_ctx_costs cb_costs[CB_CHOOSE_CTXS];
static struct cb_slot_sample cb_samples[CB_SAMPLES];
static uint64_t cb_sample_gen;
static unsigned cb_choices;
static int cb_measuring;

void cb_choose_init(void)
{
    cb_stats_set_choices(cb_choose_describe);
    cb_measuring = cb_opt(CB_OPT_engine) == CB_ENGINE_AUTO && cb_opt(CB_OPT_measure) && cb_drv.cuEventCreate &&
                   cb_drv.cuEventRecord && cb_drv.cuEventQuery && cb_drv.cuEventElapsedTime_v2;
}

int cb_choose_enabled(void) { return cb_measuring; }

static int ctx_index(CUcontext ctx)
{
    for (int i = 0; i < CB_CHOOSE_CTXS; i++)
        if (cb_costs[i].ctx == ctx)
            return i;
    for (int i = 0; i < CB_CHOOSE_CTXS; i++)
        if (!cb_costs[i].ctx) {
            memset(&cb_costs[i], 0, sizeof cb_costs[i]);
            cb_costs[i].ctx = ctx;
            return i;
        }
    return -1; /* more contexts than kept: the fixed rules there */
}

/* The measured arms, in the order they are first tried and ties are broken. */
static const enum cb_arm cb_arm_order[] = {CB_ARM_BATCH, CB_ARM_PASS, CB_ARM_OVERLAP, CB_ARM_HELD};
#define CB_MEASURED_ARMS (sizeof cb_arm_order / sizeof cb_arm_order[0])

/* The cheapest measured arm of the allowed ones (STATIC: none measured). */
static enum cb_arm cheapest(const struct cb_class_costs *k, unsigned allowed)
{
    enum cb_arm best = CB_ARM_STATIC;
    for (unsigned i = 0; i < CB_MEASURED_ARMS; i++) {
        enum cb_arm a = cb_arm_order[i];
        if ((allowed & 1u << a) && k->arm[a].samples &&
            (best == CB_ARM_STATIC || k->arm[a].ns_per_copy < k->arm[best].ns_per_copy))
            best = a;
    }
    return best;
}

static void describe_class(char *buf, size_t len, unsigned cls)
{
    snprintf(buf, len, "%s %s %s %s %s", (cls >> 1) & 1 ? "d2h" : "h2d", cb_size_names[(cls >> 2) & 7],
             cls & 1 ? "busy" : "idle", (cls >> 5) & 1 ? "many-allocations" : "few-allocations",
             cb_len_names[(cls >> 6) & 3]);
}

/* A finished sample's cost joins its class's. */
static void add_sample(const struct cb_slot_sample *s, float ms)
{
    if (s->ctx_i < 0 || cb_costs[s->ctx_i].ctx != s->ctx || s->copies < 2 || !(ms >= 0))
        return;
    struct cb_class_costs *k = &cb_costs[s->ctx_i].cls[s->cls];
    struct cb_arm_cost *c = &k->arm[s->arm];
    float ns = ms * 1e6f / (float)s->copies;
    c->ns_per_copy = c->samples ? (3 * c->ns_per_copy + ns) / 4 : ns;
    c->samples++;
    enum cb_arm was = (enum cb_arm)k->best, now = cheapest(k, ~0u);
    if (now == s->arm)
        c->backoff = 0;
    if (now != was) {
        k->best = (unsigned char)now;
        char what[96];
        describe_class(what, sizeof what, s->cls);
        cb_log(CB_LOG_NOTICE, "choice: %s copies now go to %s (%.0f ns a copy; batch %.0f, pass %.0f, overlap %.0f, held %.0f)",
               what, cb_arm_names[now], (double)k->arm[now].ns_per_copy, (double)k->arm[CB_ARM_BATCH].ns_per_copy,
               (double)k->arm[CB_ARM_PASS].ns_per_copy, (double)k->arm[CB_ARM_OVERLAP].ns_per_copy,
               (double)k->arm[CB_ARM_HELD].ns_per_copy);
    }
}

static void slot_free(struct cb_slot_sample *s)
{
    if (s->state != SLOT_FREE && s->ctx_i >= 0 && cb_costs[s->ctx_i].ctx == s->ctx)
        cb_costs[s->ctx_i].cls[s->cls].arm[s->arm].in_flight = 0;
    s->state = SLOT_FREE;
}

/* Read a sample that finished (one query per choice at most). */
static void harvest(void)
{
    int asked = 0;
    for (int i = 0; i < CB_SAMPLES && asked < 1; i++) {
        struct cb_slot_sample *s = &cb_samples[i];
        if (s->state == SLOT_OPEN && cb_choices - s->begun_at > 4096)
            slot_free(s); /* its segment never ended (its run went away) */
        if (s->state != SLOT_CLOSED)
            continue;
        asked++;
        CUresult q = cb_drv.cuEventQuery(s->ev_b);
        if (q == CUDA_ERROR_NOT_READY)
            continue;
        float ms = -1;
        if (q == CUDA_SUCCESS && cb_drv.cuEventElapsedTime_v2(&ms, s->ev_a, s->ev_b) == CUDA_SUCCESS)
            add_sample(s, ms);
        slot_free(s);
    }
}

/* A free slot with events of ctx (made now if need be); NULL: none. */
static struct cb_slot_sample *slot_take(CUcontext ctx)
{
    struct cb_slot_sample *spare = NULL;
    for (int i = 0; i < CB_SAMPLES; i++) {
        struct cb_slot_sample *s = &cb_samples[i];
        if (s->state != SLOT_FREE)
            continue;
        if (s->ctx == ctx)
            return s;
        if (!s->ctx && !spare)
            spare = s;
    }
    if (!spare)
        return NULL;
    struct cb_ctx_guard g;
    if (cb_ctx_enter(ctx, &g) != CUDA_SUCCESS)
        return NULL;
    CUevent a = NULL, b = NULL;
    int ok = cb_drv.cuEventCreate(&a, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
             cb_drv.cuEventCreate(&b, CU_EVENT_DEFAULT) == CUDA_SUCCESS;
    cb_ctx_leave(&g);
    if (!ok)
        return NULL; /* (an event made before the failure is left to its context) */
    spare->ctx = ctx;
    spare->ev_a = a;
    spare->ev_b = b;
    return spare;
}

/* Begin timing segment sg (arm, class) on stream: 1 when begun. */
static int sample_begin(struct cb_segment *sg, const struct cb_choice_in *in, int ctx_i, enum cb_arm arm)
{
    struct cb_slot_sample *s = slot_take(in->ctx);
    if (!s || cb_drv.cuEventRecord(s->ev_a, in->stream) != CUDA_SUCCESS)
        return 0;
    s->state = SLOT_OPEN;
    s->gen = ++cb_sample_gen;
    s->ctx_i = ctx_i;
    s->cls = sg->cls;
    s->arm = arm;
    s->copies = 0;
    s->begun_at = cb_choices;
    cb_costs[ctx_i].cls[sg->cls].arm[arm].in_flight = 1;
    sg->slot = (unsigned)(s - cb_samples) + 1;
    sg->slot_gen = s->gen;
    CB_COUNT(choice_samples);
    return 1;
}

/* Which arm, and whether to time it (the class's costs; lock held). */
static enum cb_arm decide(struct cb_class_costs *k, unsigned allowed, int *sample)
{
    k->segments++;
    *sample = 1;
    for (unsigned i = 0; i < CB_MEASURED_ARMS; i++) { /* each arm once */
        enum cb_arm a = cb_arm_order[i];
        if ((allowed & 1u << a) && !k->arm[a].samples && !k->arm[a].in_flight)
            return a;
    }
    enum cb_arm best = cheapest(k, allowed);
    if (best == CB_ARM_STATIC) { /* every first sample still under way */
        *sample = 0;
        return CB_ARM_BATCH;
    }
    for (unsigned i = 0; i < CB_MEASURED_ARMS; i++) {
        enum cb_arm a = cb_arm_order[i];
        struct cb_arm_cost *c = &k->arm[a];
        if (a == best || !(allowed & 1u << a) || c->in_flight)
            continue;
        if (!c->next_probe)
            c->next_probe = k->segments + 32;
        if (k->segments >= c->next_probe) {
            c->backoff = c->backoff < 6 ? c->backoff + 1 : 6;
            c->next_probe = k->segments + (32u << c->backoff);
            CB_COUNT(choice_probes);
            return a;
        }
    }
    *sample = k->segments % 16 == 0 && !k->arm[best].in_flight;
    return best;
}

enum cb_arm cb_choose(struct cb_segment *sg, const struct cb_choice_in *in)
{
    sg->open = 1;
    sg->arm = CB_ARM_STATIC;
    sg->slot = 0;
    sg->copies = 0;
    sg->changes = 0;
    sg->limit = in->limit;
    if (!in->busy && in->kernel_may)
        return CB_ARM_STATIC; /* idle: the copy kernel, faster than either arm by far */
    unsigned allowed = 1u << CB_ARM_BATCH | 1u << CB_ARM_PASS;
    if (in->busy && !cb_opt(CB_OPT_overlap))
        allowed |= 1u << CB_ARM_OVERLAP; /* the flag is about compute beside the copies */
    if (in->busy && in->burst_first)
        allowed |= 1u << CB_ARM_HELD; /* measured on whole bursts only: a burst's rest would cost it more */
    sg->cls = (unsigned short)class_of(in, sg);
    pthread_mutex_lock(&cb_choose_mu);
    cb_choices++;
    /* Rule 13: no call of ours while a capture runs; capture.c's lock keeps one
     * from beginning between the question and the calls. */
    cb_capture_lock();
    int captures = cb_captures_active();
    if (!captures)
        harvest();
    int ctx_i = ctx_index(in->ctx), sample = 0;
    enum cb_arm arm = CB_ARM_BATCH;
    if (ctx_i >= 0) {
        arm = decide(&cb_costs[ctx_i].cls[sg->cls], allowed, &sample);
        if (sample && !captures)
            sample_begin(sg, in, ctx_i, arm);
    }
    cb_capture_unlock();
    pthread_mutex_unlock(&cb_choose_mu);
    sg->arm = (unsigned char)arm;
    if (arm == CB_ARM_HELD)
        CB_COUNT(choice_held);
    return arm;
}

void cb_segment_end(struct cb_segment *sg, CUstream stream)
{
    if (!sg->open)
        return;
    sg->open = 0;
    cb_segment_fold(sg);
    sg->dense = sg->copies > 1 && 2 * sg->changes > sg->copies;
    sg->lenb = (unsigned char)len_bucket(sg->copies);
    if (!sg->slot)
        return;
    pthread_mutex_lock(&cb_choose_mu);
    struct cb_slot_sample *s = &cb_samples[sg->slot - 1];
    if (s->state == SLOT_OPEN && s->gen == sg->slot_gen) {
        s->copies = sg->copies;
        cb_capture_lock();
        if (!cb_captures_active() && cb_drv.cuEventRecord(s->ev_b, stream) == CUDA_SUCCESS)
            s->state = SLOT_CLOSED;
        else
            slot_free(s);
        cb_capture_unlock();
    }
    pthread_mutex_unlock(&cb_choose_mu);
    sg->slot = 0;
}

void cb_choose_forget_context(CUcontext ctx)
{
    pthread_mutex_lock(&cb_choose_mu);
    for (int i = 0; i < CB_SAMPLES; i++)
        if (cb_samples[i].ctx == ctx) {
            slot_free(&cb_samples[i]);
            cb_samples[i].ctx = NULL; /* its events died with it */
        }
    for (int i = 0; i < CB_CHOOSE_CTXS; i++)
        if (cb_costs[i].ctx == ctx)
            cb_costs[i].ctx = NULL;
    pthread_mutex_unlock(&cb_choose_mu);
}

size_t cb_choose_describe(char *buf, size_t len, int json)
{
    size_t o = 0;
    if (len)
        buf[0] = 0;
    pthread_mutex_lock(&cb_choose_mu);
    for (int i = 0; i < CB_CHOOSE_CTXS; i++) {
        if (!cb_costs[i].ctx)
            continue;
        for (unsigned c = 0; c < CB_CLASSES; c++) {
            const struct cb_class_costs *k = &cb_costs[i].cls[c];
            if (k->best == CB_ARM_STATIC)
                continue;
            char what[96], costs[160];
            size_t co = 0;
            costs[0] = 0;
            describe_class(what, sizeof what, c);
            for (int a = CB_ARM_PASS; a < CB_ARM_COUNT; a++) {
                if (!k->arm[a].samples)
                    continue;
                int n = json ? snprintf(costs + co, sizeof costs - co, "%s\"%s\": %.0f", co ? ", " : "", cb_arm_names[a],
                                        (double)k->arm[a].ns_per_copy)
                             : snprintf(costs + co, sizeof costs - co, "%s%s %.0f", co ? ", " : "", cb_arm_names[a],
                                        (double)k->arm[a].ns_per_copy);
                if (n < 0 || (size_t)n >= sizeof costs - co)
                    break;
                co += (size_t)n;
            }
            int n = json ? snprintf(buf + o, len - o, "%s{\"class\": \"%s\", \"segments\": %u, \"chosen\": \"%s\", "
                                                      "\"ns_per_copy\": {%s}}",
                                    o ? ", " : "", what, k->segments, cb_arm_names[k->best], costs)
                         : snprintf(buf + o, len - o, "  %-40s %8u  %-8s %s\n", what, k->segments,
                                    cb_arm_names[k->best], costs);
            if (n < 0 || (size_t)n >= len - o) {
                pthread_mutex_unlock(&cb_choose_mu);
                return o;
            }
            o += (size_t)n;
        }
    }
    pthread_mutex_unlock(&cb_choose_mu);
    return o;
}

void cb_choose_atfork_child(void)
{
    /* the child has no CUDA work of its own: nothing measured is in flight */
    for (int i = 0; i < CB_SAMPLES; i++)
        cb_samples[i] = (struct cb_slot_sample){0};
    pthread_mutex_init(&cb_choose_mu, NULL);
}
