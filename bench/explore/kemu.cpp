/* kemu: run src/copy_kernel.cu on the CPU and check it.
 *
 * The copy kernel has no shared memory, no atomics and no barriers, and no
 * thread reads what another writes; so running every (block, thread) of a
 * launch one after the other is exactly one of its legal executions.  This
 * file defines the few CUDA names the kernel uses, includes the kernel source
 * itself, and checks, over random and exhaustive cases:
 *   - the destination bytes equal memcpy's, gaps between copies untouched;
 *   - every load lies inside the source range of some copy and is aligned to
 *     its width; every 16-byte store lies inside a destination range and is
 *     16-byte aligned (misaligned vector accesses fault on the GPU);
 *   - all grid/block shapes, splitting (grid > count), the tier entry points
 *     and their count clamp, count 0, zero-length copies.
 *
 *   g++ -std=c++17 -O2 -Wall -Wextra -Wno-unknown-pragmas -Isrc \
 *       bench/explore/kemu.cpp -o kemu && ./kemu [seed]
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <vector>

static unsigned char *g_sbase, *g_dbase; /* arenas */
static size_t g_sarena, g_darena;
static std::vector<unsigned char> g_srcmap, g_dstmap; /* 1 = inside some copy's range */
static unsigned long long g_loads, g_stores, g_bad;

static void bad(const char *what, const void *p, size_t w)
{
    if (g_bad++ < 10)
        fprintf(stderr, "kemu: %s at %p width %zu\n", what, p, w);
}

static void check_load(const void *p, size_t w)
{
    g_loads++;
    const unsigned char *c = (const unsigned char *)p;
    if ((uintptr_t)p % w)
        bad("misaligned load", p, w);
    if (c < g_sbase || c + w > g_sbase + g_sarena) {
        bad("load outside the source arena", p, w);
        return;
    }
    for (size_t i = 0; i < w; i++)
        if (!g_srcmap[(size_t)(c - g_sbase) + i]) {
            bad("load outside every source range", p, w);
            return;
        }
}

static void check_store(const void *p, size_t w)
{
    const unsigned char *c = (const unsigned char *)p;
    if (c < g_dbase || c >= g_dbase + g_darena)
        return; /* a register (local array) of the emulated thread */
    g_stores++;
    if ((uintptr_t)p % w)
        bad("misaligned store", p, w);
    if (c + w > g_dbase + g_darena) {
        bad("store past the destination arena", p, w);
        return;
    }
    for (size_t i = 0; i < w; i++)
        if (!g_dstmap[(size_t)(c - g_dbase) + i]) {
            bad("store outside every destination range", p, w);
            return;
        }
}

/* ---- the CUDA names the kernel uses ---- */
struct uint4 {
    unsigned x, y, z, w;
    uint4() = default;
    uint4(const uint4 &) = default;
    uint4 &operator=(const uint4 &o)
    {
        check_store(this, 16);
        x = o.x, y = o.y, z = o.z, w = o.w;
        return *this;
    }
};
struct dim3_ {
    unsigned x, y, z;
};
static dim3_ threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __grid_constant__
#define __maxnreg__(n)
template <class T> static inline T __ldcs(const T *p)
{
    check_load(p, sizeof(T));
    T v;
    memcpy((void *)&v, (const void *)p, sizeof(T));
    return v;
}
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned sh)
{
    return (unsigned)(((((uint64_t)hi) << 32) | lo) >> (sh & 31));
}

#include "../../src/copy_kernel.cu"

/* ---- harness ---- */
static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static uint64_t rndr(uint64_t lo, uint64_t hi) /* [lo, hi] */
{
    return lo + rnd() % (hi - lo + 1);
}

static struct cb_kparams P;

/* entry != 0: call the extern "C" entry points (the parameter is copied per
 * emulated thread, as the hardware would); otherwise the shared template by
 * reference (fast). */
static void launch(int tier, unsigned grid, unsigned block, int entry)
{
    static cb_kparams_tier<CB_KTIER_1K> q40;
    static cb_kparams_tier<CB_KTIER_4K> q168;
    static cb_kparams_tier<CB_KTIER_16K> q680;
    memcpy(&q40, &P, sizeof q40);
    memcpy(&q168, &P, sizeof q168);
    memcpy(&q680, &P, sizeof q680);
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    for (unsigned b = 0; b < grid; b++)
        for (unsigned t = 0; t < block; t++) {
            blockIdx = {b, 0, 0};
            threadIdx = {t, 0, 0};
            switch (tier) {
            case 40:
                if (entry)
                    cubatch_copy_kernel_40(q40);
                else
                    cb_copy_run<CB_KTIER_1K>(q40);
                break;
            case 168:
                if (entry)
                    cubatch_copy_kernel_168(q168);
                else
                    cb_copy_run<CB_KTIER_4K>(q168);
                break;
            case 680:
                if (entry)
                    cubatch_copy_kernel_680(q680);
                else
                    cb_copy_run<CB_KTIER_16K>(q680);
                break;
            default:
                if (entry)
                    cubatch_copy_kernel(P);
                else
                    cb_copy_run<CB_KPARAMS_MAX>(P);
            }
        }
}

