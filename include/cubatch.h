/* cubatch public API.
 *
 * cubatch is meant to be preloaded (LD_PRELOAD=libcubatch.so) into programs that
 * know nothing about it; nothing here is needed for that.  A program that wants to
 * talk to it can look these up with dlsym(RTLD_DEFAULT, "cubatch_flush") (absent when
 * the library is not loaded) or link -lcubatch.
 */
#ifndef CUBATCH_H
#define CUBATCH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUBATCH_VERSION_STRING "0.1.0"

/* Submit every queued copy of every stream now.  Returns the first CUresult a
 * submission produced (0 = CUDA_SUCCESS). */
int cubatch_flush(void);

/* 1 when copies are being coalesced, 0 when cubatch is a pure pass-through
 * (switched off, driver or headers older than CUDA 13, entry point missing). */
int cubatch_batching_enabled(void);

/* Write the statistics as one JSON object into buf (NUL-terminated, truncated to
 * len).  Returns the length the full text needs, excluding the NUL. */
size_t cubatch_stats_json(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* CUBATCH_H */
