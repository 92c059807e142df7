/* engine_batch.h - the batch engine (engine_batch.c). */
#ifndef CUBATCH_ENGINE_BATCH_H
#define CUBATCH_ENGINE_BATCH_H

#include "copies.h"

/* ---- engine_batch.c: cuMemcpyBatchAsync ---------------------------------------- */
/* 1 when the CUDA 13.0 batch entry point exists (else *why says what is missing). */
int cb_batch_engine_init(const char **why);
/* One batch call for copies [off, off + n) on stream; the driver's result. */
CUresult cb_batch_engine_submit(const struct cb_copies *c, size_t off, size_t n, CUstream stream);

#endif /* CUBATCH_ENGINE_BATCH_H */
