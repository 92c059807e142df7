// rt_capture: CUDA graph capture the way programs use it, in every capture mode,
// checked against results computed on the host.
//
//   rt_capture [SCENARIO...]     (default: all; "list" prints the names)
//
// Each scenario runs once per capture mode (global, thread-local, relaxed) and
// prints "CHECK <scenario>-<mode> <fnv64>"; with the same CB_TEST_SEED the lines
// agree between runs, and the program fails (exit 1) on wrong bytes or on any
// CUDA error, a capture invalidated by someone else's call included.  Exit 77:
// no GPU.  Built with -DWITH_CUBLAS and -lcublas, the cublas scenario captures
// cuBLAS matrix products; without, it is absent.
#include <cuda_runtime.h>
#ifdef WITH_CUBLAS
#include <cublas_v2.h>
#endif

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

static void die(const char *what, int e, const char *name, int line)
{
    std::fprintf(stderr, "rt_capture:%d: %s failed: %d (%s)\n", line, what, e, name);
    std::exit(1);
}
#define CK(call)                                                                  \
    do {                                                                          \
        cudaError_t e_ = (call);                                                  \
        if (e_ != cudaSuccess)                                                    \
            die(#call, (int)e_, cudaGetErrorName(e_), __LINE__);                  \
    } while (0)

static uint64_t g_seed;
static const char *g_mode_name;
static cudaStreamCaptureMode g_mode;

static uint64_t fnv(uint64_t h, const void *buf, size_t n)
{
    const unsigned char *b = static_cast<const unsigned char *>(buf);
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}
static const uint64_t FNV0 = 0xcbf29ce484222325ULL;

__host__ __device__ static uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    return x ^ (x >> 16);
}

// out[i] = mix(i ^ seed) + add[i % n_add] (add may be NULL)
__global__ void fill(uint32_t *out, size_t n, uint32_t seed, const uint32_t *add, size_t n_add)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = mix((uint32_t)i ^ seed) + (add ? add[i % n_add] : 0u);
}

static uint32_t want_at(size_t i, uint32_t seed, const uint32_t *add, size_t n_add)
{
    return mix((uint32_t)i ^ seed) + (add ? add[i % n_add] : 0u);
}

static int check(const char *sc, const uint32_t *got, size_t n, uint32_t seed, const uint32_t *add, size_t n_add)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want_at(i, seed, add, n_add)) {
            std::fprintf(stderr, "rt_capture: %s-%s: word %zu is %08x, want %08x\n", sc, g_mode_name, i, got[i],
                         want_at(i, seed, add, n_add));
            return 1;
        }
    return 0;
}

static void report(const char *sc, uint64_t h) { std::printf("CHECK %s-%s %016llx\n", sc, g_mode_name, (unsigned long long)h); }

static uint32_t seed_for(const char *sc)
{
    uint64_t s = g_seed;
    for (const char *p = sc; *p; p++)
        s = (s ^ (unsigned char)*p) * 0x100000001b3ULL;
    return (uint32_t)(s ^ (s >> 32));
}

// Capture `body` on s in the current mode, replay the graph `replays` times.
template <class F> static void capture_and_replay(cudaStream_t s, int replays, F body)
{
    cudaGraph_t g;
    cudaGraphExec_t x;
    CK(cudaStreamBeginCapture(s, g_mode));
    body();
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&x, g, 0));
    for (int r = 0; r < replays; r++)
        CK(cudaGraphLaunch(x, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaGraphExecDestroy(x));
    CK(cudaGraphDestroy(g));
}

// A grid of `blocks` x 256 threads in a capture, an event record after it (the
// sample programs' pattern), a second kernel; replayed twice.
static int sc_grid(const char *sc, unsigned blocks)
{
    const size_t n = (size_t)blocks * 256;
    uint32_t seed = seed_for(sc);
    uint32_t *d, *h;
    cudaStream_t s;
    cudaEvent_t e;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    CK(cudaMalloc(&d, n * 4));
    CK(cudaMallocHost(&h, n * 4));
    capture_and_replay(s, 2, [&] {
        fill<<<blocks, 256, 0, s>>>(d, n, seed ^ 1, nullptr, 0);
        CK(cudaGetLastError());
        CK(cudaEventRecord(e, s));
        fill<<<blocks, 256, 0, s>>>(d, n, seed, nullptr, 0);
        CK(cudaGetLastError());
    });
    CK(cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost));
    int bad = check(sc, h, n, seed, nullptr, 0);
    report(sc, fnv(FNV0, h, n * 4));
    CK(cudaFreeHost(h));
    CK(cudaFree(d));
    CK(cudaEventDestroy(e));
    CK(cudaStreamDestroy(s));
    return bad;
}
static int sc_small() { return sc_grid("small", 8); }
static int sc_filling() { return sc_grid("filling", 4096); }

