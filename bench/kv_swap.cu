// kv_swap: the shape of KV-cache block swapping in LLM serving, through the CUDA
// runtime.  Each step moves COUNT blocks of SIZE bytes between a pinned CPU pool
// and a GPU pool (random, distinct block ids) on one side stream:
//   in   COUNT cudaMemcpyAsync H2D, then a kernel that reads every swapped-in
//        block (per-block checksum, checked on the host)
//   out  COUNT cudaMemcpyAsync D2H (checked against a host mirror of the pool)
// The copy phase is timed with events recorded on the stream right before the
// first copy and right after the last; the step's wall time (host clock,
// through the sync) is reported too.
//
//   kv_swap [-s STEPS] [-w WARMUP] [-R RUNS] [-m MODES] [-a API] [-S SEED] [CASE...]
//   CASE = in|out:COUNT:SIZE (SIZE in bytes or with K); default: in and out x
//   {64, 160} x {8K, 16K, 32K}
//
//   -R RUNS   comma list of run lengths, each N or "all" (default 1): the block
//             ids of a step are drawn in runs of that many adjacent blocks, on
//             both sides (GPU pool and CPU pool, independently placed, runs
//             never overlapping), as a sequence's blocks lie once allocated
//             together; 1 is the old behaviour (random distinct ids), all is
//             one run of COUNT blocks.  Every case runs once per run length.
//   -m MODES  comma list (default loop):
//     loop    one copy per block (what serving code issues: under LD_PRELOAD of
//             libcubatch.so, what cubatch rewrites)
//     merged  the same blocks, one copy per maximal run of blocks adjacent on
//             both sides (merged by hand: the ideal of a library that merges)
//     batch   one hand-written cuMemcpyBatchAsync of the per-block copies
//             (CUDA 13, cuGetProcAddress version 13000, srcAccessOrder STREAM)
//   -a API    the per-block and merged copies: runtime (cudaMemcpyAsync, the
//             default) or driver (cuMemcpyHtoDAsync / cuMemcpyDtoHAsync)
//   -S SEED   the block ids' random generator (default: from the clock)
//
// Output: CSV lines "mode,dir,count,size,reps,median_us,p10_us,p90_us,extra"
// with mode kv_in / kv_out (loop), kv_in_merged, kv_in_batch, ...; median_us the
// copy phase and extra the median wall time of a step in µs.  With -R, -m or -a
// given, two more columns: run (the run length) and api (runtime or driver),
// and a comment line before each case's rows says how many copies merged mode
// issued per step (median).  Exit: 0 done, 1 error or wrong bytes, 2 usage,
// 77 no GPU.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <unistd.h>

#define CK(call)                                                                               \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            std::fprintf(stderr, "kv_swap:%d: %s failed: %s\n", __LINE__, #call,               \
                         cudaGetErrorString(e_));                                              \
            std::exit(1);                                                                      \
        }                                                                                      \
    } while (0)

static const size_t kPoolBlocks = 4096;

typedef CUresult(CUDAAPI *batch_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
                                    CUmemcpyAttributes *, size_t *, size_t, CUstream);
static batch_fn g_batch;
static bool g_driver;   // -a driver
static bool g_newfmt;   // -R, -m or -a given: the run and api columns

#define CKD(call)                                                                              \
    do {                                                                                       \
        CUresult r_ = (call);                                                                  \
        if (r_ != CUDA_SUCCESS) {                                                              \
            const char *n_ = nullptr;                                                          \
            cuGetErrorName(r_, &n_);                                                           \
            std::fprintf(stderr, "kv_swap:%d: %s failed: %s\n", __LINE__, #call,               \
                         n_ ? n_ : "?");                                                       \
            std::exit(1);                                                                      \
        }                                                                                      \
    } while (0)

enum Mode { LOOP, MERGED, BATCH };
static const char *const kModeSuffix[] = {"", "_merged", "_batch"};

