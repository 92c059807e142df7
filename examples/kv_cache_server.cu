// kv_cache_server: a KV-cache block swap loop through the CUDA runtime, as an LLM server
// does it, checked on the GPU and on the host.
//
//   make examples-gpu && examples/kv_cache_server [-l LAYERS] [-s BYTES] [-n STEPS] [-S SEED]
//   cubatch --stats examples/kv_cache_server            (the same, with cubatch)
//
// The cache: for each of LAYERS layers a key and a value tensor, each cut into
// blocks of BYTES (default 8 layers, 16 KiB: every block of the model is 16
// copies).  GPU_SLOTS blocks live on the device, CPU_SLOTS in pinned host memory.
// Each step evicts 4-10 blocks (64-160 copies of BYTES, device to host, on one
// side stream), then swaps 4-10 other blocks in from the host into the freed
// slots (as many copies, host to device, same stream), records an event; the
// default stream waits for it and runs a kernel that checks every swapped-in
// block word by word.  At the end every block, on the device and on the host, is
// checked against the content it must have.
//
// With cubatch's default policy the device-to-host copies are batched and the
// host-to-device copies of 8 to 28 KiB pass through (the batch API is slower
// there, docs/design.md section 6); try --policy=all to batch both.
//
// Prints "kv_cache_server: correct" (exit 0) or "kv_cache_server: WRONG RESULTS ..." (exit 1);
// exit 77 when there is no GPU.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(call)                                                                     \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            std::fprintf(stderr, "kv_cache_server: %s failed: %s\n", #call,                  \
                         cudaGetErrorString(e_));                                    \
            std::exit(1);                                                            \
        }                                                                            \
    } while (0)

enum { GPU_SLOTS = 128, CPU_SLOTS = 256 };

// Content of 32-bit word w of tensor t (0 .. 2*LAYERS-1) of logical block id.
__host__ __device__ static inline uint32_t word_of(uint32_t id, uint32_t t, uint32_t w)
{
    uint32_t x = id * 0x9e3779b1u ^ t * 0x85ebca77u ^ w * 0xc2b2ae3du;
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    x *= 0x297a2d39u;
    return x ^ (x >> 15);
}

// Fill slot `slot` of every tensor with the content of block ids[slot].
__global__ void fill_slots(uint32_t *const *tensors, int ntensors, const int *ids, size_t words)
{
    int slot = blockIdx.x, t = blockIdx.y;
    if (t >= ntensors || ids[slot] < 0)
        return;
    uint32_t *p = tensors[t] + slot * words;
    for (size_t w = threadIdx.x; w < words; w += blockDim.x)
        p[w] = word_of((uint32_t)ids[slot], (uint32_t)t, (uint32_t)w);
}

// Count the words of slots[i] (i < n) of every tensor that do not hold block ids[i].
__global__ void check_slots(uint32_t *const *tensors, int ntensors, const int *slots,
                            const int *ids, int n, size_t words, unsigned long long *wrong)
{
    int i = blockIdx.x, t = blockIdx.y;
    if (i >= n || t >= ntensors)
        return;
    const uint32_t *p = tensors[t] + (size_t)slots[i] * words;
    unsigned long long bad = 0;
    for (size_t w = threadIdx.x; w < words; w += blockDim.x)
        bad += p[w] != word_of((uint32_t)ids[i], (uint32_t)t, (uint32_t)w);
    if (bad)
        atomicAdd(wrong, bad);
}

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)  // uniform enough in [0, n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33) % n;
}

// k distinct indices of v (v is shuffled in place; the first k are returned).
static std::vector<int> pick(std::vector<int> &v, int k)
{
    for (int i = 0; i < k; i++)
        std::swap(v[i], v[i + rnd((uint32_t)(v.size() - i))]);
    return std::vector<int>(v.begin(), v.begin() + k);
}

