// load_bench.cu - copies beside compute (rule 12): an unmodified CUDA runtime
// program.  A non-blocking stream runs a load (none; a queue of short kernels
// filling every thread slot; one long kernel leaving room on each SM; one long
// kernel filling every thread slot; six cuBLAS SGEMMs of 4096 x 4096), and
// meanwhile a loop of cudaMemcpyAsync on another non-blocking stream is timed
// from its first call to the end of its stream synchronize.  The load's own
// time (launch to its stream synchronize) is printed beside it.  A cell whose
// name ends in -blk copies from (or into) a pinned allocation per block, as
// PyTorch's pinned tensors are each their own allocation; the others use one
// pinned buffer.  Run it under each configuration (bench/run-load.sh).
//
//   load_bench [--reps N] [--loads LIST] [--cells LIST]
//   load_bench --query-cost   the cost of cudaStreamQuery / cudaEventQuery on a
//                             stream running a kernel that fills the GPU, and idle
// --record-every K: a timing event recorded on the copy stream after every K
// copies of the one-buffer cells (what the measured choice's samples add).
// Output: one line per (load, cell): "load=L cell=C copy_us=M compute_us=M ok=1"
// (medians of N repetitions after one warm-up; ok=0 if any byte was wrong).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(x)                                                                           \
    do {                                                                                \
        cudaError_t e_ = (x);                                                           \
        if (e_ != cudaSuccess) {                                                        \
            fprintf(stderr, "load_bench: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

__global__ void spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

static double now_us()
{
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct load { const char *name; int kernels, blocks_per_sm; double block_us; int gemms; };
static const load loads[] = {
    {"none", 0, 0, 0, 0},
    {"short", 200, 8, 45, 0},    // a queue of short kernels: 8 blocks of 256 threads per SM, ~45 us each
    {"room", 1, 2, 12000, 0},    // one kernel leaving room on every SM
    {"fill", 1, 8, 12000, 0},    // one kernel filling every thread slot (2048 per SM)
    {"gemm", 0, 0, 0, 6},        // six cuBLAS SGEMMs, 4096 x 4096 x 4096
};
struct cell { const char *name; cudaMemcpyKind kind; int n; size_t size; bool per_block; };
static const cell cells[] = {
    {"h2d-64x4K", cudaMemcpyHostToDevice, 64, 4096, false},     {"h2d-1024x4K", cudaMemcpyHostToDevice, 1024, 4096, false},
    {"h2d-256x64K", cudaMemcpyHostToDevice, 256, 65536, false}, {"d2h-64x4K", cudaMemcpyDeviceToHost, 64, 4096, false},
    {"d2h-1024x4K", cudaMemcpyDeviceToHost, 1024, 4096, false}, {"d2h-256x64K", cudaMemcpyDeviceToHost, 256, 65536, false},
    {"d2d-64x4K", cudaMemcpyDeviceToDevice, 64, 4096, false},   {"d2d-1024x4K", cudaMemcpyDeviceToDevice, 1024, 4096, false},
    {"d2d-256x64K", cudaMemcpyDeviceToDevice, 256, 65536, false},
    {"h2d-256x4K", cudaMemcpyHostToDevice, 256, 4096, false},   {"h2d-1024x16K", cudaMemcpyHostToDevice, 1024, 16384, false},
    {"h2d-1024x4K-blk", cudaMemcpyHostToDevice, 1024, 4096, true}, {"h2d-256x4K-blk", cudaMemcpyHostToDevice, 256, 4096, true},
    {"h2d-256x64K-blk", cudaMemcpyHostToDevice, 256, 65536, true}, {"h2d-1024x16K-blk", cudaMemcpyHostToDevice, 1024, 16384, true},
    {"d2h-1024x4K-blk", cudaMemcpyDeviceToHost, 1024, 4096, true},
    // lone copies: one copy and its stream synchronize
    {"h2d-1x4K", cudaMemcpyHostToDevice, 1, 4096, false},       {"d2d-1x4K", cudaMemcpyDeviceToDevice, 1, 4096, false},
};

static bool listed(const char *list, const char *name)
{
    if (!list)
        return true;
    std::string l = std::string(",") + list + ",", n = std::string(",") + name + ",";
    return l.find(n) != std::string::npos;
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

int main(int argc, char **argv)
{
    int reps = 5, query_cost = 0, record_every = 0;
    const char *want_loads = nullptr, *want_cells = nullptr;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--query-cost"))
            query_cost = 1;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--record-every") && i + 1 < argc)
            record_every = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--loads") && i + 1 < argc)
            want_loads = argv[++i];
        else if (!strcmp(argv[i], "--cells") && i + 1 < argc)
            want_cells = argv[++i];
        else {
            fprintf(stderr, "usage: load_bench [--reps N] [--loads LIST] [--cells LIST] [--record-every K]\n");
            return 2;
        }
    }
    int sms = 0, khz = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    cudaStream_t cs, xs;
    CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&xs, cudaStreamNonBlocking));
    cudaEvent_t rec; // --record-every: a timing event recorded on the copy stream every K copies
    CK(cudaEventCreate(&rec));
    if (query_cost) {
        cudaEvent_t ev;
        CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
        for (int busy = 1; busy >= 0; busy--) {
            if (busy)
                spin<<<8 * sms, 256, 0, cs>>>((long long)(20000.0 * khz / 1000.0));
            CK(cudaEventRecord(ev, cs));
            double t = now_us();
            while (now_us() - t < 200) {
            }
            const int n = 2000;
            double t0 = now_us();
            for (int i = 0; i < n; i++)
                (void)cudaStreamQuery(cs);
            double t1 = now_us();
            for (int i = 0; i < n; i++)
                (void)cudaEventQuery(ev);
            double t2 = now_us();
            printf("query_cost busy=%d stream_query_ns=%.0f event_query_ns=%.0f still_busy=%d\n", busy,
                   (t1 - t0) * 1000 / n, (t2 - t1) * 1000 / n, cudaStreamQuery(cs) == cudaErrorNotReady);
            CK(cudaStreamSynchronize(cs));
        }
        return 0;
    }
    const size_t bytes = (size_t)1024 * 16384; // the largest cell: 16 MiB
    unsigned char *hin, *hout, *check = (unsigned char *)malloc(bytes);
    // the GEMM load: its own handle on the load's stream
    cublasHandle_t blas = nullptr;
    float *ga = nullptr, *gb = nullptr, *gc = nullptr;
    const int gn = 4096;
    if (listed(want_loads, "gemm")) {
        if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(blas, cs) != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "load_bench: cuBLAS unavailable\n");
            return 1;
        }
        CK(cudaMalloc(&ga, sizeof(float) * gn * gn));
        CK(cudaMalloc(&gb, sizeof(float) * gn * gn));
        CK(cudaMalloc(&gc, sizeof(float) * gn * gn));
        CK(cudaMemset(ga, 0, sizeof(float) * gn * gn));
        CK(cudaMemset(gb, 0, sizeof(float) * gn * gn));
    }
    CK(cudaMallocHost(&hin, bytes));
    CK(cudaMallocHost(&hout, bytes));
    void *din, *dout;
    CK(cudaMalloc(&din, bytes));
    CK(cudaMalloc(&dout, bytes));
    for (size_t i = 0; i < bytes; i++)
        hin[i] = (unsigned char)(i * 7 + 3);
    CK(cudaMemcpy(din, hin, bytes, cudaMemcpyHostToDevice));
    for (const load &L : loads) {
        if (!listed(want_loads, L.name))
            continue;
        for (const cell &C : cells) {
            if (!listed(want_cells, C.name))
                continue;
            // a pinned allocation per block (-blk cells), made for the cell and freed after it
            std::vector<unsigned char *> blocks;
            if (C.per_block) {
                for (int i = 0; i < C.n; i++) {
                    unsigned char *p;
                    CK(cudaMallocHost(&p, C.size));
                    if (C.kind == cudaMemcpyHostToDevice)
                        memcpy(p, hin + (size_t)i * C.size, C.size);
                    blocks.push_back(p);
                }
            }
            std::vector<double> copy_us, compute_us;
            bool ok = true;
            for (int r = 0; r <= reps; r++) {
                CK(cudaMemsetAsync(dout, 0, bytes, xs));
                memset(hout, 0, bytes);
                CK(cudaDeviceSynchronize());
                double t_load = now_us();
                long long cycles = (long long)(L.block_us * khz / 1000.0);
                for (int k = 0; k < L.kernels; k++)
                    spin<<<L.blocks_per_sm * sms, 256, 0, cs>>>(cycles);
                const float one = 1.0f, zero = 0.0f;
                for (int k = 0; k < L.gemms; k++)
                    if (cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, gn, gn, gn, &one, ga, gn, gb, gn, &zero, gc, gn) !=
                        CUBLAS_STATUS_SUCCESS) {
                        fprintf(stderr, "load_bench: cublasSgemm failed\n");
                        return 1;
                    }
                if (L.kernels || L.gemms) { // let the load take the SMs
                    double t = now_us();
                    while (now_us() - t < 200) {
                    }
                }
                unsigned char *dst = C.kind == cudaMemcpyDeviceToHost ? hout : (unsigned char *)dout;
                const unsigned char *src = C.kind == cudaMemcpyHostToDevice ? hin : (const unsigned char *)din;
                double t0 = now_us();
                if (C.per_block && C.kind == cudaMemcpyHostToDevice)
                    for (int i = 0; i < C.n; i++)
                        CK(cudaMemcpyAsync(dst + (size_t)i * C.size, blocks[i], C.size, C.kind, xs));
                else if (C.per_block)
                    for (int i = 0; i < C.n; i++)
                        CK(cudaMemcpyAsync(blocks[i], src + (size_t)i * C.size, C.size, C.kind, xs));
                else
                    for (int i = 0; i < C.n; i++) {
                        CK(cudaMemcpyAsync(dst + (size_t)i * C.size, src + (size_t)i * C.size, C.size, C.kind, xs));
                        if (record_every && i % record_every == record_every - 1)
                            CK(cudaEventRecord(rec, xs));
                    }
                CK(cudaStreamSynchronize(xs));
                double t1 = now_us();
                CK(cudaStreamSynchronize(cs));
                double t2 = now_us();
                if (r == 0) { // warm-up, and the bytes checked
                    size_t n = (size_t)C.n * C.size;
                    if (C.per_block && C.kind == cudaMemcpyDeviceToHost)
                        for (int i = 0; i < C.n; i++)
                            memcpy(hout + (size_t)i * C.size, blocks[i], C.size);
                    if (C.kind == cudaMemcpyDeviceToHost)
                        memcpy(check, hout, n);
                    else
                        CK(cudaMemcpy(check, dout, n, cudaMemcpyDeviceToHost));
                    ok = ok && !memcmp(check, hin, n);
                    continue;
                }
                copy_us.push_back(t1 - t0);
                compute_us.push_back(L.kernels || L.gemms ? t2 - t_load : 0);
            }
            for (unsigned char *p : blocks)
                CK(cudaFreeHost(p));
            printf("load=%s cell=%s copy_us=%.1f compute_us=%.1f ok=%d\n", L.name, C.name, median(copy_us),
                   median(compute_us), ok ? 1 : 0);
            fflush(stdout);
        }
    }
    return 0;
}