// Fork and join across streams inside the capture: s records, t waits and
// computes (a filling grid), s waits for t.
static int sc_fork()
{
    const char *sc = "fork";
    const unsigned blocks = 4096;
    const size_t n = (size_t)blocks * 256;
    uint32_t seed = seed_for(sc);
    uint32_t *a, *b, *h;
    cudaStream_t s, t;
    cudaEvent_t forked, joined;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
    CK(cudaMalloc(&a, n * 4));
    CK(cudaMalloc(&b, n * 4));
    CK(cudaMallocHost(&h, n * 8));
    capture_and_replay(s, 2, [&] {
        fill<<<blocks, 256, 0, s>>>(a, n, seed, nullptr, 0);
        CK(cudaEventRecord(forked, s));
        CK(cudaStreamWaitEvent(t, forked, 0));
        fill<<<blocks, 256, 0, t>>>(b, n, seed + 1, a, n);
        CK(cudaEventRecord(joined, t));
        fill<<<8, 256, 0, s>>>(a, n, seed + 2, nullptr, 0);
        CK(cudaStreamWaitEvent(s, joined, 0));
    });
    CK(cudaMemcpy(h, a, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h + n, b, n * 4, cudaMemcpyDeviceToHost));
    std::vector<uint32_t> first(n);
    for (size_t i = 0; i < n; i++)
        first[i] = want_at(i, seed, nullptr, 0);
    int bad = check(sc, h, n, seed + 2, nullptr, 0) | check(sc, h + n, n, seed + 1, first.data(), n);
    report(sc, fnv(FNV0, h, n * 8));
    CK(cudaFreeHost(h));
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaEventDestroy(forked));
    CK(cudaEventDestroy(joined));
    CK(cudaStreamDestroy(s));
    CK(cudaStreamDestroy(t));
    return bad;
}

// Copies around and inside a capture on one stream: a run of small uploads
// queued before the capture begins, uploads + a filling kernel + downloads
// inside it, and a run of downloads after the replays.
static int sc_copies()
{
    const char *sc = "copies";
    const size_t blk = 4096 / 4, nblk = 256, n = blk * nblk;
    uint32_t seed = seed_for(sc);
    uint32_t *d_in, *d_out, *h_in, *h_mid, *h_out;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&d_in, n * 4));
    CK(cudaMalloc(&d_out, n * 4));
    CK(cudaMallocHost(&h_in, n * 4));
    CK(cudaMallocHost(&h_mid, n * 4));
    CK(cudaMallocHost(&h_out, n * 4));
    for (size_t i = 0; i < n; i++)
        h_in[i] = mix((uint32_t)i * 7u + seed);
    for (size_t b = 0; b < nblk; b++) // queued before the capture
        CK(cudaMemcpyAsync(d_in + b * blk, h_in + b * blk, blk * 4, cudaMemcpyHostToDevice, s));
    capture_and_replay(s, 2, [&] {
        for (size_t b = 0; b < 16; b++)
            CK(cudaMemcpyAsync(d_in + b * blk, h_in + b * blk, blk * 4, cudaMemcpyHostToDevice, s));
        fill<<<4096, 256, 0, s>>>(d_out, n, seed, d_in, n);
        for (size_t b = 0; b < 16; b++)
            CK(cudaMemcpyAsync(h_mid + b * blk, d_out + b * blk, blk * 4, cudaMemcpyDeviceToHost, s));
    });
    for (size_t b = 0; b < nblk; b++) // after the replays
        CK(cudaMemcpyAsync(h_out + b * blk, d_out + b * blk, blk * 4, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    int bad = check(sc, h_out, n, seed, h_in, n) | check(sc, h_mid, 16 * blk, seed, h_in, n);
    report(sc, fnv(fnv(FNV0, h_out, n * 4), h_mid, 16 * blk * 4));
    CK(cudaFreeHost(h_in));
    CK(cudaFreeHost(h_mid));
    CK(cudaFreeHost(h_out));
    CK(cudaFree(d_in));
    CK(cudaFree(d_out));
    CK(cudaStreamDestroy(s));
    return bad;
}

// Graph memory nodes: cudaMallocAsync and cudaFreeAsync inside the capture.
static int sc_memnodes()
{
    const char *sc = "memnodes";
    const size_t n = 4096 * 256;
    uint32_t seed = seed_for(sc);
    uint32_t *h, *out;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMallocHost(&h, n * 4));
    CK(cudaMalloc(&out, n * 4));
    capture_and_replay(s, 3, [&] {
        uint32_t *tmp;
        CK(cudaMallocAsync(&tmp, n * 4, s));
        fill<<<4096, 256, 0, s>>>(tmp, n, seed, nullptr, 0);
        CK(cudaMemcpyAsync(out, tmp, n * 4, cudaMemcpyDeviceToDevice, s));
        CK(cudaFreeAsync(tmp, s));
    });
    CK(cudaMemcpy(h, out, n * 4, cudaMemcpyDeviceToHost));
    int bad = check(sc, h, n, seed, nullptr, 0);
    report(sc, fnv(FNV0, h, n * 4));
    CK(cudaFree(out));
    CK(cudaFreeHost(h));
    CK(cudaStreamDestroy(s));
    return bad;
}

