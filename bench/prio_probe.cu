// prio_probe.cu - does a copy kernel on a high-priority stream run beside long
// cuBLAS products?  An exploration for issue 24 (no cubatch involved): bf16
// N x N x N products fill the GPU on one stream; then N_COPIES pinned host
// blocks (one allocation each) are copied to the device, timed from the first
// call to the end of a synchronize of the copies' stream, as:
//   loop      cudaMemcpyAsync one by one on a normal stream (what programs do)
//   kernel    one launch of a block-per-copy kernel on a normal-priority stream
//   kprio     the same launch on a stream of the greatest priority
//   kprio_ev  kprio fenced as cubatch would: an event on the program's stream
//             waited by the priority stream, and one back
// Configurations rotate from round to round; medians over rounds.
//   prio_probe [--copies 1024] [--bytes 16384] [--rounds 9] [--n 8192] [--gemms 8]
#include "probe.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x) probe_check("prio_probe", (x), #x, __LINE__)

struct desc { unsigned long long dst, src, bytes; };

__global__ void copy_blocks(const desc *d)
{
    const desc c = d[blockIdx.x];
    const uint4 *s = (const uint4 *)c.src;
    uint4 *t = (uint4 *)c.dst;
    for (unsigned long long i = threadIdx.x; i < c.bytes / 16; i += blockDim.x)
        t[i] = s[i];
}

int main(int argc, char **argv)
{
    probe_args args = {1024, 16384, 9, 8192, 8};
    probe_parse(argc, argv, &args);
    const int copies = args.copies, rounds = args.rounds, n = args.n, gemms = args.gemms;
    const size_t bytes = args.bytes;
    int lo, hi;
    CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    cudaStream_t prog, normal, prio;
    CK(cudaStreamCreateWithFlags(&prog, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithPriority(&normal, cudaStreamNonBlocking, lo));
    CK(cudaStreamCreateWithPriority(&prio, cudaStreamNonBlocking, hi));
    cudaEvent_t ev_a, ev_b;
    CK(cudaEventCreateWithFlags(&ev_a, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&ev_b, cudaEventDisableTiming));
    std::vector<void *> host(copies);
    char *dev;
    CK(cudaMalloc(&dev, bytes * copies));
    for (int i = 0; i < copies; i++) {
        CK(cudaHostAlloc(&host[i], bytes, cudaHostAllocDefault));
        memset(host[i], i & 0xff, bytes);
    }
    desc *d;
    CK(cudaHostAlloc((void **)&d, sizeof(desc) * copies, cudaHostAllocMapped));
    for (int i = 0; i < copies; i++)
        d[i] = {(unsigned long long)(dev + i * bytes), (unsigned long long)host[i], bytes};
    desc *dd;
    CK(cudaHostGetDevicePointer((void **)&dd, d, 0));
    products load;
    products_init(&load, "prio_probe", n);
    const char *names[] = {"loop", "kernel", "kprio", "kprio_ev"};
    const int NC = 4;
    std::vector<std::vector<double>> t(NC), tg(NC);
    for (int r = -1; r < rounds; r++) {
        for (int k = 0; k < NC; k++) {
            int cfg = (k + (r < 0 ? 0 : r)) % NC;
            double t0 = products_round(&load, dev, bytes * copies, gemms, 2000);
            cudaStream_t done = prog;
            if (cfg == 0) {
                for (int i = 0; i < copies; i++)
                    CK(cudaMemcpyAsync(dev + i * bytes, host[i], bytes, cudaMemcpyHostToDevice, prog));
            } else if (cfg == 1 || cfg == 2) {
                done = cfg == 1 ? normal : prio;
                copy_blocks<<<copies, 256, 0, done>>>(dd);
            } else {
                CK(cudaEventRecord(ev_a, prog));
                CK(cudaStreamWaitEvent(prio, ev_a, 0));
                copy_blocks<<<copies, 256, 0, prio>>>(dd);
                CK(cudaEventRecord(ev_b, prio));
                CK(cudaStreamWaitEvent(prog, ev_b, 0));
            }
            CK(cudaGetLastError());
            CK(cudaStreamSynchronize(done));
            double t1 = now_us();
            CK(cudaDeviceSynchronize());
            probe_check_blocks(&load, names[cfg], dev, copies, bytes);
            if (r >= 0) {
                t[cfg].push_back(t1 - t0);
                tg[cfg].push_back(products_us(&load));
            }
        }
    }
    printf("prio_probe copies=%d bytes=%zu n=%d gemms=%d rounds=%d priorities %d..%d\n", copies, bytes, n, gemms, rounds, lo, hi);
    for (int k = 0; k < NC; k++) {
        std::sort(t[k].begin(), t[k].end());
        std::sort(tg[k].begin(), tg[k].end());
        printf("%-9s copies done after %9.1f us (min %9.1f, max %9.1f)   products %9.1f us\n", names[k], t[k][t[k].size() / 2],
               t[k].front(), t[k].back(), tg[k][tg[k].size() / 2]);
    }
    return 0;
}
