/* engine.h - the bottom of the copy path: turning queued copies into driver
 * calls.  engine.c chooses how a run goes out and replays a refused submission;
 * each engine executes copies one way (engine_kernel.c: one launch of cubatch's
 * copy kernel, the first choice; engine_batch.c: cuMemcpyBatchAsync;
 * engine_loop.c: each copy through its own entry point); ptds.c fences a run of
 * another thread's per-thread default stream onto a side stream.
 *
 * What these files know of a run is only what copies.h declares (the queued
 * copies, and what its stream is); struct cb_run (run.h) holds both.  Each file
 * has its header: engine_kernel.h, engine_batch.h, engine_loop.h, ptds.h, and
 * this one for engine.c, which includes the others for the layers above. */
#ifndef CUBATCH_ENGINE_H
#define CUBATCH_ENGINE_H

#include "copies.h"
#include "engine_batch.h"
#include "engine_kernel.h"
#include "engine_loop.h"
#include "ptds.h"

/* ---- engine.c: a run's way out ------------------------------------------------- */
/* At initialisation: decide the batching switch (batching.c) from the driver
 * and the options (version rule, CUBATCH_ENABLE). */
void cb_engines_init(void);
/* 1 when the copy kernel may take runs (CUBATCH_ENGINE, and it could be loaded). */
extern int cb_kernel_usable;
/* What a run's chunk length depends on besides its engine: it holds a
 * host-to-device copy; its segment went to the held arm (choose.h), which
 * submits the burst whole, at its end. */
enum { CB_CHUNK_H2D = 1, CB_CHUNK_HELD = 2 };
/* The length at which a growing run is submitted (pipelining): by the engine
 * that will take it (kernel_ok), its CB_CHUNK_ bits, and after `chunks` chunk
 * submissions in a row. */
size_t cb_engine_chunk(int kernel_ok, unsigned kind, unsigned chunks);
/* Rule 18: a run whose copies so far merge into one copy goes out as that copy,
 * through the copy engines, however many copies made it, so its chunks are
 * cut by bytes, not by copies.  Each chunk costs the program's thread one
 * driver call and the engines a start, and the engines idle until the first
 * arrives and whenever the next is late.  So the first goes out at
 * CB_MERGED_CHUNK_FIRST bytes; while the program issues faster than the
 * engines drain (CB_MERGED_ENGINE_BYTES_PER_NS), each next chunk is half as
 * long again, and while it issues CB_MERGED_LEAP times as fast, that many
 * times as long, up to CB_MERGED_CHUNK_MAX: either is still ready before the
 * engines finish the one before, and the longer, the fewer engine starts;
 * otherwise the program's thread bounds the run, the last chunk is the part
 * nothing overlaps, and chunks stay at CB_MERGED_CHUNK_STEADY.  A run that
 * touches no host memory is drained by the engines from device memory many
 * times faster than any program issues, so only its chunks' driver calls
 * cost: each next one is CB_MERGED_LEAP times as long, whatever the pace
 * (docs/design.md rule 18, *The chunks of a merged run*). */
#define CB_MERGED_CHUNK_FIRST ((size_t)512 << 10)
#define CB_MERGED_CHUNK_STEADY ((size_t)1 << 20)
#define CB_MERGED_CHUNK_MAX ((size_t)8 << 20)
#define CB_MERGED_LEAP 4u
#define CB_MERGED_ENGINE_BYTES_PER_NS 64u /* 64 GB/s: a little over a PCIe 5 x16 link */
/* The bytes at which the next chunk of such a run goes out, after one of
 * `bytes` that the program issued in `ns` (host: some copy of the run reads or
 * writes host memory). */
size_t cb_engine_merged_next(size_t bytes, uint64_t ns, int host);
/* 1 when the copies q holds go out as one merged copy, in chunks (kind: its
 * CB_CHUNK_ bits: a held segment goes out whole, at its end, as
 * cb_engine_chunk says). */
static inline int cb_engine_merged_one(const struct cb_copies *q, unsigned kind)
{
    return q->merged.n == 1 && !(kind & CB_CHUNK_HELD) && cb_opt(CB_OPT_engine) == CB_ENGINE_AUTO &&
           cb_opt(CB_OPT_pipeline);
}
/* Submit c's copies for a stream.  owner: the calling thread owns the
 * per-thread stream (else another thread's per-thread stream goes through the
 * side stream).  Nothing is dropped: a refused batch is replayed copy by copy,
 * and the first error the program must see is returned.  *made: the stand-in
 * recorded for c's markers of timing-free events (rule 15), or NULL; the
 * caller hands it to event.c with the markers. */
CUresult cb_engine_submit(const struct cb_copies *c, struct cb_stream_facts *f, int owner, struct cb_standin **made);

#endif /* CUBATCH_ENGINE_H */
