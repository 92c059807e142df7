// stage_probe.cu - beside long cuBLAS products, which way of submitting many
// small host-to-device copies from pinned host memory finishes first?  An
// exploration for issue 24 (no cubatch involved): bf16 N x N x N products fill
// the GPU on one stream; then COPIES blocks of BYTES are copied to one device
// buffer on a non-blocking stream, timed from the first call to the end of a
// synchronize of that stream:
//   loop_blk   cudaMemcpyAsync one by one, a pinned allocation per block (PyTorch)
//   loop_one   the same from one pinned buffer
//   batch_blk  cuMemcpyBatchAsync in chunks of 32, a pinned allocation per block
//   batch_one  the same from one pinned buffer
//   ovl_blk    batch_blk with CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE
//   stage      each chunk of 32 blocks first copied by the CPU into one pinned
//              staging buffer, then one batch of 32 from it
//   stage_one  every block copied by the CPU into the staging buffer, then one
//              cudaMemcpyAsync of it all (destinations contiguous: a bound)
// Configurations rotate from round to round; medians over rounds.
//   stage_probe [--copies 256] [--bytes 4096] [--rounds 9] [--n 8192] [--gemms 8]
#include "probe.h"

#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x) probe_check("stage_probe", (x), #x, __LINE__)
#define CU(x)                                                                         \
    do {                                                                              \
        CUresult r_ = (x);                                                            \
        if (r_ != CUDA_SUCCESS) {                                                     \
            fprintf(stderr, "stage_probe: %s: error %d (line %d)\n", #x, (int)r_, __LINE__); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

enum { LOOP_BLK, LOOP_ONE, BATCH_BLK, BATCH_ONE, OVL_BLK, STAGE, STAGE_ONE, NC };
static const char *names[NC] = {"loop_blk", "loop_one", "batch_blk", "batch_one", "ovl_blk", "stage", "stage_one"};

int main(int argc, char **argv)
{
    probe_args args = {256, 4096, 9, 8192, 8};
    probe_parse(argc, argv, &args);
    const int copies = args.copies, rounds = args.rounds, n = args.n, gemms = args.gemms;
    const size_t bytes = args.bytes;
    const int chunk = 32;
    cudaStream_t prog;
    CK(cudaStreamCreateWithFlags(&prog, cudaStreamNonBlocking));
    std::vector<char *> blk(copies);
    char *one, *staging, *dev;
    CK(cudaMalloc(&dev, bytes * copies));
    CK(cudaHostAlloc((void **)&one, bytes * copies, cudaHostAllocDefault));
    CK(cudaHostAlloc((void **)&staging, bytes * copies, cudaHostAllocDefault));
    for (int i = 0; i < copies; i++) {
        CK(cudaHostAlloc((void **)&blk[i], bytes, cudaHostAllocDefault));
        memset(blk[i], i & 0xff, bytes);
        memset(one + i * bytes, i & 0xff, bytes);
    }
    std::vector<CUdeviceptr> dsts(copies), srcs(copies);
    std::vector<size_t> sizes(copies, bytes);
    products load;
    products_init(&load, "stage_probe", n);
    std::vector<std::vector<double>> t(NC), tg(NC);
    CUmemcpyAttributes attr_plain = {}, attr_ovl = {};
    attr_plain.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    attr_ovl.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    attr_ovl.flags = CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE;
    size_t idx0 = 0;
    for (int r = -1; r < rounds; r++) {
        for (int k = 0; k < NC; k++) {
            int cfg = (k + (r < 0 ? 0 : r)) % NC;
            double t0 = products_round(&load, dev, bytes * copies, gemms, gemms > 0 ? 2000 : 0);
            if (cfg == LOOP_BLK || cfg == LOOP_ONE) {
                for (int i = 0; i < copies; i++)
                    CK(cudaMemcpyAsync(dev + i * bytes, cfg == LOOP_BLK ? blk[i] : one + i * bytes, bytes,
                                       cudaMemcpyHostToDevice, prog));
            } else if (cfg == STAGE_ONE) {
                for (int i = 0; i < copies; i++)
                    memcpy(staging + i * bytes, blk[i], bytes);
                CK(cudaMemcpyAsync(dev, staging, bytes * copies, cudaMemcpyHostToDevice, prog));
            } else {
                for (int i0 = 0; i0 < copies; i0 += chunk) {
                    int m = std::min(chunk, copies - i0);
                    for (int i = i0; i < i0 + m; i++) {
                        const char *s = cfg == BATCH_ONE ? one + i * bytes : blk[i];
                        if (cfg == STAGE) {
                            memcpy(staging + i * bytes, blk[i], bytes);
                            s = staging + i * bytes;
                        }
                        dsts[i] = (CUdeviceptr)(dev + i * bytes);
                        srcs[i] = (CUdeviceptr)s;
                    }
                    CU(cuMemcpyBatchAsync(&dsts[i0], &srcs[i0], &sizes[i0], m, cfg == OVL_BLK ? &attr_ovl : &attr_plain,
                                          &idx0, 1, (CUstream)prog));
                }
            }
            CK(cudaStreamSynchronize(prog));
            double t1 = now_us();
            CK(cudaDeviceSynchronize());
            probe_check_blocks(&load, names[cfg], dev, copies, bytes);
            if (r >= 0) {
                t[cfg].push_back(t1 - t0);
                tg[cfg].push_back(gemms > 0 ? products_us(&load) : 0.0);
            }
        }
    }
    printf("stage_probe copies=%d bytes=%zu n=%d gemms=%d rounds=%d\n", copies, bytes, n, gemms, rounds);
    double base = 0;
    for (int k = 0; k < NC; k++) {
        std::sort(t[k].begin(), t[k].end());
        std::sort(tg[k].begin(), tg[k].end());
        double med = t[k][t[k].size() / 2];
        if (k == LOOP_BLK)
            base = med;
        printf("%-10s done after %9.1f us (min %9.1f, max %9.1f)  loop_blk/this %5.2f  products %9.1f us\n", names[k], med,
               t[k].front(), t[k].back(), base / med, tg[k][tg[k].size() / 2]);
    }
    return 0;
}
