// kernel_cpu_shim.h - what src/copy_kernel.cu uses of CUDA, for a host
// compiler: the qualifiers vanish, the thread and block indices are globals
// the driver loop (kernel_cpu.cc) sets, a streaming load is a load, and the
// funnel shift is CUDA's __funnelshift_r (the shift amount taken mod 32).
#pragma once
#include <cstdint>
#include <cstring>
#define __global__
#define __device__
#define __forceinline__ inline
#define __maxnreg__(n)
#define __grid_constant__
#define __restrict__
struct cb_dim3 { unsigned x, y, z; };
static cb_dim3 threadIdx, blockIdx, blockDim, gridDim;
struct alignas(16) uint4 { unsigned x, y, z, w; };
template <typename T> static inline T __ldcs(const T *p) { return *p; }
static inline uint32_t __funnelshift_r(uint32_t lo, uint32_t hi, uint32_t sh)
{
    return (uint32_t)((((uint64_t)hi << 32) | lo) >> (sh & 31));
}
