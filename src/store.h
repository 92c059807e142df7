/* store.h - the store of runs (store.c): one run per stream, found by its
 * key, its lock, the removal and reuse of a run, and fork's handlers. */
#ifndef CUBATCH_STORE_H
#define CUBATCH_STORE_H

#include "run.h"

/* ---- store.c: the store of runs ---------------------------------------------------- */
/* The stream's run, locked (no run lock held before); create: make it when
 * there is none (*created = 1).  NULL: none (or out of memory). */
struct cb_run *cb_run_lock_key(const struct cb_run_key *key, int create, int *created);
/* The store's lock: held to iterate (CB_RUNS_EACH) and to remove. */
void cb_store_lock(void);
int cb_store_trylock(void); /* 1: taken; 0: held elsewhere (a look comes back later) */
void cb_store_unlock(void);
struct cb_run *cb_store_find(const struct cb_run_key *key); /* store lock held */
void cb_run_remove(struct cb_run *run); /* store lock and run lock held: cleared, kept for reuse */
/* Runs removed so far (release on removal; a pass spell, notes.c, holds while
 * none is). */
extern atomic_uint cb_removals;
/* Each run in the table, in turn (store lock held; lock each to look at it). */
#define CB_RUNS_EACH(run, tmp) HASH_ITER(hh, cb_run_table, run, tmp)
extern struct cb_run *cb_run_table;
void cb_forget_context_runs(CUcontext ctx); /* no lock held: its runs' events died with it */
/* fork: prepare takes the store lock and every run lock in table order;
 * parent releases them; the child's store is empty, its locks new. */
void cb_runs_atfork_prepare(void);
void cb_runs_atfork_parent(void);
void cb_runs_atfork_child(void);
#ifdef CB_DEBUG
/* The debug build's check of the shortcuts (copy.c), changing nothing: whether
 * run is still key's (a removed run may have been reused for another stream). */
int cb_run_keyed(const struct cb_run *run, const struct cb_run_key *key);
#endif

#endif /* CUBATCH_STORE_H */
