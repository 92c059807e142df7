/* copy_kernel.h: the descriptor block of cubatch's copy kernel.
 *
 * Usable from C11 and from CUDA C++.  The whole run travels as ONE kernel
 * parameter passed by value (`const __grid_constant__ struct cb_kparams p`):
 * nothing is copied to the device before the launch, and the launch call
 * carries the descriptors.
 *
 * Limits.  Kernel parameters may total 32,764 bytes on sm_70+ with CUDA 12.1+
 * drivers (4,096 before); cubatch needs CUDA 13 anyway.  CB_KPARAMS_MAX = 1360
 * descriptors make 32,648 bytes (1364 would still fit: 32,744; 1360 is the size
 * that was measured).  A run of more copies goes out as several launches.
 *
 * Tiers.  The driver copies the kernel's declared parameter size on every
 * launch, whatever `count` says.  For short runs the fatbin also holds kernels
 * whose parameter is a PREFIX of struct cb_kparams (same header, same
 * descriptor array, fewer slots): fill one struct cb_kparams, pass its address
 * in kernelParams[0] to any tier whose capacity is >= count; the driver reads
 * only that tier's CB_KPARAMS_BYTES(capacity) bytes.  CB_KTIERS below is the
 * one list of tiers (the kernels of copy_kernel.cu, the engine's table, the
 * simulated driver's and its tests), smallest first: each row gives a tier's
 * capacity (the descriptors its parameter holds; the last holds all of struct
 * cb_kparams, CB_KPARAMS_MAX) and its entry point, named by that capacity
 * (cubatch_copy_kernel_<capacity>; the last plain cubatch_copy_kernel).  One
 * tier fits the 4,096 parameter bytes of older drivers (asserted below).
 *
 * Semantics.  Each descriptor copies `bytes` bytes from `src` to `dst`; both
 * are device-visible addresses (device memory, or pinned host memory through
 * its device mapping: with UVA the host address itself for cuMemAllocHost
 * memory).  Any alignment, any size (0 is a no-op).  Copies of one launch run
 * in no defined order and concurrently: no copy may overlap another copy's
 * destination, and a copy's source and destination must not overlap (memcpy
 * rules; cubatch's hazard check already guarantees this within a run).
 * Sources are read with streaming loads and must not change while the kernel
 * runs.  `flags` is reserved: pass 0.
 *
 * 2D copies.  Only the tiers' twins named <entry point>_rows take them (a
 * plain entry point given one would read its flags as a length).  A copy of
 * rows (cuMemcpy2DAsync's pointer-to-pointer case) takes two consecutive
 * descriptors: {dst, src, width | CB_KROWS}, then {dst pitch,
 * src pitch, height | CB_KROWS_TAIL}.  Row r copies `width` bytes from
 * src + r * src pitch to dst + r * dst pitch.  `count` counts both; the second
 * is never a copy of its own (a block given it does nothing).  No row may
 * overlap another copy's destination, nor a row of its own (width <= each
 * pitch).
 *
 * Launch: 1-D blocks (blockDim.y = blockDim.z = 1), any block size (a multiple
 * of 32 recommended, 256 the default), no dynamic shared memory, any grid.
 * Block b copies descriptors b, b + gridDim.x, ...; when gridDim.x > count,
 * copies of more than CB_KSPLIT_MIN bytes are split into pieces (at 16-byte
 * boundaries of the destination) so that the extra blocks share them.
 */
#ifndef CUBATCH_COPY_KERNEL_H
#define CUBATCH_COPY_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#define CB_KPARAMS_LIMIT 32764u /* bytes: kernel parameter limit, CUDA 12.1+ drivers */
#define CB_KPARAMS_MAX 1360u    /* descriptors in struct cb_kparams: the last tier */
#define CB_KSPLIT_MIN 4096u     /* a piece of a split copy is at least this long */
#define CB_KBLOCK_DEFAULT 256u  /* threads per block the library launches with */

/* The tiers, smallest first, the last of CB_KPARAMS_MAX descriptors:
 *   T(capacity, entry point) */
#define CB_KTIERS(T)                                                                        \
    T(40, cubatch_copy_kernel_40) T(168, cubatch_copy_kernel_168) T(680, cubatch_copy_kernel_680) \
    T(1360, cubatch_copy_kernel)
/* For tables: {"entry point", capacity}, one per tier; ... and its twin that
 * also takes 2D copies (below), {"<entry point>_rows", capacity}. */
