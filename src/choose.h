/* choose.h - engines chosen by what they measure (choose.c; docs/design.md,
 * section 5, "The measured choice"). */
#ifndef CUBATCH_CHOOSE_H
#define CUBATCH_CHOOSE_H

#include "internal.h"

/* What a segment of copies is given to.  STATIC: the fixed rules (the copy
 * kernel, or the batch API beside compute); the others are the arms the
 * measured choice picks between. */
#define CB_ARMS(X)                                                                          \
    X(STATIC, static, "the fixed rules (copy kernel when idle, batch API beside compute)")  \
    X(PASS, pass, "passed through as the program issued them")                              \
    X(BATCH, batch, "the batch API")                                                        \
    X(OVERLAP, overlap, "the batch API with CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE")            \
    X(HELD, held, "the batch API, the burst's copies held to its end, then submitted in chunks back to back")
enum cb_arm {
#define CB_ARM_ENUM(NAME, word, doc) CB_ARM_##NAME,
    CB_ARMS(CB_ARM_ENUM)
#undef CB_ARM_ENUM
    CB_ARM_COUNT
};
extern const char *const cb_arm_names[CB_ARM_COUNT];

/* A segment: the copies of a stream that one choice covers, from the choice to
 * the submission that ends it (a deferred arm) or to its length (PASS).  Kept
 * in the stream's run (run.h); written only here. */
struct cb_segment {
    unsigned char open;    /* a choice covers this stream's copies now */
    unsigned char arm;     /* enum cb_arm */
    unsigned char dense;   /* the previous segment changed host allocation at every other copy or more */
    unsigned char lenb;    /* the previous segment's length, bucketed */
    unsigned short cls;    /* the class it was chosen for */
    unsigned slot;         /* its sample: slot index + 1 (0: not measured) */
    uint64_t slot_gen;     /* ... of this use of the slot */
    unsigned copies;       /* copies covered so far */
    unsigned limit;        /* a PASS segment covers this many, then a choice is made again */
    unsigned changes;      /* host allocation changes among them */
    uintptr_t last_alloc;  /* the host allocation (its end) of the last one */
    /* copies of a PASS segment that passed by a thread's pass spell, without
     * the run's lock (notes.c): the low half counts them, the high half their
     * allocation changes; folded into the counts above under the lock */
    atomic_uint_fast64_t spelled;
};

/* What a choice is made from. */
struct cb_choice_in {
    CUcontext ctx;
    CUstream stream;      /* the run's stream: a created stream */
    enum cb_direction dir;
    size_t bytes;
    int busy;             /* another stream may run SM work that fills the GPU (smwork.c) */
    int kernel_may;       /* the copy kernel may execute this copy (when the GPU is idle) */
    int burst_first;      /* the segment is its burst's first: the held arm may take the whole burst */
    unsigned limit;       /* the copies one segment covers (the batch API's chunk) */
};

/* Whether a segment of copies on a created stream is chosen by measurement
 * (CUBATCH_ENGINE=auto, CUBATCH_MEASURE=1, batching on). */
int cb_choose_enabled(void);
void cb_choose_init(void);
/* A segment begins with this copy (its run's lock held, the run empty): its
 * arm.  A measured segment's sample begins here (an event recorded on the
 * stream before the copy is issued or queued). */
enum cb_arm cb_choose(struct cb_segment *sg, const struct cb_choice_in *in);
/* One more copy of the open segment; host_alloc: the end of its host side's
 * allocation (0: none). */
static inline void cb_segment_copy(struct cb_segment *sg, uintptr_t host_alloc)
{
    sg->copies++;
    if (host_alloc != sg->last_alloc) {
        sg->changes++;
        sg->last_alloc = host_alloc;
    }
}
/* One more copy passed by a spell (no lock held; changed: its host allocation
 * is not the spell's previous copy's). */
static inline void cb_segment_spelled(struct cb_segment *sg, int changed)
{
    atomic_fetch_add_explicit(&sg->spelled, 1u + ((uint64_t)(changed != 0) << 32), memory_order_relaxed);
}
/* The spells' copies join the counts (the run's lock held).  A spell's copy
 * that comes after its segment ended counts in the next: the counts only pick
 * the next segment's class. */
static inline void cb_segment_fold(struct cb_segment *sg)
{
    if (CB_LIKELY(!atomic_load_explicit(&sg->spelled, memory_order_relaxed)))
        return;
    uint64_t v = atomic_exchange_explicit(&sg->spelled, 0, memory_order_relaxed);
    sg->copies += (unsigned)v;
    sg->changes += (unsigned)(v >> 32);
}
/* The segment's copies have all been issued or submitted on stream: its sample
 * ends (an event recorded after them), and the next copy makes a new choice. */
void cb_segment_end(struct cb_segment *sg, CUstream stream);
/* The stream's copies keep the fixed rules: no segment is open. */
static inline void cb_segment_none(struct cb_segment *sg) { sg->open = 0; }

/* The copy path's view of the segment (copy.c reads and writes no field of
 * it).  A choice covers the stream's copies now. */
static inline int cb_segment_open(const struct cb_segment *sg) { return sg->open; }
/* Settle, before the verdict (the run's lock held): 1 when the open segment
 * passes its copies through (PASS) and has room for one more, its spells'
 * copies folded in first; a full one ends here (all issued: the stream's next
 * choice follows); 0 otherwise, changing nothing. */
static inline int cb_segment_settle_pass(struct cb_segment *sg, CUstream stream)
{
    if (CB_LIKELY(sg->arm != CB_ARM_PASS || !sg->open))
        return 0;
    cb_segment_fold(sg);
    if (sg->copies < sg->limit)
        return 1;
    cb_segment_end(sg, stream);
    return 0;
}
/* Act: this copy passes through as the PASS segment's (the open one, or one
 * just chosen): counted, with its host allocation.  Returns the spell: how
 * many of the stream's next copies may pass by it without the run's lock (0:
 * none; a timed segment counts each copy under the lock). */
static inline unsigned cb_segment_pass_copy(struct cb_segment *sg, uintptr_t host_alloc)
{
    cb_segment_copy(sg, host_alloc);
    return sg->slot ? 0 : sg->limit - sg->copies;
}
/* Act: a deferred copy joins its run: counted in the open segment, if any. */
static inline void cb_segment_join(struct cb_segment *sg, uintptr_t host_alloc)
{
    if (sg->open)
        cb_segment_copy(sg, host_alloc);
}
#ifdef CB_DEBUG
/* cb_segment_settle_pass's answer without its side effects (the debug build's
 * check of a pass spell, copy.c). */
static inline int cb_segment_room_peek(const struct cb_segment *sg)
{
    uint64_t v = atomic_load_explicit(&sg->spelled, memory_order_relaxed);
    return sg->arm == CB_ARM_PASS && sg->open && sg->copies + (unsigned)v < sg->limit;
}
#endif
/* Forget what was measured in ctx (it goes away). */
void cb_choose_forget_context(CUcontext ctx);
/* The report's table: one line per class with a measurement, into buf. */
size_t cb_choose_describe(char *buf, size_t len, int json);
void cb_choose_atfork_child(void);

#endif /* CUBATCH_CHOOSE_H */
