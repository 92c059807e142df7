/* tblock.h - blocks of memory one thread owns, made on first use and freed
 * at the thread's exit (tblock.c). */
#ifndef CUBATCH_TBLOCK_H
#define CUBATCH_TBLOCK_H

#include "internal.h"

enum cb_tblock {
    CB_TB_CLASSES, /* classify.c: the ranges this thread classified */
    CB_TB_KPARAMS, /* engine_kernel.c: the parameter block of the launch being made */
    CB_TB_COUNT
};
extern CB_TLS void *cb_tls_blocks[CB_TB_COUNT];
void *cb_thread_block_new(enum cb_tblock which, size_t size);
/* This thread's block of that kind, or NULL when it has none yet. */
static inline void *cb_thread_block_if_any(enum cb_tblock which) { return cb_tls_blocks[which]; }
/* This thread's zeroed block of that kind, made now if it has none (NULL: out of memory). */
static inline void *cb_thread_block(enum cb_tblock which, size_t size)
{
    void *b = cb_tls_blocks[which];
    return CB_LIKELY(b != NULL) ? b : cb_thread_block_new(which, size);
}

#endif /* CUBATCH_TBLOCK_H */