#define CB_KTIER_ROW(cap, name) {#name, cap##u},
#define CB_KTIER_ROWS_ROW(cap, name) {#name "_rows", cap##u},

/* Parameter bytes of a tier of capacity n. */
#define CB_KPARAMS_BYTES(n) (8u + 24u * (unsigned)(n))

/* Flags in cb_kcopy.bytes (a length never reaches 2^62). */
#define CB_KROWS (1ull << 63)      /* a 2D copy's first descriptor: bytes holds the width */
#define CB_KROWS_TAIL (1ull << 62) /* its second: {dst pitch, src pitch, height} */
#define CB_KLEN_MASK (CB_KROWS_TAIL - 1)

struct cb_kcopy {
    uint64_t dst;   /* device address of the destination */
    uint64_t src;   /* device address of the source */
    uint64_t bytes; /* length; 0 copies nothing */
};

struct cb_kparams {
    uint32_t count; /* descriptors used, <= the capacity of the tier launched */
    uint32_t flags; /* reserved, 0 */
    struct cb_kcopy c[CB_KPARAMS_MAX];
};

#ifdef __cplusplus
#define CB_KSTATIC_ASSERT(e, m) static_assert(e, m)
#else
#define CB_KSTATIC_ASSERT(e, m) _Static_assert(e, m)
#endif

CB_KSTATIC_ASSERT(sizeof(struct cb_kcopy) == 24, "cb_kcopy is three 64-bit words");
CB_KSTATIC_ASSERT(offsetof(struct cb_kcopy, dst) == 0, "cb_kcopy.dst at 0");
CB_KSTATIC_ASSERT(offsetof(struct cb_kcopy, src) == 8, "cb_kcopy.src at 8");
CB_KSTATIC_ASSERT(offsetof(struct cb_kcopy, bytes) == 16, "cb_kcopy.bytes at 16");
CB_KSTATIC_ASSERT(offsetof(struct cb_kparams, count) == 0, "cb_kparams.count at 0");
CB_KSTATIC_ASSERT(offsetof(struct cb_kparams, flags) == 4, "cb_kparams.flags at 4");
CB_KSTATIC_ASSERT(offsetof(struct cb_kparams, c) == 8, "descriptors start at 8");
CB_KSTATIC_ASSERT(sizeof(struct cb_kparams) == CB_KPARAMS_BYTES(CB_KPARAMS_MAX),
                  "no padding in cb_kparams");
CB_KSTATIC_ASSERT(sizeof(struct cb_kparams) <= CB_KPARAMS_LIMIT,
                  "cb_kparams must fit the 32,764-byte kernel parameter limit");
CB_KSTATIC_ASSERT(sizeof(struct cb_kparams) == 32648, "1360 descriptors: 32,648 bytes");
#define CB_KTIER_FITS_OLD(cap, name) || CB_KPARAMS_BYTES(cap) <= 4096u
/* The blocks of a launch of `slots` descriptors on a device of `sms`
 * multiprocessors: one a descriptor, at most one an SM.  Block b takes
 * descriptors b, b + grid, b + 2 grid, ... (copy_kernel.cu).  A 2D copy's
 * second descriptor is work for no block, so a launch holding 2D copies
 * (rows != 0) gets an odd grid: a block's descriptors then alternate between
 * even and odd slots, where with an even grid every block of odd index would
 * find only second descriptors in a run of 2D copies, and half the grid idle. */
static inline unsigned cb_kgrid(size_t slots, unsigned sms, int rows)
{
    unsigned grid = slots < sms ? (unsigned)slots : sms;
    if (rows && grid > 1 && grid % 2 == 0)
        grid--;
    return grid;
}

CB_KSTATIC_ASSERT(0 CB_KTIERS(CB_KTIER_FITS_OLD), "a tier fits the 4,096 bytes of older drivers");
#undef CB_KTIER_FITS_OLD
/* Every tier fits the limit, and none holds more than struct cb_kparams (the
 * order of the list, and its last tier being CB_KPARAMS_MAX, are checked by
 * tests/sim/check_sim.c, which walks the list). */
#define CB_KTIER_FITS(cap, name)                                                          \
    CB_KSTATIC_ASSERT(cap##u <= CB_KPARAMS_MAX && CB_KPARAMS_BYTES(cap) <= CB_KPARAMS_LIMIT, \
                      #name " fits the parameter limit");
CB_KTIERS(CB_KTIER_FITS)
#undef CB_KTIER_FITS

#endif /* CUBATCH_COPY_KERNEL_H */
