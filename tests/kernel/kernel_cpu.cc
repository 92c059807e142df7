// kernel_cpu.cc - cubatch's copy kernel (src/copy_kernel.cu) run on the CPU,
// block after block and thread after thread, against random runs of 1D and
// 2D descriptors (copy_kernel.h): every destination byte right, every other
// byte untouched, every access inside its copy (built with AddressSanitizer
// and UBSan by check_kernel_cpu.sh); and that the grid the library launches
// for 2D copies gives every block its share of them.  The kernel's threads share nothing and
// never synchronize, so running them one after another executes exactly what
// each does on a GPU; what this cannot see is the hardware: a GPU run proves
// that (bench/campaign-rows.sh).
//
//   kernel_cpu [TRIALS]      exit 0: every trial right
#include "kernel_cpu_shim.h"
#include "copy_kernel.cu"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

static uint64_t rs = 88172645463325252ull;
static uint64_t rnd() { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static size_t rn(size_t n) { return (size_t)(rnd() % n); }

/* The grid the library launches (cb_kgrid) for runs of n 2D copies, on
 * devices of several SM counts: as many blocks take a 2D copy as can (one
 * each while the copies are fewer than the blocks), and none takes more than
 * its share, rounded up (block b takes slots b, b + grid, ..., as cb_copy_run
 * does).  Returns the runs that fail. */
static long check_grid(void)
{
    static const unsigned sms[] = {132, 144, 78, 16, 7, 2, 1};
    long bad = 0;
    for (unsigned s : sms)
        for (unsigned n = 1; 2 * n <= CB_KPARAMS_MAX; n++) {
            const unsigned slots = 2 * n, grid = cb_kgrid(slots, s, 1);
            unsigned busy = 0, most = 0; /* blocks given a first descriptor; the most one is given */
            for (unsigned b = 0; b < grid; b++) {
                unsigned firsts = 0;
                for (unsigned w = b; w < slots; w += grid)
                    firsts += w % 2 == 0;
                busy += firsts > 0;
                most = std::max(most, firsts);
            }
            const unsigned can = std::min(n, grid); /* blocks that can have one */
            if (grid == 0 || busy != can || most != (n + can - 1) / can) {
                if (++bad <= 5)
                    printf("grid: %u 2D copies on %u SMs: %u blocks, %u of them busy, one with %u\n", n, s, grid,
                           busy, most);
            }
        }
    return bad;
}

int main(int argc, char **argv)
{
    const long trials = argc > 1 ? atol(argv[1]) : 1500;
    const long bad_grids = check_grid();
    printf("kernel_cpu: grids of 2D runs: %ld unbalanced\n", bad_grids);
    const size_t SZ = 1 << 20;
    std::vector<unsigned char> src(SZ), dst(SZ), want(SZ), used(SZ);
    static cb_kparams kp;
    long wrong = 0;
    for (long t = 0; t < trials; t++) {
        for (size_t i = 0; i < SZ; i++)
            src[i] = (unsigned char)rnd(), dst[i] = 0xEE;
        want = dst;
        std::fill(used.begin(), used.end(), 0);
        unsigned slots = 0;
        const unsigned cap = 40, ncopies = 1 + (unsigned)rn(12);
        for (unsigned c = 0; c < ncopies && slots + 2 <= cap; c++) {
            const bool two_d = rn(2);
            size_t w, h = 1, dp = 0, sp = 0;
            if (two_d) { /* rows of any width (some empty), alignment and pitch */
                w = rn(4) == 0 ? rn(16) : 1 + rn(700);
                h = 1 + rn(40);
                dp = w + rn(300);
                sp = w + rn(300);
            } else { /* short copies, and long ones the grid may split */
                w = rn(5) == 0 ? 4096 + rn(20000) : rn(900);
            }
            const size_t dspan = (h - 1) * dp + w, sspan = (h - 1) * sp + w;
            const size_t d0 = rn(SZ - dspan - 1), s0 = rn(SZ - sspan - 1);
            bool clash = false; /* no destination byte of two copies (the kernel's contract) */
            for (size_t r = 0; r < h && !clash; r++)
                for (size_t b = 0; b < w && !clash; b++)
                    clash = used[d0 + r * dp + b];
            if (clash)
                continue;
            for (size_t r = 0; r < h; r++)
                for (size_t b = 0; b < w; b++) {
                    used[d0 + r * dp + b] = 1;
                    want[d0 + r * dp + b] = src[s0 + r * sp + b];
                }
            const uint64_t D = (uint64_t)(uintptr_t)&dst[d0], S = (uint64_t)(uintptr_t)&src[s0];
            if (two_d) {
                kp.c[slots++] = {D, S, w | CB_KROWS};
                kp.c[slots++] = {dp, sp, h | CB_KROWS_TAIL};
            } else {
                kp.c[slots++] = {D, S, w};
            }
        }
        kp.count = slots;
        kp.flags = 0;
        /* grids of fewer and of more blocks than descriptors (split copies,
         * shared rows), blocks of whole warps and of odd sizes */
        const unsigned blocks = 1 + (unsigned)rn(140), threads = rn(4) ? 32 * (1 + (unsigned)rn(8)) : 1 + (unsigned)rn(300);
        blockDim = {threads, 1, 1};
        gridDim = {blocks, 1, 1};
        const cb_kparams_tier<40> &p = *reinterpret_cast<const cb_kparams_tier<40> *>(&kp);
        for (unsigned b = 0; b < blocks; b++)
            for (unsigned th = 0; th < threads; th++) {
                blockIdx = {b, 0, 0};
                threadIdx = {th, 0, 0};
                cubatch_copy_kernel_40_rows(p);
            }
        if (memcmp(dst.data(), want.data(), SZ) != 0 && ++wrong <= 5)
            printf("trial %ld: wrong bytes (%u descriptors, %u blocks of %u threads)\n", t, slots, blocks, threads);
    }
    printf("kernel_cpu: %ld trials, %ld wrong\n", trials, wrong);
    return wrong != 0 || bad_grids != 0;
}
