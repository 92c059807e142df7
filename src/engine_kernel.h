/* engine_kernel.h - the copy-kernel engine (engine_kernel.c). */
#ifndef CUBATCH_ENGINE_KERNEL_H
#define CUBATCH_ENGINE_KERNEL_H

#include "copies.h"

/* 1 when the library holds the kernel and the driver can load and launch it
 * (else *why says why not). */
int cb_kernel_engine_init(const char **why);
/* The largest copy the kernel takes when the choice is the library's own
 * (CUBATCH_ENGINE=auto): larger ones are bandwidth-bound either way, and the
 * copy engines of the batch API leave the SMs to the program's kernels. */
#define CB_KERNEL_AUTO_MAX ((size_t)256 << 10)
/* Copies [off, off + n) as launches of the copy kernel on stream, in f's
 * context (current); at most CB_KPARAMS_MAX copies a launch. */
CUresult cb_kernel_engine_submit(const struct cb_copies *c, size_t off, size_t n, CUstream stream,
                                 const struct cb_stream_facts *f);
size_t cb_kernel_engine_max(void); /* copies one launch carries */
int cb_kernel_engine_ready(CUcontext ctx); /* 0 when the kernel could not be loaded there */
void cb_forget_context_kernel(CUcontext ctx); /* its module died with it */
void cb_kernel_atfork_prepare(void); /* the modules' lock held across fork */
void cb_kernel_atfork_parent(void);
void cb_kernel_atfork_child(void);

#endif /* CUBATCH_ENGINE_KERNEL_H */