__global__ void block_sums(const uint32_t *pool, const uint32_t *ids, size_t words,
                           uint32_t *sums)
{
    __shared__ uint32_t part[256];
    const uint32_t *blk = pool + (size_t)ids[blockIdx.x] * words;
    uint32_t acc = 0;
    for (size_t i = threadIdx.x; i < words; i += blockDim.x)
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

static uint64_t g_rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next_rand()
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

// count distinct ids out of kPoolBlocks, in runs of `run` adjacent ids: perm
// holds the kPoolBlocks / run slots of that many blocks; ceil(count / run)
// distinct slots are drawn, each gives its run (the last one may be shorter).
static void pick(std::vector<uint32_t> &perm, size_t count, size_t run, uint32_t *out)
{
    size_t nruns = (count + run - 1) / run;
    for (size_t j = 0; j < nruns; j++) {
        size_t k = j + next_rand() % (perm.size() - j);
        std::swap(perm[j], perm[k]);
        for (size_t b = 0; b < run && j * run + b < count; b++)
            out[j * run + b] = perm[j] * (uint32_t)run + (uint32_t)b;
    }
}

struct Case {
    bool in;
    size_t count, size;
    size_t run;  // 0: all
};

static void copy1(void *dst, const void *src, size_t n, bool in, cudaStream_t s)
{
    if (!g_driver)
        CK(cudaMemcpyAsync(dst, src, n, in ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s));
    else if (in)
        CKD(cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst, src, n, (CUstream)s));
    else
        CKD(cuMemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, n, (CUstream)s));
}

static double pct(std::vector<double> v, double q)
{
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, (size_t)(q * v.size()))];
}

static int run_case(const Case &c, Mode mode, int steps, int warm)
{
    const size_t bs = c.size, pool = kPoolBlocks * bs, words = bs / 4;
    const size_t run = c.run ? c.run : c.count;
    unsigned char *cpu, *dev;
    uint32_t *ids_h, *ids_d, *sums_h, *sums_d;
    CK(cudaMallocHost(&cpu, pool));
    CK(cudaMalloc(&dev, pool));
    CK(cudaMallocHost(&ids_h, c.count * 4));
    CK(cudaMalloc(&ids_d, c.count * 4));
    CK(cudaMallocHost(&sums_h, c.count * 4));
    CK(cudaMalloc(&sums_d, c.count * 4));
    std::vector<unsigned char> mirror(pool);  // what the GPU pool holds
    for (size_t i = 0; i + 8 <= pool; i += 8) {
        uint64_t v = next_rand();
        std::memcpy(&mirror[i], &v, 8);
        v = next_rand();
        std::memcpy(cpu + i, &v, 8);
    }
    CK(cudaMemcpy(dev, mirror.data(), pool, cudaMemcpyHostToDevice));

    cudaStream_t s;
    cudaEvent_t e0, e1;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<uint32_t> gperm(kPoolBlocks / run), cperm(kPoolBlocks / run), cid(c.count);
    for (size_t i = 0; i < kPoolBlocks / run; i++)
        gperm[i] = cperm[i] = (uint32_t)i;
    std::vector<CUdeviceptr> bsrc(c.count), bdst(c.count);
    std::vector<size_t> bsize(c.count, bs);
    std::vector<double> copy_us, wall_us, ncopies;
    int bad = 0;
    for (int step = -warm; step < steps && !bad; step++) {
        pick(gperm, c.count, run, ids_h);
        pick(cperm, c.count, run, cid.data());
        size_t issued = 0;
        if (mode == BATCH)  // filled each step, as a program would (untimed: the
            for (size_t j = 0; j < c.count; j++) {  // loop's ids are drawn untimed too)
                CUdeviceptr g = (CUdeviceptr)(uintptr_t)(dev + (size_t)ids_h[j] * bs);
                CUdeviceptr h = (CUdeviceptr)(uintptr_t)(cpu + (size_t)cid[j] * bs);
                bsrc[j] = c.in ? h : g;
                bdst[j] = c.in ? g : h;
            }
        auto t0 = std::chrono::steady_clock::now();
        CK(cudaEventRecord(e0, s));
        if (mode == BATCH) {
            CUmemcpyAttributes attr;
            std::memset(&attr, 0, sizeof attr);
            attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
            attr.srcLocHint.type = c.in ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
            attr.dstLocHint.type = c.in ? CU_MEM_LOCATION_TYPE_DEVICE : CU_MEM_LOCATION_TYPE_HOST;
            size_t idx0 = 0;
            CKD(g_batch(bdst.data(), bsrc.data(), bsize.data(), c.count, &attr, &idx0, 1, (CUstream)s));
            issued = 1;
        } else {
            for (size_t j = 0; j < c.count;) {
                size_t n = 1;
                if (mode == MERGED)
                    while (j + n < c.count && ids_h[j + n] == ids_h[j] + n && cid[j + n] == cid[j] + n)
                        n++;
                unsigned char *g = dev + (size_t)ids_h[j] * bs, *h = cpu + (size_t)cid[j] * bs;
                if (c.in)
                    copy1(g, h, n * bs, true, s);
                else
                    copy1(h, g, n * bs, false, s);
                j += n;
                issued++;
            }
        }
        CK(cudaEventRecord(e1, s));
        if (c.in) {
            CK(cudaMemcpyAsync(ids_d, ids_h, c.count * 4, cudaMemcpyHostToDevice, s));
            block_sums<<<(unsigned)c.count, 256, 0, s>>>(reinterpret_cast<const uint32_t *>(dev),
                                                        ids_d, words, sums_d);
            CK(cudaGetLastError());
            CK(cudaMemcpyAsync(sums_h, sums_d, c.count * 4, cudaMemcpyDeviceToHost, s));
        }
        CK(cudaStreamSynchronize(s));
        auto t1 = std::chrono::steady_clock::now();
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (step >= 0) {
            ncopies.push_back((double)issued);
            copy_us.push_back(ms * 1e3);
            wall_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        // Check, and keep the mirror in step with the GPU pool.
        for (size_t j = 0; j < c.count && !bad; j++) {
            unsigned char *m = &mirror[(size_t)ids_h[j] * bs], *h = cpu + (size_t)cid[j] * bs;
            if (c.in) {
                if (sums_h[j] != host_sum(h, words)) {
                    std::fprintf(stderr, "kv_swap: in %zu x %zu step %d: block %zu sum wrong\n",
                                 c.count, bs, step, j);
                    bad = 1;
                }
                std::memcpy(m, h, bs);
            } else if (std::memcmp(h, m, bs) != 0) {
                std::fprintf(stderr, "kv_swap: out %zu x %zu step %d: block %zu wrong\n", c.count,
                             bs, step, j);
                bad = 1;
            }
        }
    }
    if (!bad && g_newfmt && mode == MERGED)
        std::printf("# kv_%s_merged %zu x %zu run %zu: %.0f copies a step (median)\n",
                    c.in ? "in" : "out", c.count, bs, run, pct(ncopies, 0.5));
    char tail[64] = "";
    if (g_newfmt)
        std::snprintf(tail, sizeof tail, ",%zu,%s", run, mode == BATCH ? "driver" : g_driver ? "driver" : "runtime");
    if (!bad)
        std::printf("kv_%s%s,%s,%zu,%zu,%d,%.2f,%.2f,%.2f,%.2f%s\n", c.in ? "in" : "out",
                    kModeSuffix[mode], c.in ? "h2d" : "d2h", c.count, bs, steps, pct(copy_us, 0.5),
                    pct(copy_us, 0.1), pct(copy_us, 0.9), pct(wall_us, 0.5), tail);
    std::fflush(stdout);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaStreamDestroy(s));
    CK(cudaFreeHost(cpu));
    CK(cudaFree(dev));
    CK(cudaFreeHost(ids_h));
    CK(cudaFree(ids_d));
    CK(cudaFreeHost(sums_h));
    CK(cudaFree(sums_d));
    return bad;
}

