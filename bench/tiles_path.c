/* tiles_path.c - 256 tiles of 32 rows x 256 B copied with cuMemCpy2DAsync,
 * tile by tile, between one pitched region of device memory (16 tiles a row,
 * the pitch 16 x 256 B, from cuMemAlloc: no cuMemAllocPitch needed) and pinned
 * host memory of the same layout, then a synchronize; ROUNDS times.  On a GPU,
 * or on tests/sim's simulated driver, where bench/instructions.sh counts what a
 * deferred tile costs cubatch (its "tile" column).
 *
 *   tiles_path [--rounds N] [--down]
 * --down: device to host (default host to device).  Prints the median over
 * rounds of ns per tile (the loop and its synchronize). */
#define _GNU_SOURCE
#define BENCH_NAME "tiles_path"
#include "bench_cu.h"

#include <string.h>

enum { TILES = 256, COLS = 16, W = 256, H = 32, MAX_ROUNDS = 1000 };

int main(int argc, char **argv)
{
    int rounds = 5, down = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--down"))
            down = 1;
        else {
            fprintf(stderr, "usage: tiles_path [--rounds N] [--down]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "tiles_path: ROUNDS 1..%d\n", MAX_ROUNDS);
        return 2;
    }
    CUdevice dev;
    CUstream s;
    CK(cuInit(0));
    bench_primary(0, &dev);
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t pitch = (size_t)W * COLS, bytes = pitch * H * (TILES / COLS);
    CUdeviceptr d;
    void *h;
    CK(cuMemAlloc(&d, bytes));
    CK(cuMemHostAlloc(&h, bytes, 0));
    memset(h, 1, bytes);
    double ns[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        double t0 = now_us();
        for (int t = 0; t < TILES; t++) {
            CUDA_MEMCPY2D c;
            memset(&c, 0, sizeof c);
            c.srcXInBytes = c.dstXInBytes = (size_t)(t % COLS) * W;
            c.srcY = c.dstY = (size_t)(t / COLS) * H;
            c.srcPitch = c.dstPitch = pitch;
            c.WidthInBytes = W;
            c.Height = H;
            if (down) {
                c.srcMemoryType = CU_MEMORYTYPE_DEVICE, c.srcDevice = d;
                c.dstMemoryType = CU_MEMORYTYPE_HOST, c.dstHost = h;
            } else {
                c.srcMemoryType = CU_MEMORYTYPE_HOST, c.srcHost = h;
                c.dstMemoryType = CU_MEMORYTYPE_DEVICE, c.dstDevice = d;
            }
            CK(cuMemcpy2DAsync(&c, s));
        }
        CK(cuStreamSynchronize(s));
        ns[r] = (now_us() - t0) * 1e3 / TILES;
    }
    qsort(ns, (size_t)rounds, sizeof ns[0], cmp_d);
    char cpus[128];
    cpu_list(cpus, sizeof cpus);
    printf("tiles_path: %s, %d rounds, %.1f ns a tile (median), %.1f (min), cpus %s\n", down ? "d2h" : "h2d", rounds,
           ns[rounds / 2], ns[0], cpus);
    return 0;
}
