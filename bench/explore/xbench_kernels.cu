/* xbench_kernels.cu: the compute load of xbench's interference section.
 *
 * cb_burn: eight independent FMA chains per thread, `iters` steps, no memory
 * traffic; at 512 threads and <= 32 registers, four blocks fill an SM's 2048
 * thread slots.  The result is stored only if it equals an impossible value,
 * so the chains are not optimised away.  Built into its own fatbin
 * (xbench_kernels.fatbin) and loaded, like the copy kernel, through
 * cuModuleLoadData.
 */
extern "C" __global__ void __launch_bounds__(512, 4) cb_burn(float *out, unsigned iters)
{
    float a[8];
#pragma unroll
    for (int k = 0; k < 8; k++)
        a[k] = (float)(threadIdx.x + k) * 1e-6f;
    for (unsigned i = 0; i < iters; i++) {
#pragma unroll
        for (int k = 0; k < 8; k++)
            a[k] = fmaf(a[k], 0.9999999f, 1e-7f);
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 8; k++)
        s += a[k];
    if (s == -12345.f)
        out[blockIdx.x] = s;
}