struct cp {
    size_t so, doff, n;
};

/* Lay out the copies in the arenas (given offsets), run, compare. */
static int run_case(const std::vector<cp> &cps, int tier, unsigned grid, unsigned block,
                    unsigned used_count, const char *label, int entry = 0)
{
    /* only the window the copies touch (plus guards) is reset and compared */
    size_t shi = 0, dhi = 0;
    for (const cp &c : cps) {
        shi = std::max(shi, c.so + c.n);
        dhi = std::max(dhi, c.doff + c.n);
    }
    static size_t last_swin, last_dwin; /* maps of the previous case are cleared too */
    const size_t win = std::min(g_darena, dhi + 4096), swin = std::min(g_sarena, shi + 4096);
    memset(g_dbase, 0xEE, std::max(win, last_dwin));
    std::vector<unsigned char> expect(g_dbase, g_dbase + win);
    memset(g_srcmap.data(), 0, std::max(swin, last_swin));
    memset(g_dstmap.data(), 0, std::max(win, last_dwin));
    last_swin = swin;
    last_dwin = win;
    P.count = used_count;
    P.flags = 0;
    unsigned cap = tier ? (unsigned)tier : CB_KPARAMS_MAX;
    for (size_t i = 0; i < cps.size(); i++) {
        P.c[i].dst = (uint64_t)(uintptr_t)(g_dbase + cps[i].doff);
        P.c[i].src = (uint64_t)(uintptr_t)(g_sbase + cps[i].so);
        P.c[i].bytes = cps[i].n;
        if (i < used_count && i < cap) { /* the kernel copies only these */
            memcpy(&expect[cps[i].doff], g_sbase + cps[i].so, cps[i].n);
            memset(&g_srcmap[cps[i].so], 1, cps[i].n);
            memset(&g_dstmap[cps[i].doff], 1, cps[i].n);
        }
    }
    unsigned long long bad0 = g_bad;
    launch(tier, grid, block, entry);
    if (memcmp(expect.data(), g_dbase, win) != 0) {
        size_t k = 0;
        while (expect[k] == g_dbase[k])
            k++;
        fprintf(stderr,
                "kemu: WRONG BYTES (%s) tier %d grid %u block %u count %u: first at arena "
                "offset %zu (got %02x want %02x)\n",
                label, tier, grid, block, used_count, k, g_dbase[k], expect[k]);
        for (size_t i = 0; i < cps.size() && i < 8; i++)
            fprintf(stderr, "  copy %zu: src+%zu dst+%zu n=%zu\n", i, cps[i].so, cps[i].doff,
                    cps[i].n);
        return 1;
    }
    if (g_bad != bad0) {
        fprintf(stderr, "kemu: bad access (%s) tier %d grid %u block %u\n", label, tier, grid,
                block);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rng = strtoull(argv[1], NULL, 0) | 1;
    g_sarena = g_darena = 6u << 20;
    /* aligned_alloc(4096): arena offsets then fix the alignment classes */
    g_sbase = (unsigned char *)aligned_alloc(4096, g_sarena);
    g_dbase = (unsigned char *)aligned_alloc(4096, g_darena);
    g_srcmap.resize(g_sarena);
    g_dstmap.resize(g_darena);
    for (size_t i = 0; i < g_sarena; i++)
        g_sbase[i] = (unsigned char)(rnd() >> 32);
    int fails = 0;
    unsigned long long cases = 0;

    /* 1. exhaustive small: every (src mod 16, dst mod 16) x length 0..80 and a
     *    few longer lengths, one copy, several block shapes. */
    const unsigned blocks[] = {1, 7, 32, 33, 128, 256};
    const size_t lens[] = {0,   1,   2,   3,   4,   5,   7,   8,   9,   11,  12,  13,  15,
                           16,  17,  19,  20,  23,  24,  31,  32,  33,  47,  48,  49,  63,
                           64,  65,  80,  127, 128, 129, 255, 256, 257, 1000, 4095, 4096, 4097,
                           8191, 16384 + 13};
    for (unsigned so = 0; so < 16; so++)
        for (unsigned dof = 0; dof < 16; dof++)
            for (size_t n : lens)
                for (unsigned bl : blocks) {
                    if (n > 4096 && bl < 32)
                        continue;
                    std::vector<cp> v{{4096 + so, 4096 + dof, n}};
                    fails += run_case(v, 0, 1, bl, 1, "exhaustive");
                    cases++;
                }
    /* 2. splitting: one or a few long copies, grid much larger than count. */
    for (int r = 0; r < 60; r++) {
        unsigned k = (unsigned)rndr(1, 5);
        std::vector<cp> v;
        size_t so = rndr(0, 63), dof = rndr(0, 63);
        for (unsigned i = 0; i < k; i++) {
            size_t n = rndr(0, 3) == 0 ? rndr(0, 5000) : rndr(4096, 300000);
            v.push_back({so, dof, n});
            so += n + rndr(1, 100);
            dof += n + rndr(1, 100);
        }
        unsigned grid = (unsigned)rndr(1, 70);
        unsigned bl = (unsigned)(rndr(0, 1) ? 32 * rndr(1, 8) : rndr(1, 300));
        fails += run_case(v, 0, grid, bl, k, "split");
        cases++;
    }
    /* 3. random runs: many copies, mixed sizes and alignments, destinations in
     *    shuffled order; every tier; counts above the tier (clamped). */
    const int tiers[] = {0, 40, 168, 680};
    for (int r = 0; r < 400; r++) {
        unsigned k = (unsigned)(rndr(0, 9) == 0 ? rndr(0, 3) : rndr(1, 200));
        int tier = tiers[rndr(0, 3)];
        std::vector<size_t> ns(k);
        size_t tot = 0;
        for (auto &n : ns) {
            unsigned c = (unsigned)rndr(0, 9);
            n = c < 3 ? rndr(0, 40) : c < 7 ? rndr(0, 5000) : c < 9 ? 4096 * rndr(1, 4) : rndr(0, 40000);
            if (tot + n + 128 > g_sarena / 2)
                n = 0;
            tot += n + 128;
        }
        bool aligned = rndr(0, 1);
        std::vector<cp> v(k);
        size_t so = rndr(0, 15);
        for (unsigned i = 0; i < k; i++) {
            v[i].so = so;
            v[i].n = ns[i];
            so += ns[i] + (aligned ? 16 * rndr(1, 4) : rndr(1, 64));
            if (aligned)
                so = (so + 15) & ~(size_t)15;
        }
        std::vector<unsigned> perm(k);
        for (unsigned i = 0; i < k; i++)
            perm[i] = i;
        for (unsigned i = k; i > 1; i--)
            std::swap(perm[i - 1], perm[rndr(0, i - 1)]);
        size_t dof = aligned ? 0 : rndr(0, 15);
        for (unsigned i = 0; i < k; i++) {
            cp &c = v[perm[i]];
            c.doff = dof;
            dof += c.n + (aligned ? 16 * rndr(1, 4) : rndr(1, 64));
            if (aligned)
                dof = (dof + 15) & ~(size_t)15;
        }
        unsigned grid = (unsigned)(rndr(0, 2) == 0 ? rndr(1, 8) : rndr(1, 3 * k + 3));
        unsigned bl = (unsigned)(rndr(0, 3) ? 32 * rndr(1, 8) : rndr(1, 200));
        unsigned used = k;
        if (rndr(0, 4) == 0 && k)
            used = (unsigned)rndr(0, k); /* the kernel must ignore the rest */
        fails += run_case(v, tier, grid, bl, used, "random");
        cases++;
    }
    /* 4. a full 1360-descriptor run and an over-count (clamped to 1360). */
    {
        std::vector<cp> v(CB_KPARAMS_MAX);
        for (unsigned i = 0; i < CB_KPARAMS_MAX; i++)
            v[i] = {(size_t)i * 1100 + (i % 7), (size_t)(CB_KPARAMS_MAX - 1 - i) * 1100 + (i % 5),
                    (size_t)(1000 + i % 90)};
        fails += run_case(v, 0, 132, 128, CB_KPARAMS_MAX, "full");
        fails += run_case(v, 0, 2000, 64, CB_KPARAMS_MAX, "full-wide");
        fails += run_case(v, 0, 96, 64, 0xFFFFFFFFu, "overcount");
        fails += run_case(v, 0, 20, 32, CB_KPARAMS_MAX, "full-entry", 1);
        for (int t : {40, 168, 680}) {
            fails += run_case(v, t, 50, 32, CB_KPARAMS_MAX, "tier-entry", 1);
            fails += run_case(v, t, 700, 64, 0xFFFFFFFFu, "tier-overcount");
        }
        cases += 10;
    }
    printf("kemu: %llu cases, %llu loads and %llu vector stores checked, %d failed\n", cases,
           g_loads, g_stores, fails);
    return fails ? 1 : 0;
}
