/* notes.c - each thread's notes (docs/design.md rule 8, section 5): the
 * bursts it began, which a call naming their stream ends without touching a
 * run, and its pass spells, which let its next copies on a stream pass
 * without the run's lock; and each run's `warm`, the burst under way on its
 * stream, which they begin and end.  The notes and spells are their
 * thread's own, kept without a lock; a spell asks the store (store.c) whether
 * a run was removed since it began. */
#include "notes.h"
#include "store.h"

#include <string.h>

/* The bursts this thread began (rule 8), and whether a call on this thread has
 * named their stream since.  A warm run alone is not counted active: a
 * program's synchronize after a lone copy would otherwise lock the run and move
 * the store's counts twice per copy.  A call naming the stream marks the note
 * here, touching no run; the stream's next copy from this thread reads the
 * note under the run's lock and begins a new burst.  A burst another thread
 * began, or one whose note was pushed out, ends as before: at a flush of its
 * run.  Written only by notes.c. */
#define CB_BURST_NOTES 8
struct cb_burst_note {
    uintptr_t stream, owner;
    int named;
    int fast;            /* the next burst may begin without the run's lock (cb_run_pass_first_here) */
    struct cb_run *run;  /* its run when the note was written (never freed: store.c's header) */
};
static CB_TLS struct cb_burst_note cb_tls_bursts[CB_BURST_NOTES];
static CB_TLS unsigned cb_tls_bursts_next, cb_tls_bursts_last;
CB_TLS unsigned cb_tls_bursts_open; /* bursts no call has named yet (notes.h) */
static CB_TLS unsigned cb_tls_bursts_legacy; /* notes of a legacy stream (one per context) */

/* This thread's pass spells (notes.h): one per stream its copies last passed on
 * (a thread may alternate between streams, one per direction, say).  A spell
 * holds while no run was removed since it began (store.c's cb_removals: a run
 * is removed with its stream, and a new stream may come back with the same
 * handle).  Written only by notes.c. */
struct cb_spell {
    struct cb_run *run;   /* while its bit of cb_tls_spells_live is set (never freed: store.c's header) */
    uintptr_t stream;     /* the run's key (a created stream: no owner) */
    unsigned left;        /* copies it may still pass */
    unsigned removals;    /* cb_removals when it began */
    int why;              /* enum cb_stat_id they count under */
    int segment;          /* they count in the run's PASS segment (any copy passes) */
    uintptr_t upload;     /* else: only copies of this upload tag pass (copy.c) */
    uintptr_t last_alloc; /* the host allocation of its previous copy */
};
#define CB_SPELLS 4
static CB_TLS struct cb_spell cb_tls_spells[CB_SPELLS];
static CB_TLS unsigned cb_tls_spells_next;
CB_TLS unsigned cb_tls_spells_live; /* one bit per slot holding a spell (notes.h) */

/* Note n is of stream's burst, kept by owner (any_owner: by any). */
static int note_of(const struct cb_burst_note *n, uintptr_t stream, uintptr_t owner, int any_owner)
{
    return n->stream == stream && (any_owner || n->owner == owner);
}

/* The note of a stream's burst: the last one found (cb_tls_bursts_last) first,
 * as a lone copy and its synchronize name the same stream one after the other. */
static struct cb_burst_note *find_note(uintptr_t stream, uintptr_t owner, int any_owner)
{
    struct cb_burst_note *n = &cb_tls_bursts[cb_tls_bursts_last];
    if (CB_LIKELY(note_of(n, stream, owner, any_owner)))
        return n;
    for (unsigned i = 0; i < CB_BURST_NOTES; i++)
        if (note_of(&cb_tls_bursts[i], stream, owner, any_owner)) {
            cb_tls_bursts_last = i;
            return &cb_tls_bursts[i];
        }
    return NULL;
}
static struct cb_burst_note *burst_note(uintptr_t stream, uintptr_t owner) { return find_note(stream, owner, 0); }

/* A created or legacy stream that is not slow: nothing but the burst itself
 * decides how its first copy goes (a per-thread stream's first copy may have
 * a fence of its run to give back first: copy.c's pass). */
static int note_fast(const struct cb_run *run)
{
    return !run->facts.ptds && !run->pace.slow;
}

