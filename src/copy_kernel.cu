/* copy_kernel.cu: cubatch's copy engine, one kernel launch per run of copies.
 *
 * Built into a fatbin (SASS for every real architecture of the toolkit plus
 * PTX of the newest virtual one), embedded in the library as bytes and loaded
 * with cuModuleLoadData; launched with cuLaunchKernel(kernelParams = {&params})
 * where params is a struct cb_kparams (copy_kernel.h documents the contract).
 *
 * Work split.  Block b takes descriptors b, b + gridDim.x, ...  When the grid
 * has more blocks than there are copies, each copy of more than CB_KSPLIT_MIN
 * bytes is cut into up to gridDim.x / count pieces, cut at 16-byte boundaries
 * of the destination, one piece per block.
 *
 * Inside one copy (or piece) the threads of the block stride over it:
 *   - dst and src congruent mod 16 (the common case: allocations are 256-byte
 *     aligned, blocks and tensors multiples of 16): 16-byte loads and stores
 *     (uint4), after a head of < 16 bytes that aligns both;
 *   - any other relative offset: aligned 32-bit destination words, each built
 *     from two aligned 32-bit source words with a funnel shift (one word when
 *     congruent mod 4).  4 bytes per store instead of 16; a dedicated uint2 or
 *     uint32 path would cost the whole kernel 64 registers instead of 40;
 *   - the head and tail bytes (< 16 on each side) byte by byte, one byte per
 *     thread, in parallel.
 * Every access stays inside [src, src+bytes) and [dst, dst+bytes).
 *
 * Memory-level parallelism: each thread issues CB_KUNROLL independent loads
 * (strided by blockDim.x, so each warp-wide load is one contiguous 512-byte
 * request for uint4) before it stores them: 256 threads keep 16 KiB in flight
 * per block, which host-mapped reads over PCIe/C2C need.  Loads are streaming
 * (ld.global.cs: the data is used once); stores use the default policy since
 * the program usually reads its destination soon.
 *
 * No shared memory, no atomics, no synchronisation between threads: every
 * thread's work is independent, so the file can be run on the CPU thread after
 * thread to check every access (the exploration program did so: docs/design.md
 * section 6).
 */
#include "copy_kernel.h"

#ifndef CB_KUNROLL
#define CB_KUNROLL 4
#endif

/* ptxas needs 40-48 registers on most targets but takes 64 on sm_80 when left
 * alone; 48 fits everywhere without spills and keeps >= 5 blocks of 256
 * threads resident per SM (room beside other kernels). */
#define CB_KMAXNREG 48
/* The 2D entry points: 64 keeps them free of spills (48 spilled 120 bytes). */
#define CB_KMAXNREG_ROWS 64

