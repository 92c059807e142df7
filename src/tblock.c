/* tblock.c - blocks of memory one thread owns (enum cb_tblock), made on first
 * use and freed when the thread exits.  Too large for static TLS in a library
 * that may be dlopened, so only their pointers are thread-local.  One key for
 * all of them; its destructor runs in the exiting thread and clears each
 * pointer as it frees the block, so a copy made by a program's destructor that
 * runs after this one makes a new block (freed in the next round of
 * destructors) instead of using the freed one. */
#include "tblock.h"

#include <pthread.h>
#include <stdlib.h>

CB_TLS void *cb_tls_blocks[CB_TB_COUNT];
static pthread_key_t cb_blocks_key;
static pthread_once_t cb_blocks_once = PTHREAD_ONCE_INIT;

static void blocks_free(void *blocks)
{
    void **b = blocks; /* this thread's cb_tls_blocks */
    for (int i = 0; i < CB_TB_COUNT; i++) {
        free(b[i]);
        b[i] = NULL;
    }
}

static void blocks_key(void) { pthread_key_create(&cb_blocks_key, blocks_free); }

void *cb_thread_block_new(enum cb_tblock which, size_t size)
{
    pthread_once(&cb_blocks_once, blocks_key);
    void *b = calloc(1, size);
    if (b && pthread_setspecific(cb_blocks_key, cb_tls_blocks)) {
        free(b);
        b = NULL;
    }
    return cb_tls_blocks[which] = b;
}
