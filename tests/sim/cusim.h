/* Test helpers exported by the simulated driver (tests/sim/libcuda.so.1).
 * Link against tests/sim/libcuda.la, or look them up with dlsym. */
#ifndef CUSIM_H
#define CUSIM_H

#ifdef __cplusplus
extern "C" {
#endif

/* Calls of the exported function named exported_name (e.g. "cuMemcpyBatchAsync_v2") so far. */
unsigned long cusim_count(const char *exported_name);
/* Reset every call counter and the error counter, and re-read the CUSIM_* environment. */
void cusim_reset_counts(void);
/* Misuse detected so far (use after free of device/pinned memory, ...). */
unsigned long cusim_errors(void);
/* Copies (descriptors) performed by copy-kernel launches (cubatch_copy_kernel*) so far;
 * a faulting launch performs none. */
unsigned long cusim_kernel_copies(void);
/* Work nodes enqueued and not yet executed, all streams, all contexts. */
unsigned long cusim_pending(void);

#ifdef __cplusplus
}
#endif
#endif
