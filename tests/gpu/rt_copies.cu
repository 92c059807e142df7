// rt_copies: small asynchronous copies through the CUDA runtime, checked.
//
// Built three ways (see run-gpu-tests.sh): static cudart (nvcc's default),
// -cudart shared, and --default-stream per-thread; with CB_CUDART13X also a
// fourth, linked against a newer libcudart.so.13 (-DCB_EXPECT_CUDART=its
// CUDART_VERSION: a run where another runtime loaded fails).  The runtime reaches the
// driver only through cuGetProcAddress, so this is what exercises cubatch's
// resolver path.
//
//   rt_copies [SCENARIO...]     (default: all; "list" prints the names)
//
// Exit: 0 right, 1 wrong bytes or CUDA error, 77 no GPU.  Prints
// "CHECK <scenario> <fnv64>" lines that agree between runs with the same
// CB_TEST_SEED.
#include <cuda_runtime.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <unistd.h>

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
static const char *kBuild = "per-thread default stream";
#else
static const char *kBuild = "legacy default stream";
#endif

static void die(const char *what, cudaError_t e, int line)
{
    std::fprintf(stderr, "rt_copies:%d: %s failed: %s (%s)\n", line, what, cudaGetErrorName(e),
                 cudaGetErrorString(e));
    std::exit(1);
}
#define CK(call)                                                                               \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess)                                                                 \
            die(#call, e_, __LINE__);                                                          \
    } while (0)

static const size_t KiB = 1024;

// ---- data --------------------------------------------------------------------

static uint64_t g_seed;

static uint64_t splitmix(uint64_t &s)
{
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rng_for(const char *scenario)
{
    uint64_t s = g_seed;
    for (const char *p = scenario; *p; p++)
        s = (s ^ (unsigned char)*p) * 0x100000001b3ULL;
    return s;
}

static void fill_random(void *buf, size_t n, uint64_t &rng)
{
    unsigned char *b = static_cast<unsigned char *>(buf);
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = splitmix(rng);
        std::memcpy(b + i, &v, n - i < 8 ? n - i : 8);
    }
}

static uint64_t fnv(uint64_t h, const void *buf, size_t n)
{
    const unsigned char *b = static_cast<const unsigned char *>(buf);
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}
static const uint64_t FNV0 = 0xcbf29ce484222325ULL;

static int same(const char *sc, const char *what, const void *got, const void *want, size_t n)
{
    const unsigned char *g = static_cast<const unsigned char *>(got);
    const unsigned char *w = static_cast<const unsigned char *>(want);
    if (std::memcmp(g, w, n) == 0)
        return 0;
    size_t first = n, bad = 0;
    for (size_t i = 0; i < n; i++)
        if (g[i] != w[i]) {
            if (first == n)
                first = i;
            bad++;
        }
    std::fprintf(stderr, "rt_copies: %s: %s: %zu of %zu bytes wrong, first at %zu\n", sc, what, bad,
                 n, first);
    return 1;
}

static void report(const char *sc, uint64_t h)
{
    std::printf("CHECK %s %016llx\n", sc, (unsigned long long)h);
}

// Pinned host buffer and device buffer, poisoned, freed on scope exit.
struct Pinned {
    unsigned char *p = nullptr;
    explicit Pinned(size_t n) { CK(cudaMallocHost(&p, n)); std::memset(p, 0xa5, n); }
    ~Pinned() { CK(cudaFreeHost(p)); }
    Pinned(const Pinned &) = delete;
    Pinned &operator=(const Pinned &) = delete;
};
struct Dev {
    unsigned char *p = nullptr;
    explicit Dev(size_t n) { CK(cudaMalloc(&p, n)); CK(cudaMemset(p, 0x5a, n)); }
    ~Dev() { CK(cudaFree(p)); }
    Dev(const Dev &) = delete;
    Dev &operator=(const Dev &) = delete;
};

// ---- kernel --------------------------------------------------------------------