void cb_run_burst_begins(struct cb_run *run)
{
    atomic_store_explicit(&run->warm, 1, memory_order_relaxed);
    struct cb_burst_note *n = burst_note(run->key.stream, run->key.owner);
    if (!n) {
        cb_tls_bursts_last = cb_tls_bursts_next++ % CB_BURST_NOTES;
        n = &cb_tls_bursts[cb_tls_bursts_last];
        if (n->stream && !n->named)
            cb_tls_bursts_open--; /* pushed out: that burst ends at its run's flush */
        cb_tls_bursts_legacy -= n->stream == (uintptr_t)CU_STREAM_LEGACY;
        cb_tls_bursts_legacy += run->key.stream == (uintptr_t)CU_STREAM_LEGACY;
        *n = (struct cb_burst_note){run->key.stream, run->key.owner, 1, 0, NULL};
    }
    n->fast = note_fast(run);
    n->run = run;
    if (n->named) {
        n->named = 0;
        cb_tls_bursts_open++;
    }
}

void cb_run_burst_ends(struct cb_run *run) { atomic_store_explicit(&run->warm, 0, memory_order_relaxed); }

int cb_run_burst_first_segment(struct cb_run *run)
{
    int first = 1; /* warm: 1 from the burst's first copy, 2 once its first segment began */
    return atomic_compare_exchange_strong_explicit(&run->warm, &first, 2, memory_order_relaxed, memory_order_relaxed);
}

int cb_run_in_burst(struct cb_run *run)
{
    struct cb_burst_note *n = burst_note(run->key.stream, run->key.owner);
    if (n)
        n->fast = note_fast(run) && n->run == run; /* the stream may have turned slow */
    if (!cb_run_warm(run))
        return 0;
    if (n && n->named) {
        cb_run_burst_ends(run); /* a call on this thread named the stream since */
        return 0;
    }
    return 1;
}

/* The note of the legacy stream while this thread has noted one context's
 * only; NULL with none, or with two (the caller asks which is current). */
static struct cb_burst_note *legacy_note(void)
{
    if (cb_tls_bursts_legacy != 1)
        return NULL;
    return find_note((uintptr_t)CU_STREAM_LEGACY, 0, 1);
}

int cb_run_pass_first_here(const struct cb_run_key *key)
{
    if (!cb_tls_bursts[cb_tls_bursts_last].stream)
        return 0; /* no note at all */
    int any_context = key->stream == (uintptr_t)CU_STREAM_LEGACY && !key->owner;
    struct cb_burst_note *n = any_context ? legacy_note() : burst_note(key->stream, key->owner);
    if (!n || !n->named || !n->fast)
        return 0;
    n->named = 0;
    cb_tls_bursts_open++;
    atomic_store_explicit(&n->run->warm, 1, memory_order_relaxed);
    return 1;
}

#ifdef CB_DEBUG
/* The debug build's checks (notes.h), each changing nothing. */
struct cb_run *cb_run_first_note(const struct cb_run_key *key, struct cb_run_key *noted)
{
    if (!cb_tls_bursts[cb_tls_bursts_last].stream)
        return NULL;
    int any_context = key->stream == (uintptr_t)CU_STREAM_LEGACY && !key->owner;
    const struct cb_burst_note *n = NULL;
    if (!any_context) {
        for (unsigned i = 0; i < CB_BURST_NOTES && !n; i++)
            if (note_of(&cb_tls_bursts[i], key->stream, key->owner, 0))
                n = &cb_tls_bursts[i];
    } else if (cb_tls_bursts_legacy == 1) {
        for (unsigned i = 0; i < CB_BURST_NOTES && !n; i++)
            if (note_of(&cb_tls_bursts[i], key->stream, 0, 1))
                n = &cb_tls_bursts[i];
    }
    if (!n)
        return NULL;
    *noted = (struct cb_run_key){n->stream, n->owner};
    return n->run;
}

int cb_run_in_burst_peek(const struct cb_run *run)
{
    const struct cb_burst_note *n = NULL;
    for (unsigned i = 0; i < CB_BURST_NOTES && !n; i++)
        if (note_of(&cb_tls_bursts[i], run->key.stream, run->key.owner, 0))
            n = &cb_tls_bursts[i];
    return atomic_load_explicit(&run->warm, memory_order_relaxed) && !(n && n->named);
}
#endif

static void note_named(struct cb_burst_note *n)
{
    if (!n->named) {
        n->named = 1;
        cb_tls_bursts_open--;
    }
}