namespace {

template <unsigned N> struct cb_kparams_tier {
    uint32_t count;
    uint32_t flags;
    struct cb_kcopy c[N];
};
#define CB_KTIER_SIZE(cap, name) \
    static_assert(sizeof(cb_kparams_tier<cap>) == CB_KPARAMS_BYTES(cap), #name "'s parameter has no padding");
CB_KTIERS(CB_KTIER_SIZE)
#undef CB_KTIER_SIZE
static_assert(sizeof(cb_kparams_tier<CB_KPARAMS_MAX>) == sizeof(struct cb_kparams),
              "the largest tier's parameter is struct cb_kparams");

/* Bytes [0, P) and [Q, n) of a piece, one byte per thread (fewer than 32 bytes
 * in all: the heads and tails of the vector paths). */
__device__ __forceinline__ void cb_copy_bytes(unsigned char *__restrict__ d,
                                              const unsigned char *__restrict__ s, uint64_t P,
                                              uint64_t Q, uint64_t n, unsigned tid, unsigned nt)
{
    const uint64_t total = P + (n - Q);
    for (uint64_t i = tid; i < total; i += nt) {
        const uint64_t o = i < P ? i : Q + (i - P);
        d[o] = __ldcs(s + o);
    }
}

/* nv elements of type T, both pointers aligned to sizeof(T).  Whole rounds of
 * CB_KUNROLL elements per thread first (no predicates), then one predicated
 * round for the rest. */
template <typename T>
__device__ __forceinline__ void cb_copy_vec(T *__restrict__ d, const T *__restrict__ s, uint64_t nv,
                                            unsigned tid, unsigned nt)
{
    const uint64_t span = (uint64_t)nt * (CB_KUNROLL - 1);
    uint64_t i = tid;
    if (nv > span) {
        const uint64_t lim = nv - span, step = (uint64_t)nt * CB_KUNROLL;
        for (; i < lim; i += step) {
            T r[CB_KUNROLL];
#pragma unroll
            for (int k = 0; k < CB_KUNROLL; k++)
                r[k] = __ldcs(s + i + (uint64_t)k * nt);
#pragma unroll
            for (int k = 0; k < CB_KUNROLL; k++)
                d[i + (uint64_t)k * nt] = r[k];
        }
    }
    if (i < nv) {
        T r[CB_KUNROLL];
#pragma unroll
        for (int k = 0; k < CB_KUNROLL; k++) {
            const uint64_t j = i + (uint64_t)k * nt;
            if (j < nv)
                r[k] = __ldcs(s + j);
        }
#pragma unroll
        for (int k = 0; k < CB_KUNROLL; k++) {
            const uint64_t j = i + (uint64_t)k * nt;
            if (j < nv)
                d[j] = r[k];
        }
    }
}

/* Destination words 1 .. nw-2 of a piece whose pointers are not congruent
 * mod 16: d is 4-byte aligned, a is the source rounded down to 4 bytes,
 * sh = 8 * (source & 3).  Word k = source bytes 4k..4k+3 = funnel(a[k], a[k+1])
 * (just a[k] when sh == 0: the second load is predicated off).  Words 0 and
 * nw-1 are left to cb_copy_bytes so that no load leaves the source range:
 * a[k+1] for k <= nw-2 ends at or before source byte 4*nw - 1 < bytes. */
__device__ __forceinline__ void cb_copy_funnel(uint32_t *__restrict__ d,
                                               const uint32_t *__restrict__ a, unsigned sh,
                                               uint64_t nw, unsigned tid, unsigned nt)
{
    const uint64_t end = nw - 1; /* exclusive */
    const uint64_t span = (uint64_t)nt * (CB_KUNROLL - 1);
    uint64_t i = 1 + (uint64_t)tid;
    if (end > span) {
        const uint64_t lim = end - span, step = (uint64_t)nt * CB_KUNROLL;
        for (; i < lim; i += step) {
            const uint32_t *ap = a + i;
            uint32_t lo[CB_KUNROLL], hi[CB_KUNROLL];
#pragma unroll
            for (int k = 0; k < CB_KUNROLL; k++) {
                lo[k] = __ldcs(ap + k * nt);
                hi[k] = sh ? __ldcs(ap + k * nt + 1) : 0u;
            }
            uint32_t *dp = d + i;
#pragma unroll
            for (int k = 0; k < CB_KUNROLL; k++)
                dp[k * nt] = __funnelshift_r(lo[k], hi[k], sh);
        }
    }
    for (; i < end; i += nt) /* fewer than CB_KUNROLL words left per thread */
        d[i] = __funnelshift_r(__ldcs(a + i), sh ? __ldcs(a + i + 1) : 0u, sh);
}

/* One copy, or one piece of a split copy, by the whole block. */
__device__ __forceinline__ void cb_copy_piece(uint64_t dst, uint64_t src, uint64_t n, unsigned tid,
                                              unsigned nt)
{
    if (n == 0)
        return;
    uint64_t P, Q; /* bytes [0,P) and [Q,n) go byte-wise */
    if (((dst ^ src) & 15u) == 0) {
        /* congruent mod 16: align dst (and with it src), then 16-byte vectors */
        uint64_t h = (0 - dst) & 15u;
        if (h > n)
            h = n;
        const uint64_t nv = (n - h) >> 4;
        if (nv)
            cb_copy_vec((uint4 *)(dst + h), (const uint4 *)(src + h), nv, tid, nt);
        P = h;
        Q = h + (nv << 4);
    } else {
        /* any other relative offset: aligned 32-bit destination words from
         * aligned source words (shift 0 when congruent mod 4) */
        uint64_t h = (0 - dst) & 3u;
        if (h > n)
            h = n;
        const uint64_t nw = (n - h) >> 2; /* whole destination words */
        if (nw >= 3) {
            const uint64_t s = src + h;
            cb_copy_funnel((uint32_t *)(dst + h), (const uint32_t *)(s & ~(uint64_t)3),
                           (unsigned)(s & 3u) * 8u, nw, tid, nt);
            P = h + 4;
            Q = h + 4 * (nw - 1);
        } else {
            P = h;
            Q = h;
        }
    }
    cb_copy_bytes((unsigned char *)dst, (const unsigned char *)src, P, Q, n, tid, nt);
}

/* The whole run by one block; N is the capacity of the entry point's parameter
 * (descriptors are read straight from the parameter's constant bank). */
template <unsigned N, bool ROWS, typename Params> __device__ __forceinline__ void cb_copy_run(const Params &p)
{
    const unsigned count = p.count < N ? p.count : N;
    if (count == 0)
        return;
    const unsigned tid = threadIdx.x, nt = blockDim.x, g = gridDim.x;
    const unsigned parts = g > count ? g / count : 1u; /* count * parts <= g */
    const unsigned items = count * parts;
    for (unsigned w = blockIdx.x; w < items; w += g) {
        const unsigned ci = parts == 1 ? w : w % count;
        uint64_t dst = p.c[ci].dst, src = p.c[ci].src, n = p.c[ci].bytes;
        if (ROWS && (n & CB_KROWS_TAIL))
            continue; /* the rows of the 2D copy before it: that copy's block reads them */
        /* rows [r, r_end) of `step`, each r * dp and r * sp from dst and src,
         * copied by threads t0 of nt0: a 1D copy is one row of the block */
        uint64_t r = 0, r_end = 1, step = 1, dp = 0, sp = 0;
        unsigned t0 = tid, nt0 = nt;
        if (ROWS && (n & CB_KROWS)) {
            /* a 2D copy: its parts share its rows; a warp a row when there
             * are rows enough for every warp (a tile's rows are short: one
             * block-wide row at a time would leave most threads idle) */
            const uint64_t h = ci + 1 < count ? p.c[ci + 1].bytes & CB_KLEN_MASK : 0;
            const unsigned pe = parts > 1 ? (h < parts ? (unsigned)h : parts) : 1u, part = w / count;
            if (part >= pe)
                continue;
            n &= CB_KLEN_MASK;
            dp = p.c[ci + 1].dst;
            sp = p.c[ci + 1].src;
            r = h * part / pe;
            r_end = h * (part + 1) / pe;
            const unsigned warps = nt / 32u;
            if ((nt & 31u) == 0 && warps > 1 && r_end - r >= warps) {
                r += tid / 32u;
                step = warps;
                t0 = tid & 31u;
                nt0 = 32u;
            }
        } else if (parts > 1) {
            const unsigned part = w / count;
            const uint64_t useful = (n + CB_KSPLIT_MIN - 1) / CB_KSPLIT_MIN; /* a shift */
            const unsigned pe = useful < parts ? (unsigned)useful : parts;
            if (part >= pe)
                continue;
            if (pe > 1) {
                const uint64_t chunk = (n + pe - 1) / pe;
                uint64_t b0 = 0, b1 = n;
                if (part > 0) {
                    b0 = ((dst + part * chunk + 15) & ~(uint64_t)15) - dst;
                    if (b0 > n)
                        b0 = n;
                }
                if (part + 1 < pe) {
                    b1 = ((dst + (part + 1) * chunk + 15) & ~(uint64_t)15) - dst;
                    if (b1 > n)
                        b1 = n;
                }
                dst += b0;
                src += b0;
                n = b1 - b0;
            }
        }
        for (; r < r_end; r += step)
            cb_copy_piece(dst + r * dp, src + r * sp, n, t0, nt0);
    }
}

} // namespace

/* One entry point per tier: its parameter is the first `cap` descriptors of
 * struct cb_kparams (the host fills one struct cb_kparams for any tier).  Its
 * twin <name>_rows also takes 2D copies: the rows' loop costs registers that
 * the 1D entry point, which most runs use, keeps for itself. */
#define CB_KTIER_KERNEL(cap, name)                                                                             \
    extern "C" __global__ void __maxnreg__(CB_KMAXNREG) name(const __grid_constant__ cb_kparams_tier<cap> p)    \
    {                                                                                                          \
        cb_copy_run<cap, false>(p);                                                                            \
    }                                                                                                          \
    extern "C" __global__ void __maxnreg__(CB_KMAXNREG_ROWS)                                                   \
        name##_rows(const __grid_constant__ cb_kparams_tier<cap> p)                                            \
    {                                                                                                          \
        cb_copy_run<cap, true>(p);                                                                             \
    }
CB_KTIERS(CB_KTIER_KERNEL)
#undef CB_KTIER_KERNEL
