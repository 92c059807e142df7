/* notes.h - each thread's burst notes and pass spells, and a run's warm
 * (notes.c; docs/design.md rule 8, section 5). */
#ifndef CUBATCH_NOTES_H
#define CUBATCH_NOTES_H

#include "run.h"

/* ---- notes.c: bursts and spells ---------------------------------------------------- */
/* A run's burst (its `warm`), each call one change of it, made under the run's
 * lock (cb_run_pass_first_here: without it) by the file that decides it. */
void cb_run_burst_begins(struct cb_run *run);          /* its first copy passed through (rule 8) */
void cb_run_burst_ends(struct cb_run *run);            /* a call named the stream */
int cb_run_in_burst(struct cb_run *run);               /* its next copy joins the run (rule 8) */
/* A segment begins (the run's lock held): 1 when it is the first of its burst,
 * once per burst.  A note written by another thread meanwhile may make it 0:
 * the held arm is then not offered to that burst, nothing else changes. */
int cb_run_burst_first_segment(struct cb_run *run);
/* Rule 8 without a lock: a copy on a created or the legacy stream whose burst this thread
 * began and a call on this thread has named since begins a new burst and
 * passes through.  Asked only while no run anywhere holds anything
 * (!cb_runs_active(): so neither does this stream's, and the run's lock would
 * find it empty; a copy another thread queues meanwhile is not ordered with
 * this one).  A legacy key may leave its context out (owner 0): while the
 * thread has noted one context's legacy stream only, that note answers (0
 * with two: the caller asks for the context).  Passing through is right on
 * any stream while nothing is held; the note only says a burst begins, so
 * another context's (the thread switched since) at worst passes one copy
 * more.  1: it does. */
int cb_run_pass_first_here(const struct cb_run_key *key);
#ifdef CB_DEBUG
/* The debug build's checks of the shortcuts (copy.c), each changing nothing:
 * the run of the note cb_run_pass_first_here would read, and the key it was
 * noted under (NULL: no note); cb_run_in_burst's and cb_run_spell_here's
 * answers now. */
struct cb_run *cb_run_first_note(const struct cb_run_key *key, struct cb_run_key *noted);
int cb_run_in_burst_peek(const struct cb_run *run);
int cb_run_spell_peek(const struct cb_run_key *key, uintptr_t upload);
#endif
/* Pass spells.  A copy that passes through on a created stream because the
 * measured choice passes its segment (pass_chosen) or because the GPU is busy
 * (pass_busy) would take the run's lock only to find the same answer for the
 * stream's next copies: the segment passes its `limit` copies, whatever they
 * are; a load verdict answers the stream's next 32 questions, asked by uploads
 * the copy kernel could take.  So the thread that passed it notes a spell: its
 * next copies on that stream (as many as the segment or the verdict has left;
 * for a verdict, uploads of the same tag only) pass through without the lock,
 * while the run holds nothing (its `holds`), no run was removed since (a
 * reused handle is another stream), and no legacy run waits (rule 3).  A call
 * on this thread naming the stream ends the spell, as it ends the burst.
 * Passing through is what the program would have done: a spell only decides
 * sooner that nothing is batched.  cb_run_spell_begin (the run's lock held,
 * after the copy passed): copies: how many may pass so (0: none); why: the
 * reason they count under; segment: they count in the run's open PASS segment
 * (else upload: the tag they must have, never 0).  cb_run_spell_here: upload:
 * the copy's tag (0: not an upload the kernel could take); the reason when the
 * copy passes by the spell, else 0. */
void cb_run_spell_begin(struct cb_run *run, unsigned copies, int why, int segment, uintptr_t host_alloc,
                        uintptr_t upload);
int cb_run_spell_here(const struct cb_run_key *key, uintptr_t host_alloc, uintptr_t upload);
extern CB_TLS unsigned cb_tls_spells_live;
/* This thread holds a spell (asked first: nearly always no). */
static inline int cb_run_spells_here(void) { return cb_tls_spells_live != 0; }
/* A call on this thread names stream s (or, below, every stream): the bursts
 * this thread began there end (no run touched). */
void cb_runs_named_here(CUstream s, enum cb_stream_kind sk);
extern CB_TLS unsigned cb_tls_bursts_open;
/* cb_runs_named_here has nothing to end: this thread holds no spell and no
 * burst it began is unnamed. */
static inline int cb_runs_nothing_named_here(void) { return (cb_tls_spells_live | cb_tls_bursts_open) == 0; }
void cb_runs_all_named_here(void);
int cb_runs_burst_here(void); /* this thread began a burst no call has named yet */
/* fork's child (fork.c's table): the forking thread's notes and spells start
 * empty. */
void cb_notes_atfork_child(void);

#endif /* CUBATCH_NOTES_H */