/* The spell of a stream (its key's handle), or NULL. */
static struct cb_spell *spell_of(uintptr_t stream)
{
    for (unsigned i = 0; i < CB_SPELLS; i++)
        if ((cb_tls_spells_live & 1u << i) && cb_tls_spells[i].stream == stream)
            return &cb_tls_spells[i];
    return NULL;
}

static void spell_end(struct cb_spell *sp)
{
    cb_tls_spells_live &= ~(1u << (unsigned)(sp - cb_tls_spells));
}

void cb_run_spell_begin(struct cb_run *run, unsigned copies, int why, int segment, uintptr_t host_alloc,
                        uintptr_t upload)
{
    struct cb_spell *sp = spell_of(run->key.stream);
    /* a created stream's key has no owner (a legacy or per-thread one has) */
    if (!copies || run->key.owner || run->pace.slow ||
        atomic_load_explicit(&run->holds, memory_order_relaxed)) {
        if (sp)
            spell_end(sp);
        return;
    }
    if (!sp)
        sp = &cb_tls_spells[cb_tls_spells_next++ % CB_SPELLS];
    *sp = (struct cb_spell){.run = run,
                            .stream = run->key.stream,
                            .left = copies,
                            .removals = atomic_load_explicit(&cb_removals, memory_order_acquire),
                            .why = why,
                            .segment = segment,
                            .upload = upload,
                            .last_alloc = host_alloc};
    cb_tls_spells_live |= 1u << (unsigned)(sp - cb_tls_spells);
}

int cb_run_spell_here(const struct cb_run_key *key, uintptr_t host_alloc, uintptr_t upload)
{
    struct cb_spell *sp = key->owner ? NULL : spell_of(key->stream);
    if (!sp || !sp->left || (!sp->segment && sp->upload != upload))
        return 0;
    if (atomic_load_explicit(&sp->run->holds, memory_order_acquire) ||
        atomic_load_explicit(&cb_removals, memory_order_acquire) != sp->removals || cb_runs_legacy_pending()) {
        spell_end(sp);
        return 0;
    }
    sp->left--;
    if (sp->segment) {
        cb_segment_spelled(&sp->run->seg, host_alloc != sp->last_alloc);
        sp->last_alloc = host_alloc;
    }
    return sp->why;
}

#ifdef CB_DEBUG
int cb_run_spell_peek(const struct cb_run_key *key, uintptr_t upload)
{
    const struct cb_spell *sp = key->owner ? NULL : spell_of(key->stream);
    if (!sp || !sp->left || (!sp->segment && sp->upload != upload))
        return 0;
    if (atomic_load_explicit(&sp->run->holds, memory_order_acquire) ||
        atomic_load_explicit(&cb_removals, memory_order_acquire) != sp->removals || cb_runs_legacy_pending())
        return 0;
    return sp->why;
}
#endif

void cb_runs_named_here(CUstream s, enum cb_stream_kind sk)
{
    if (CB_UNLIKELY(cb_tls_spells_live)) {
        struct cb_spell *sp = spell_of((uintptr_t)cb_stream_handle(s, sk));
        if (sp)
            spell_end(sp);
    }
    if (!cb_tls_bursts_open)
        return;
    struct cb_run_key key = cb_run_key_of(s, sk, NULL);
    if (sk != CB_SK_LEGACY) {
        struct cb_burst_note *n = burst_note(key.stream, key.owner);
        if (n)
            note_named(n);
        return;
    }
    /* the legacy stream's key holds its context: any context's will do here */
    for (unsigned i = 0; i < CB_BURST_NOTES; i++)
        if (cb_tls_bursts[i].stream == key.stream)
            note_named(&cb_tls_bursts[i]);
}

void cb_runs_all_named_here(void)
{
    cb_tls_spells_live = 0;
    for (unsigned i = 0; i < CB_BURST_NOTES; i++)
        cb_tls_bursts[i].named = 1;
    cb_tls_bursts_open = 0;
}

int cb_runs_burst_here(void) { return cb_tls_bursts_open > 0; }

void cb_notes_atfork_child(void)
{
    memset(cb_tls_bursts, 0, sizeof cb_tls_bursts);
    cb_tls_bursts_open = cb_tls_bursts_last = cb_tls_bursts_legacy = 0;
    memset(cb_tls_spells, 0, sizeof cb_tls_spells);
    cb_tls_spells_live = 0;
}