static bool parse_case(const char *a, Case &c)
{
    char d[4], k = 0;
    unsigned long n, sz;
    int got = std::sscanf(a, "%3[a-z]:%lu:%lu%c", d, &n, &sz, &k);
    if (got < 3 || n == 0 || n > kPoolBlocks || (got == 4 && k != 'K' && k != 'k'))
        return false;
    if (got == 4)
        sz *= 1024;
    if (sz < 4 || sz % 4)
        return false;
    c.in = !std::strcmp(d, "in");
    if (!c.in && std::strcmp(d, "out"))
        return false;
    c.count = n;
    c.size = sz;
    c.run = 1;
    return true;
}

// "1,4,16,all" -> {1, 4, 16, 0}; false if malformed
static bool parse_runs(const char *v, std::vector<size_t> &runs)
{
    runs.clear();
    std::string list(v);
    size_t p = 0;
    while (p <= list.size()) {
        size_t e = list.find(',', p);
        std::string w = list.substr(p, e == std::string::npos ? std::string::npos : e - p);
        if (w == "all") {
            runs.push_back(0);
        } else {
            char *end = nullptr;
            unsigned long r = std::strtoul(w.c_str(), &end, 10);
            if (w.empty() || *end || r == 0 || r > kPoolBlocks)
                return false;
            runs.push_back(r);
        }
        if (e == std::string::npos)
            break;
        p = e + 1;
    }
    return !runs.empty();
}