// A capture in this thread (a filling grid, so cubatch counts the stream as
// busy) while another thread makes runs of small uploads and downloads on its
// own stream: nothing cubatch does for the other thread may touch the capture.
static int sc_thread()
{
    const char *sc = "thread";
    const size_t blk = 1024, nblk = 512, n = blk * nblk;
    uint32_t seed = seed_for(sc);
    std::atomic<int> phase{0};
    int other_bad = 0;
    std::thread other([&] {
        cudaStream_t t;
        uint32_t *hi, *ho, *dv;
        CK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
        CK(cudaMallocHost(&hi, n * 4));
        CK(cudaMallocHost(&ho, n * 4));
        CK(cudaMalloc(&dv, n * 4));
        for (size_t i = 0; i < n; i++)
            hi[i] = mix((uint32_t)i + seed);
        phase.store(1);
        while (phase.load() < 2) // the capture has begun
            std::this_thread::yield();
        // only asynchronous work while the capture lasts: a synchronize, a query
        // or a free of any stream is refused beside a global-mode capture
        for (int round = 0; round < 4; round++) {
            for (size_t b = 0; b < nblk; b++)
                CK(cudaMemcpyAsync(dv + b * blk, hi + b * blk, blk * 4, cudaMemcpyHostToDevice, t));
            for (size_t b = 0; b < nblk; b++)
                CK(cudaMemcpyAsync(ho + b * blk, dv + b * blk, blk * 4, cudaMemcpyDeviceToHost, t));
            std::this_thread::sleep_for(std::chrono::microseconds(300)); // the timer's looks
        }
        phase.store(3);
        while (phase.load() < 4) // the capture has ended
            std::this_thread::yield();
        CK(cudaStreamSynchronize(t));
        other_bad = std::memcmp(hi, ho, n * 4) != 0;
        CK(cudaFreeHost(hi));
        CK(cudaFreeHost(ho));
        CK(cudaFree(dv));
        CK(cudaStreamDestroy(t));
    });
    while (phase.load() < 1)
        std::this_thread::yield();
    const size_t m = 4096 * 256;
    uint32_t *d, *h;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&d, m * 4));
    CK(cudaMallocHost(&h, m * 4));
    capture_and_replay(s, 2, [&] {
        fill<<<4096, 256, 0, s>>>(d, m, seed, nullptr, 0);
        phase.store(2);
        while (phase.load() < 3) { // the other thread's whole work inside the capture
            fill<<<4096, 256, 0, s>>>(d, m, seed, nullptr, 0);
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    });
    phase.store(4);
    other.join();
    CK(cudaMemcpy(h, d, m * 4, cudaMemcpyDeviceToHost));
    int bad = check(sc, h, m, seed, nullptr, 0) | other_bad;
    if (other_bad)
        std::fprintf(stderr, "rt_capture: thread-%s: the other thread's copies are wrong\n", g_mode_name);
    report(sc, fnv(FNV0, h, m * 4));
    CK(cudaFreeHost(h));
    CK(cudaFree(d));
    CK(cudaStreamDestroy(s));
    return bad;
}