// One thread block per copied block: sum of word[i] * (2i + 1) (mod 2^32).
__global__ void block_sums(const uint32_t *data, size_t words_per_block, uint32_t *sums)
{
    __shared__ uint32_t part[256];
    const uint32_t *blk = data + blockIdx.x * words_per_block;
    uint32_t acc = 0;
    for (size_t i = threadIdx.x; i < words_per_block; i += blockDim.x)
        acc += blk[i] * (uint32_t)(2 * i + 1);
    part[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        sums[blockIdx.x] = part[0];
}

static uint32_t host_sum(const unsigned char *blk, size_t words)
{
    uint32_t acc = 0;
    for (size_t i = 0; i < words; i++) {
        uint32_t w;
        std::memcpy(&w, blk + 4 * i, 4);
        acc += w * (uint32_t)(2 * i + 1);
    }
    return acc;
}

// ---- scenarios ------------------------------------------------------------------

// Copies of each direction with explicit kinds (or cudaMemcpyDefault) on a side
// stream, blocks permuted on the device.
static int sc_runs(const char *name, bool by_default)
{
    const size_t sizes[] = {512, 4 * KiB, 16 * KiB, 64 * KiB};
    uint64_t rng = rng_for(name), h = FNV0;
    int bad = 0;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (size_t sz : sizes) {
        const size_t n = 64, tot = n * sz;
        Pinned src(tot), out(tot);
        Dev a(tot), b(tot);
        std::vector<size_t> perm(n);
        for (size_t i = 0; i < n; i++)
            perm[i] = i;
        for (size_t i = n - 1; i > 0; i--)
            std::swap(perm[i], perm[splitmix(rng) % (i + 1)]);
        fill_random(src.p, tot, rng);
        auto k = [&](cudaMemcpyKind kind) { return by_default ? cudaMemcpyDefault : kind; };
        for (size_t i = 0; i < n; i++)
            CK(cudaMemcpyAsync(a.p + i * sz, src.p + i * sz, sz, k(cudaMemcpyHostToDevice), s));
        for (size_t i = 0; i < n; i++)
            CK(cudaMemcpyAsync(b.p + perm[i] * sz, a.p + i * sz, sz, k(cudaMemcpyDeviceToDevice), s));
        for (size_t i = 0; i < n; i++)
            CK(cudaMemcpyAsync(out.p + i * sz, b.p + i * sz, sz, k(cudaMemcpyDeviceToHost), s));
        CK(cudaStreamSynchronize(s));
        std::vector<unsigned char> want(tot);
        for (size_t i = 0; i < n; i++)
            std::memcpy(want.data() + perm[i] * sz, src.p + i * sz, sz);
        bad |= same(name, "permuted blocks", out.p, want.data(), tot);
        h = fnv(h, out.p, tot);
    }
    CK(cudaStreamDestroy(s));
    report(name, h);
    return bad;
}

// Dependent chain in one run: H2D a, a->b, b->c, c->host, then one sync.
static int sc_chain()
{
    const size_t n = 48, sz = 4 * KiB, tot = n * sz;
    uint64_t rng = rng_for("chain");
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Pinned src(tot), out(tot);
    Dev a(tot), b(tot), c(tot);
    fill_random(src.p, tot, rng);
    for (size_t i = 0; i < n; i++) {
        CK(cudaMemcpyAsync(a.p + i * sz, src.p + i * sz, sz, cudaMemcpyHostToDevice, s));
        CK(cudaMemcpyAsync(b.p + i * sz, a.p + i * sz, sz, cudaMemcpyDeviceToDevice, s));
        CK(cudaMemcpyAsync(c.p + i * sz, b.p + i * sz, sz, cudaMemcpyDefault, s));
        CK(cudaMemcpyAsync(out.p + i * sz, c.p + i * sz, sz, cudaMemcpyDeviceToHost, s));
    }
    CK(cudaStreamSynchronize(s));
    int bad = same("chain", "end of chain", out.p, src.p, tot);
    report("chain", fnv(FNV0, out.p, tot));
    CK(cudaStreamDestroy(s));
    return bad;
}

// Copies on one side stream, event, wait on a second side stream, read there.
static int sc_event()
{
    const size_t n = 64, sz = 4 * KiB, tot = n * sz;
    uint64_t rng = rng_for("event");
    cudaStream_t s1, s2;
    cudaEvent_t ev;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    Pinned src(tot), out(tot);
    Dev a(tot), b(tot);
    fill_random(src.p, tot, rng);
    for (size_t i = 0; i < n; i++)
        CK(cudaMemcpyAsync(a.p + i * sz, src.p + i * sz, sz, cudaMemcpyHostToDevice, s1));
    CK(cudaEventRecord(ev, s1));
    CK(cudaStreamWaitEvent(s2, ev, 0));
    for (size_t i = 0; i < n; i++)
        CK(cudaMemcpyAsync(b.p + i * sz, a.p + i * sz, sz, cudaMemcpyDeviceToDevice, s2));
    for (size_t i = 0; i < n; i++)
        CK(cudaMemcpyAsync(out.p + i * sz, b.p + i * sz, sz, cudaMemcpyDeviceToHost, s2));
    CK(cudaStreamSynchronize(s2));
    int bad = same("event", "read on the waiting stream", out.p, src.p, tot);
    report("event", fnv(FNV0, out.p, tot));
    CK(cudaEventDestroy(ev));
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    return bad;
}

// Copies on a blocking stream, then a copy on the legacy stream, which waits for
// them (cudaMemcpy in a legacy build; in a per-thread build cudaMemcpy goes to
// the per-thread stream, which does not wait for other blocking streams, so the
// copy names cudaStreamLegacy).  Then copies on stream 0 itself (legacy, or the
// per-thread stream in a --default-stream per-thread build), read back.
static int sc_legacy()
{
    const size_t n = 64, sz = 4 * KiB, tot = n * sz;
    uint64_t rng = rng_for("legacy"), h = FNV0;
    int bad = 0;
    cudaStream_t s;
    CK(cudaStreamCreate(&s));  // blocking
    Pinned src(tot), out(tot);
    Dev a(tot);
    fill_random(src.p, tot, rng);
    for (size_t i = 0; i < n; i++)
        CK(cudaMemcpyAsync(a.p + i * sz, src.p + i * sz, sz, cudaMemcpyHostToDevice, s));
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
    CK(cudaMemcpyAsync(out.p, a.p, tot, cudaMemcpyDeviceToHost, cudaStreamLegacy));
    CK(cudaStreamSynchronize(cudaStreamLegacy));
#else
    CK(cudaMemcpy(out.p, a.p, tot, cudaMemcpyDeviceToHost));
#endif
    bad |= same("legacy", "legacy-stream copy after side-stream copies", out.p, src.p, tot);
    h = fnv(h, out.p, tot);
    fill_random(src.p, tot, rng);
    for (size_t i = 0; i < n; i++)
        CK(cudaMemcpyAsync(a.p + i * sz, src.p + i * sz, sz, cudaMemcpyHostToDevice, 0));
    for (size_t i = 0; i < n; i++)
        CK(cudaMemcpyAsync(out.p + i * sz, a.p + i * sz, sz, cudaMemcpyDeviceToHost, 0));
    CK(cudaStreamSynchronize(0));
    bad |= same("legacy", "copies on stream 0", out.p, src.p, tot);
    h = fnv(h, out.p, tot);
    CK(cudaStreamDestroy(s));
    report("legacy", h);
    return bad;
}

// cudaStreamPerThread copies queued by one thread, which then waits without
// syncing; another thread's cudaDeviceSynchronize must make them visible.
static int sc_ptds()
{
    const size_t n = 64, sz = 4 * KiB, tot = n * sz;
    uint64_t rng = rng_for("ptds");
    Pinned src(tot), out(tot);
    Dev a(tot), b(tot);
    fill_random(src.p, tot, rng);
    std::mutex mu;
    std::condition_variable cv;
    int stage = 0;
    std::thread producer([&] {
        for (size_t i = 0; i < n; i++)
            CK(cudaMemcpyAsync(a.p + i * sz, src.p + i * sz, sz, cudaMemcpyHostToDevice,
                               cudaStreamPerThread));
        for (size_t i = 0; i < n; i++)
            CK(cudaMemcpyAsync(b.p + i * sz, a.p + i * sz, sz, cudaMemcpyDeviceToDevice,
                               cudaStreamPerThread));
        for (size_t i = 0; i < n; i++)
            CK(cudaMemcpyAsync(out.p + i * sz, b.p + i * sz, sz, cudaMemcpyDefault,
                               cudaStreamPerThread));
        std::unique_lock<std::mutex> lk(mu);
        stage = 1;
        cv.notify_all();
        cv.wait(lk, [&] { return stage == 2; });
    });
    {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] { return stage == 1; });
    }
    CK(cudaDeviceSynchronize());
    int bad = same("ptds", "other thread's cudaDeviceSynchronize", out.p, src.p, tot);
    report("ptds", fnv(FNV0, out.p, tot));
    {
        std::lock_guard<std::mutex> lk(mu);
        stage = 2;
    }
    cv.notify_all();
    producer.join();
    CK(cudaDeviceSynchronize());
    return bad;
}