static long arg_num(const char *s, long lo, long hi, const char *what)
{
    char *end;
    long v = std::strtol(s, &end, 0);
    if (!*s || *end || v < lo || v > hi) {
        std::fprintf(stderr, "kv_cache_server: bad %s '%s' (%ld to %ld)\n", what, s, lo, hi);
        std::exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    int layers = 8, steps = 50;
    size_t bytes = 16 * 1024;
    rng_state = 12345;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "-l") && i + 1 < argc)
            layers = (int)arg_num(argv[++i], 1, 64, "layer count");
        else if (!std::strcmp(argv[i], "-s") && i + 1 < argc)
            bytes = (size_t)arg_num(argv[++i], 4, 1 << 20, "block size");
        else if (!std::strcmp(argv[i], "-n") && i + 1 < argc)
            steps = (int)arg_num(argv[++i], 1, 1000000, "step count");
        else if (!std::strcmp(argv[i], "-S") && i + 1 < argc)
            rng_state = (uint64_t)arg_num(argv[++i], 0, 0x7fffffffL, "seed");
        else {
            std::fprintf(stderr, "usage: kv_cache_server [-l LAYERS] [-s BYTES] [-n STEPS] [-S SEED]\n");
            return 2;
        }
    }
    if (bytes % 4) {
        std::fprintf(stderr, "kv_cache_server: the block size must be a multiple of 4\n");
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        std::fprintf(stderr, "kv_cache_server: no CUDA device\n");
        return 77;
    }

    const int ntensors = 2 * layers;  // key and value per layer
    const size_t words = bytes / 4;
    std::vector<uint32_t *> gpu(ntensors), cpu(ntensors);
    for (int t = 0; t < ntensors; t++) {
        CK(cudaMalloc(&gpu[t], GPU_SLOTS * bytes));
        CK(cudaHostAlloc(&cpu[t], CPU_SLOTS * bytes, cudaHostAllocDefault));
    }
    uint32_t **gpu_tensors;
    int *d_a, *d_b;
    unsigned long long *d_wrong;
    CK(cudaMalloc(&gpu_tensors, ntensors * sizeof(uint32_t *)));
    CK(cudaMemcpy(gpu_tensors, gpu.data(), ntensors * sizeof(uint32_t *), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&d_a, GPU_SLOTS * sizeof(int)));
    CK(cudaMalloc(&d_b, GPU_SLOTS * sizeof(int)));
    CK(cudaMalloc(&d_wrong, sizeof *d_wrong));
    CK(cudaMemset(d_wrong, 0, sizeof *d_wrong));

    // Which logical block each slot holds (-1: empty).  Blocks 0..127 start on the
    // device, 128..255 on the host, in the first half of the host slots.
    std::vector<int> gid(GPU_SLOTS), cid(CPU_SLOTS, -1);
    for (int g = 0; g < GPU_SLOTS; g++)
        gid[g] = g;
    for (int c = 0; c < CPU_SLOTS / 2; c++) {
        cid[c] = GPU_SLOTS + c;
        for (int t = 0; t < ntensors; t++)
            for (size_t w = 0; w < words; w++)
                cpu[t][c * words + w] = word_of((uint32_t)cid[c], (uint32_t)t, (uint32_t)w);
    }
    CK(cudaMemcpy(d_a, gid.data(), GPU_SLOTS * sizeof(int), cudaMemcpyHostToDevice));
    fill_slots<<<dim3(GPU_SLOTS, ntensors), 256>>>(gpu_tensors, ntensors, d_a, words);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    cudaStream_t side;
    cudaEvent_t swapped, t0, t1;
    CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&swapped, cudaEventDisableTiming));
    CK(cudaEventCreate(&t0));
    CK(cudaEventCreate(&t1));

    std::vector<int> gslots(GPU_SLOTS);
    for (int g = 0; g < GPU_SLOTS; g++)
        gslots[g] = g;
    std::vector<int> in_ids(GPU_SLOTS);
    long copies = 0;
    double copy_ms = 0;
    auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; s++) {
        std::vector<int> full, empty;
        for (int c = 0; c < CPU_SLOTS; c++)
            (cid[c] < 0 ? empty : full).push_back(c);
        int k = 4 + (int)rnd(7);                    // 4..10 blocks each way
        std::vector<int> victims = pick(gslots, k); // device slots evicted and refilled
        std::vector<int> dst = pick(empty, k);      // host slots receiving them
        std::vector<int> src = pick(full, k);       // host slots swapped in

        CK(cudaEventRecord(t0, side));
        for (int t = 0; t < ntensors; t++)          // swap out: device -> host
            for (int i = 0; i < k; i++)
                CK(cudaMemcpyAsync(cpu[t] + dst[i] * words, gpu[t] + victims[i] * words, bytes,
                                   cudaMemcpyDeviceToHost, side));
        for (int t = 0; t < ntensors; t++)          // swap in: host -> device, same slots
            for (int i = 0; i < k; i++)
                CK(cudaMemcpyAsync(gpu[t] + victims[i] * words, cpu[t] + src[i] * words, bytes,
                                   cudaMemcpyHostToDevice, side));
        CK(cudaEventRecord(t1, side));
        CK(cudaEventRecord(swapped, side));
        copies += 2L * k * ntensors;

        for (int i = 0; i < k; i++) {
            cid[dst[i]] = gid[victims[i]];
            in_ids[i] = cid[src[i]];
            gid[victims[i]] = cid[src[i]];
        }
        // The model's stream: wait for the swap, then read the blocks it brought in.
        CK(cudaMemcpyAsync(d_a, victims.data(), k * sizeof(int), cudaMemcpyHostToDevice, 0));
        CK(cudaMemcpyAsync(d_b, in_ids.data(), k * sizeof(int), cudaMemcpyHostToDevice, 0));
        CK(cudaStreamWaitEvent(0, swapped, 0));
        check_slots<<<dim3(k, ntensors), 256>>>(gpu_tensors, ntensors, d_a, d_b, k, words, d_wrong);
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(0));  // the host arrays above are reused next step
        for (int i = 0; i < k; i++)
            cid[src[i]] = -1;          // only now: the swap-in has read them
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, t0, t1));
        copy_ms += ms;
    }
    CK(cudaDeviceSynchronize());
    double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

    // Final check: every device slot, every occupied host slot.
    unsigned long long wrong_gpu = 0, wrong_cpu = 0;
    CK(cudaMemcpy(&wrong_gpu, d_wrong, sizeof wrong_gpu, cudaMemcpyDeviceToHost));
    unsigned long long during = wrong_gpu;
    CK(cudaMemset(d_wrong, 0, sizeof *d_wrong));
    CK(cudaMemcpy(d_a, gslots.data(), GPU_SLOTS * sizeof(int), cudaMemcpyHostToDevice));
    for (int g = 0; g < GPU_SLOTS; g++)
        in_ids[g] = gid[gslots[g]];
    CK(cudaMemcpy(d_b, in_ids.data(), GPU_SLOTS * sizeof(int), cudaMemcpyHostToDevice));
    check_slots<<<dim3(GPU_SLOTS, ntensors), 256>>>(gpu_tensors, ntensors, d_a, d_b, GPU_SLOTS, words, d_wrong);
    CK(cudaGetLastError());
    CK(cudaMemcpy(&wrong_gpu, d_wrong, sizeof wrong_gpu, cudaMemcpyDeviceToHost));
    for (int c = 0; c < CPU_SLOTS; c++)
        if (cid[c] >= 0)
            for (int t = 0; t < ntensors; t++)
                for (size_t w = 0; w < words; w++)
                    wrong_cpu += cpu[t][c * words + w] != word_of((uint32_t)cid[c], (uint32_t)t, (uint32_t)w);

    std::printf("kv_cache_server: %d steps, %d layers (K+V), %zu B blocks: %ld copies; "
                "copy time on the side stream %.1f us/step, wall %.1f ms\n",
                steps, layers, bytes, copies, 1000 * copy_ms / steps, wall_ms);
    for (int t = 0; t < ntensors; t++) {
        CK(cudaFree(gpu[t]));
        CK(cudaFreeHost(cpu[t]));
    }
    if (during || wrong_gpu || wrong_cpu) {
        std::printf("kv_cache_server: WRONG RESULTS (wrong words: %llu seen by the kernels during the run, "
                    "%llu on the device and %llu on the host at the end)\n", during, wrong_gpu, wrong_cpu);
        return 1;
    }
    std::printf("kv_cache_server: correct\n");
    return 0;
}
