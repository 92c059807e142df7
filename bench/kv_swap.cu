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
//   kv_swap [-s STEPS] [-w WARMUP] [CASE...]    CASE = in|out:COUNT:SIZE (SIZE
//   in bytes or with K); default: in and out x {64, 160} x {8K, 16K, 32K}
//
// Output: CSV lines "mode,dir,count,size,reps,median_us,p10_us,p90_us,extra"
// with mode kv_in / kv_out, median_us the copy phase and extra the median wall
// time of a step in µs.  Exit: 0 done, 1 error or wrong bytes, 77 no GPU.
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

// count distinct ids out of kPoolBlocks.
static void pick(std::vector<uint32_t> &perm, size_t count, uint32_t *out)
{
    for (size_t j = 0; j < count; j++) {
        size_t k = j + next_rand() % (perm.size() - j);
        std::swap(perm[j], perm[k]);
        out[j] = perm[j];
    }
}

struct Case {
    bool in;
    size_t count, size;
};

static double pct(std::vector<double> v, double q)
{
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, (size_t)(q * v.size()))];
}

static int run_case(const Case &c, int steps, int warm)
{
    const size_t bs = c.size, pool = kPoolBlocks * bs, words = bs / 4;
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
    std::vector<uint32_t> gperm(kPoolBlocks), cperm(kPoolBlocks), cid(c.count);
    for (size_t i = 0; i < kPoolBlocks; i++)
        gperm[i] = cperm[i] = (uint32_t)i;
    std::vector<double> copy_us, wall_us;
    int bad = 0;
    for (int step = -warm; step < steps && !bad; step++) {
        pick(gperm, c.count, ids_h);
        pick(cperm, c.count, cid.data());
        auto t0 = std::chrono::steady_clock::now();
        CK(cudaEventRecord(e0, s));
        for (size_t j = 0; j < c.count; j++) {
            unsigned char *g = dev + (size_t)ids_h[j] * bs, *h = cpu + (size_t)cid[j] * bs;
            if (c.in)
                CK(cudaMemcpyAsync(g, h, bs, cudaMemcpyHostToDevice, s));
            else
                CK(cudaMemcpyAsync(h, g, bs, cudaMemcpyDeviceToHost, s));
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
    if (!bad)
        std::printf("kv_%s,%s,%zu,%zu,%d,%.2f,%.2f,%.2f,%.2f\n", c.in ? "in" : "out",
                    c.in ? "h2d" : "d2h", c.count, bs, steps, pct(copy_us, 0.5),
                    pct(copy_us, 0.1), pct(copy_us, 0.9), pct(wall_us, 0.5));
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
    return true;
}

int main(int argc, char **argv)
{
    int steps = 50, warm = 5;
    std::vector<Case> cases;
    for (int a = 1; a < argc; a++) {
        if (!std::strcmp(argv[a], "-s") && a + 1 < argc) {
            steps = std::atoi(argv[++a]);
        } else if (!std::strcmp(argv[a], "-w") && a + 1 < argc) {
            warm = std::atoi(argv[++a]);
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
                    cases.push_back({in, n, sz});
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
    g_rng ^= (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
    std::printf("mode,dir,count,size,reps,median_us,p10_us,p90_us,extra\n");
    int bad = 0;
    for (const Case &c : cases)
        bad |= run_case(c, steps, warm);
    return bad;
}