// Blocks copied in, a kernel on the same stream sums each block, sums copied out.
static int sc_kernel()
{
    const size_t sizes[] = {4 * KiB, 16 * KiB, 32 * KiB};
    uint64_t rng = rng_for("kernel"), h = FNV0;
    int bad = 0;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (size_t sz : sizes) {
        const size_t n = 128, tot = n * sz;
        Pinned src(tot), sums(n * 4);
        Dev a(tot), dsums(n * 4);
        for (int round = 0; round < 3; round++) {
            fill_random(src.p, tot, rng);
            for (size_t i = 0; i < n; i++)
                CK(cudaMemcpyAsync(a.p + i * sz, src.p + i * sz, sz, cudaMemcpyHostToDevice, s));
            block_sums<<<(unsigned)n, 256, 0, s>>>(reinterpret_cast<const uint32_t *>(a.p), sz / 4,
                                                  reinterpret_cast<uint32_t *>(dsums.p));
            CK(cudaGetLastError());
            for (size_t i = 0; i < n; i++)
                CK(cudaMemcpyAsync(sums.p + 4 * i, dsums.p + 4 * i, 4, cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            std::vector<uint32_t> want(n);
            for (size_t i = 0; i < n; i++)
                want[i] = host_sum(src.p + i * sz, sz / 4);
            bad |= same("kernel", "block sums", sums.p, want.data(), n * 4);
            h = fnv(h, sums.p, n * 4);
            // Next round rewrites the source right after the sync: the copies of
            // this round must have read it already.
        }
    }
    CK(cudaStreamDestroy(s));
    report("kernel", h);
    return bad;
}

static int sc_runs_kinds() { return sc_runs("runs", false); }
static int sc_runs_default() { return sc_runs("default", true); }

static const struct {
    const char *name;
    int (*fn)();
} scenarios[] = {
    {"runs", sc_runs_kinds}, {"default", sc_runs_default}, {"chain", sc_chain},
    {"event", sc_event},     {"legacy", sc_legacy},        {"ptds", sc_ptds},
    {"kernel", sc_kernel},
};

int main(int argc, char **argv)
{
    const size_t nsc = sizeof scenarios / sizeof *scenarios;
    if (argc > 1 && std::strcmp(argv[1], "list") == 0) {
        for (auto &s : scenarios)
            std::puts(s.name);
        return 0;
    }
    for (int a = 1; a < argc; a++) {
        size_t i = 0;
        while (i < nsc && std::strcmp(argv[a], scenarios[i].name) != 0)
            i++;
        if (i == nsc) {
            std::fprintf(stderr, "rt_copies: unknown scenario '%s'\n", argv[a]);
            return 1;
        }
    }
    if (access("/dev/nvidiactl", F_OK) != 0) {
        std::fprintf(stderr, "rt_copies: no /dev/nvidiactl: no GPU, skipped\n");
        return 77;
    }
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
#ifdef CB_EXPECT_CUDART
        // The device node is there: a newer runtime that finds no device is
        // what is being tested (minor-version compatibility), not a skip.
        std::fprintf(stderr, "rt_copies: cudaGetDeviceCount: %s, %d devices, with cudart %d\n",
                     cudaGetErrorName(e), ndev, (int)CB_EXPECT_CUDART);
        return 1;
#else
        std::fprintf(stderr, "rt_copies: cudaGetDeviceCount: %s, %d devices: skipped\n",
                     cudaGetErrorName(e), ndev);
        return 77;
#endif
    }
    const char *seed = std::getenv("CB_TEST_SEED");
    g_seed = seed && *seed ? std::strtoull(seed, nullptr, 0)
                           : (uint64_t)std::time(nullptr) * 1000003u ^ (uint64_t)getpid();
    int rt_version = 0, drv_version = 0;
    CK(cudaRuntimeGetVersion(&rt_version));
    CK(cudaDriverGetVersion(&drv_version));
    std::printf("rt_copies: seed %llu, cudart %d (headers) %d (running), driver %d, %s\n",
                (unsigned long long)g_seed, CUDART_VERSION, rt_version, drv_version, kBuild);
#ifdef CB_EXPECT_CUDART
    // Built against another runtime than the toolkit's (build-gpu-tests.sh,
    // CB_CUDART13X): that runtime, not one found elsewhere, must be running.
    if (rt_version != CB_EXPECT_CUDART) {
        std::fprintf(stderr, "rt_copies: the running cudart is %d, not the %d this was linked against\n",
                     rt_version, (int)CB_EXPECT_CUDART);
        return 1;
    }
#endif
    CK(cudaSetDevice(0));

    int failed = 0;
    for (auto &sc : scenarios) {
        bool wanted = argc == 1;
        for (int a = 1; a < argc; a++)
            wanted |= std::strcmp(argv[a], sc.name) == 0;
        if (!wanted)
            continue;
        int bad = sc.fn();
        std::printf("%-10s %s\n", sc.name, bad ? "FAIL" : "ok");
        std::fflush(stdout);
        failed |= bad;
    }
    CK(cudaDeviceSynchronize());
    return failed ? 1 : 0;
}