#ifdef WITH_CUBLAS
#define CKB(call)                                                                   \
    do {                                                                            \
        cublasStatus_t b_ = (call);                                                 \
        if (b_ != CUBLAS_STATUS_SUCCESS)                                            \
            die(#call, (int)b_, "cublas", __LINE__);                                \
    } while (0)
// cuBLAS in a capture: y = A x (SGEMV), then C = A B (SGEMM 1024^2, filling),
// then an axpy, as conjugateGradientCudaGraphs does; checked on the host.
static int sc_cublas()
{
    const char *sc = "cublas";
    const int N = 1024;
    uint32_t seed = seed_for(sc);
    std::vector<float> A((size_t)N * N), B((size_t)N * N), x(N);
    for (size_t i = 0; i < A.size(); i++) {
        A[i] = (float)(mix((uint32_t)i ^ seed) % 17) - 8.0f;
        B[i] = (float)(mix((uint32_t)i ^ ~seed) % 13) - 6.0f;
    }
    for (int i = 0; i < N; i++)
        x[i] = (float)(mix((uint32_t)i + seed) % 9) - 4.0f;
    float *dA, *dB, *dC, *dx, *dy;
    CK(cudaMalloc(&dA, A.size() * 4));
    CK(cudaMalloc(&dB, B.size() * 4));
    CK(cudaMalloc(&dC, A.size() * 4));
    CK(cudaMalloc(&dx, N * 4));
    CK(cudaMalloc(&dy, N * 4));
    CK(cudaMemcpy(dA, A.data(), A.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, B.data(), B.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dx, x.data(), N * 4, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cublasHandle_t hb;
    CKB(cublasCreate(&hb));
    CKB(cublasSetStream(hb, s));
    CKB(cublasSetMathMode(hb, CUBLAS_PEDANTIC_MATH)); // exact small integers: no TF32
    const float one = 1.0f, zero = 0.0f, two = 2.0f;
    // warm up outside the capture (cuBLAS loads its kernels on first use)
    CKB(cublasSgemm(hb, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, dA, N, dB, N, &zero, dC, N));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemset(dy, 0, N * 4));
    capture_and_replay(s, 1, [&] {
        CKB(cublasSgemv(hb, CUBLAS_OP_N, N, N, &one, dA, N, dx, 1, &zero, dy, 1));
        CKB(cublasSgemm(hb, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, dA, N, dB, N, &zero, dC, N));
        CKB(cublasSaxpy(hb, N, &two, dx, 1, dy, 1));
    });
    std::vector<float> C(A.size()), y(N);
    CK(cudaMemcpy(C.data(), dC, C.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(y.data(), dy, N * 4, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < N && !bad; i++) { // column-major: y_i = sum_j A(i,j) x_j + 2 x_i
        double acc = 2.0 * x[i];
        for (int j = 0; j < N; j++)
            acc += (double)A[(size_t)j * N + i] * x[j];
        if ((double)y[i] != acc) {
            std::fprintf(stderr, "rt_capture: cublas-%s: y[%d] = %g, want %g\n", g_mode_name, i, y[i], acc);
            bad = 1;
        }
    }
    for (int k = 0; k < 64 && !bad; k++) { // 64 sampled entries of C
        int i = (int)(mix((uint32_t)k + seed) % N), j = (int)(mix((uint32_t)k ^ seed) % N);
        double acc = 0;
        for (int l = 0; l < N; l++)
            acc += (double)A[(size_t)l * N + i] * B[(size_t)j * N + l];
        if ((double)C[(size_t)j * N + i] != acc) {
            std::fprintf(stderr, "rt_capture: cublas-%s: C(%d,%d) = %g, want %g\n", g_mode_name, i, j,
                         C[(size_t)j * N + i], acc);
            bad = 1;
        }
    }
    report(sc, fnv(fnv(FNV0, y.data(), N * 4), C.data(), C.size() * 4));
    CKB(cublasDestroy(hb));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(dA));
    CK(cudaFree(dB));
    CK(cudaFree(dC));
    CK(cudaFree(dx));
    CK(cudaFree(dy));
    return bad;
}
#endif

static const struct {
    const char *name;
    int (*fn)();
} scenarios[] = {
    {"small", sc_small}, {"filling", sc_filling}, {"fork", sc_fork},     {"copies", sc_copies},
    {"memnodes", sc_memnodes}, {"thread", sc_thread},
#ifdef WITH_CUBLAS
    {"cublas", sc_cublas},
#endif
};

int main(int argc, char **argv)
{
    if (argc > 1 && !std::strcmp(argv[1], "list")) {
        for (auto &s : scenarios)
            std::printf("%s\n", s.name);
        return 0;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        std::fprintf(stderr, "rt_capture: no GPU\n");
        return 77;
    }
    const char *env = std::getenv("CB_TEST_SEED");
    g_seed = env ? std::strtoull(env, nullptr, 10) : (uint64_t)std::time(nullptr);
    static const struct { cudaStreamCaptureMode mode; const char *name; } modes[] = {
        {cudaStreamCaptureModeGlobal, "global"},
        {cudaStreamCaptureModeThreadLocal, "thread_local"},
        {cudaStreamCaptureModeRelaxed, "relaxed"},
    };
    int bad = 0;
    for (auto &m : modes) {
        g_mode = m.mode;
        g_mode_name = m.name;
        for (auto &s : scenarios) {
            bool want = argc < 2;
            for (int i = 1; i < argc; i++)
                want |= !std::strcmp(argv[i], s.name);
            if (want)
                bad |= s.fn();
        }
    }
    return bad;
}
