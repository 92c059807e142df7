/* engine_loop.h - the loop engine (engine_loop.c). */
#ifndef CUBATCH_ENGINE_LOOP_H
#define CUBATCH_ENGINE_LOOP_H

#include "copies.h"

/* ---- engine_loop.c: each copy through its own entry point ---------------------- */
/* Issue one copy through the real variant of entry point `hook`, unchanged. */
CUresult cb_issue_copy(int hook, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
/* Issue one 2D copy through the real variant of 2D entry point `hook`. */
CUresult cb_issue_copy2d(int hook, const CUDA_MEMCPY2D *copy, CUstream stream);
/* Copies [off, off + n), each on `stream` (NULL: the program's own stream
 * argument); returns the first error. */
CUresult cb_loop_engine_submit(const struct cb_copies *c, size_t off, size_t n, CUstream stream);
/* The run's markers (event records), in record order, each on `stream` (NULL:
 * the program's own stream argument, through its own entry point); the first
 * error.  With *standin (rule 15), that event is recorded once in place of
 * every marker that may stand on it; *standin is cleared when that record
 * failed (then every marker was recorded itself). */
CUresult cb_loop_engine_markers(const struct cb_copies *c, CUstream stream, CUevent *standin);

#endif /* CUBATCH_ENGINE_LOOP_H */