static bool parse_modes(const char *v, std::vector<Mode> &modes)
{
    modes.clear();
    std::string list(v);
    size_t p = 0;
    while (true) {
        size_t e = list.find(',', p);
        std::string w = list.substr(p, e == std::string::npos ? std::string::npos : e - p);
        if (w == "loop") modes.push_back(LOOP);
        else if (w == "merged") modes.push_back(MERGED);
        else if (w == "batch") modes.push_back(BATCH);
        else return false;
        if (e == std::string::npos)
            break;
        p = e + 1;
    }
    return true;
}

int main(int argc, char **argv)
{
    int steps = 50, warm = 5;
    std::vector<Case> cases;
    std::vector<size_t> runs{1};
    std::vector<Mode> modes{LOOP};
    bool seeded = false;
    for (int a = 1; a < argc; a++) {
        if (!std::strcmp(argv[a], "-s") && a + 1 < argc) {
            steps = std::atoi(argv[++a]);
        } else if (!std::strcmp(argv[a], "-w") && a + 1 < argc) {
            warm = std::atoi(argv[++a]);
        } else if (!std::strcmp(argv[a], "-R") && a + 1 < argc) {
            g_newfmt = true;
            if (!parse_runs(argv[++a], runs)) {
                std::fprintf(stderr, "kv_swap: bad -R '%s' (want a list of N or all)\n", argv[a]);
                return 2;
            }
        } else if (!std::strcmp(argv[a], "-m") && a + 1 < argc) {
            g_newfmt = true;
            if (!parse_modes(argv[++a], modes)) {
                std::fprintf(stderr, "kv_swap: bad -m '%s' (want loop, merged, batch)\n", argv[a]);
                return 2;
            }
        } else if (!std::strcmp(argv[a], "-a") && a + 1 < argc) {
            g_newfmt = true;
            const char *v = argv[++a];
            if (!std::strcmp(v, "driver") || !std::strcmp(v, "runtime")) {
                g_driver = !std::strcmp(v, "driver");
            } else {
                std::fprintf(stderr, "kv_swap: bad -a '%s' (runtime or driver)\n", v);
                return 2;
            }
        } else if (!std::strcmp(argv[a], "-S") && a + 1 < argc) {
            g_rng = std::strtoull(argv[++a], nullptr, 10) * 0x9e3779b97f4a7c15ULL | 1;
            seeded = true;
        } else {
            Case c;
            if (!parse_case(argv[a], c)) {
                std::fprintf(stderr, "kv_swap: bad case '%s' (want in|out:COUNT:SIZE)\n", argv[a]);
                return 2;
            }
            cases.push_back(c);
        }
    }
    if (steps < 1 || warm < 0)
        return 2;
    if (cases.empty())
        for (bool in : {true, false})
            for (size_t n : {64, 160})
                for (size_t sz : {8192, 16384, 32768})
                    cases.push_back({in, n, sz, 1});
    if (access("/dev/nvidiactl", F_OK) != 0) {
        std::fprintf(stderr, "kv_swap: no GPU\n");
        return 77;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        std::fprintf(stderr, "kv_swap: no usable GPU\n");
        return 77;
    }
    CK(cudaSetDevice(0));
    CK(cudaFree(nullptr));  // the primary context, current for the driver calls too
    if (!seeded)
        g_rng ^= (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count() | 1;
    for (Mode m : modes)
        if (m == BATCH && !g_batch) {
            void *p = nullptr;
            CUdriverProcAddressQueryResult st;
            if (cuGetProcAddress("cuMemcpyBatchAsync", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st) ==
                    CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS)
                g_batch = (batch_fn)p;
            else
                std::printf("# cuMemcpyBatchAsync unavailable: mode batch skipped\n");
        }
    std::printf("mode,dir,count,size,reps,median_us,p10_us,p90_us,extra%s\n", g_newfmt ? ",run,api" : "");
    int bad = 0;
    for (Case c : cases)
        for (size_t r : runs) {
            c.run = r;
            size_t len = r ? r : c.count;
            if (r > c.count || (c.count + len - 1) / len > kPoolBlocks / len) {
                std::printf("# run %zu of %zu blocks: does not fit (at most %zu blocks), skipped\n", r,
                            c.count, kPoolBlocks);
                continue;
            }
            for (Mode m : modes)
                if (m != BATCH || g_batch)
                    bad |= run_case(c, m, steps, warm);
        }
    return bad;
}
