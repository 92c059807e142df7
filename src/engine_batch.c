/* engine_batch.c - copies submitted as one cuMemcpyBatchAsync call.
 *
 * CUDA 13.0 headers #define cuMemcpyBatchAsync cuMemcpyBatchAsync_v2 (8
 * arguments); CUDA 12.8 had a 9-argument form with size_t *failIdx, and calling
 * one with the other's signature corrupts the stream argument.  So the entry
 * point is asked of the driver at version 13000 (docs/design.md section 2), and used
 * only when the library was built against CUDA 13 headers. */
#include "engine_batch.h"
#include "stats.h"
#include "choose.h"

#include <dlfcn.h>

typedef CUresult (*cb_batch_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *,
                                size_t, CUstream);
static cb_batch_fn cb_batch; /* the CUDA 13.0 batch entry (8 arguments), or NULL */

/* The real function behind p, if p is cubatch's own wrapper (a driver whose
 * resolver went through the global symbol scope would hand that back): cubatch
 * must never call its own wrappers, or a submission would flush itself. */
static void *unwrap(void *p)
{
    Dl_info of_p, of_us;
    if (dladdr(p, &of_p) && dladdr((void *)unwrap, &of_us) && of_p.dli_fbase == of_us.dli_fbase)
        return cb_real[CB_ID_cuMemcpyBatchAsync_v2];
    return p;
}

int cb_batch_engine_init(const char **why)
{
#if CUDA_VERSION >= 13000
    int v = cb_driver_version; /* driver.c asked, once; 0: it could not say */
    if (v == 0) {
        *why = "cuDriverGetVersion failed";
        return 0;
    }
    if (v < 13000) {
        *why = "driver older than CUDA 13.0";
        cb_log(CB_LOG_NOTICE, "driver reports version %d (< 13000): pure pass-through", v);
        return 0;
    }
    void *p = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!cb_drv.cuGetProcAddress_v2 ||
        cb_drv.cuGetProcAddress_v2("cuMemcpyBatchAsync", &p, 13000, 0, &st) != CUDA_SUCCESS || !p) {
        *why = "driver has no CUDA 13.0 cuMemcpyBatchAsync entry point";
        return 0;
    }
    cb_batch = (cb_batch_fn)unwrap(p);
    return 1;
#else
    *why = "built against CUDA headers older than 13.0";
    return 0;
#endif
}

CUresult cb_batch_engine_submit(const struct cb_copies *c, size_t off, size_t n, CUstream stream)
{
    CUmemcpyAttributes attr = {0};
    attr.srcAccessOrder = cb_opt(CB_OPT_src_order) == CB_SRC_ORDER_ANY ? CU_MEMCPY_SRC_ACCESS_ORDER_ANY
                                                                        : CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    attr.flags = cb_opt(CB_OPT_overlap) || c->arm == CB_ARM_OVERLAP ? CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE : 0;
    size_t zero = 0;
    CUresult rc = cb_batch(c->dsts + off, c->srcs + off, c->sizes + off, n, &attr, &zero, 1, stream);
    if (rc == CUDA_SUCCESS) {
        CB_COUNT(batches);
        CB_COUNT_N(batched_copies, n);
        cb_stat_max(CB_ST_batch_max, n);
    }
    return rc;
}
