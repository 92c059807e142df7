/* launch_hook: what cubatch's launch hook costs a launch, in one process.  Run
 * under LD_PRELOAD=libcubatch.so: cuLaunchKernel as the program finds it (the
 * preload's wrapper) and the driver's own (dlsym on libcuda.so.1's handle)
 * launch the same tiny kernel on the same stream, in alternating blocks, so
 * both see the same GPU, clocks and caches, where a process-level A/B of the
 * launch-bound program could not see a cost of a few percent (issue 43).  A
 * second block of the driver's own calls each round is the A/A column.
 *
 *   launch_hook [-r ROUNDS] [-n LAUNCHES] [-s legacy|side] [-l LIB [-l LIB2]]
 *
 * -l: not preloaded; each LIB (a libcubatch.so, at most two, at different
 * paths) is loaded with dlopen, RTLD_LOCAL (it interposes nothing), and its
 * wrapper is a column of its own beside the driver's: two builds of the hook
 * compared in one process, where their difference is a fraction of the
 * spread between two processes.
 *
 *   ROUNDS    rounds (default 15), each timing LAUNCHES launches (default
 *             4096) plus a synchronize, once per column, the columns rotating
 *   side      a created non-blocking stream (default); legacy: the NULL stream
 * The kernel (PTX, JIT-compiled at load): each of its 32 threads adds 1 to a
 * device counter, which must equal 32 times the launches made (exit 1 if not).
 * BENCH_SIM=1 runs it on tests/sim's simulated driver (its module image and
 * compute function, no count), where bench/instructions.sh counts the hook's
 * instructions.
 * Output: '#' comments, then CSV per column and measure:
 *   column,measure,launches,rounds,median_ns_per_launch,min,max,ratio_median,ratio_min,ratio_max
 * measure: enqueue (the launch calls alone) or step (the launches and their
 * synchronize); ns per launch: its time over LAUNCHES; ratio: this column's
 * time over the driver's in the same round; with two -l, lastly lib2/lib:
 * the median (min, max) of their per-round ratio.  Exit: 0 done, 1 error or a wrong count, 2 usage, 77 no GPU. */
#define _GNU_SOURCE
#define BENCH_NAME "launch_hook"
#include "bench_cu.h"

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static const char ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                          ".visible .entry tick(.param .u64 p)\n{\n"
                          "  .reg .b64 %rd<3>;\n  .reg .b32 %r<2>;\n"
                          "  ld.param.u64 %rd1, [p];\n  cvta.to.global.u64 %rd2, %rd1;\n"
                          "  atom.global.add.u32 %r1, [%rd2], 1;\n  ret;\n}\n";

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum { MAX_COLS = 4, MAX_ROUNDS = 1000 };

int main(int argc, char **argv)
{
    int rounds = 15, launches = 4096, legacy = 0, opt, nlibs = 0;
    const char *libs[2];
    while ((opt = getopt(argc, argv, "r:n:s:l:")) != -1) {
        if (opt == 'r')
            rounds = atoi(optarg);
        else if (opt == 'n')
            launches = atoi(optarg);
        else if (opt == 's' && (!strcmp(optarg, "legacy") || !strcmp(optarg, "side")))
            legacy = !strcmp(optarg, "legacy");
        else if (opt == 'l' && nlibs < 2)
            libs[nlibs++] = optarg;
        else {
            fprintf(stderr, "usage: launch_hook [-r ROUNDS] [-n LAUNCHES] [-s legacy|side] [-l LIB [-l LIB2]]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || launches < 1) {
        fprintf(stderr, "launch_hook: ROUNDS 1..%d, LAUNCHES >= 1\n", MAX_ROUNDS);
        return 2;
    }
    if (access("/dev/nvidiactl", F_OK) != 0 && !getenv("BENCH_SIM")) {
        fprintf(stderr, "launch_hook: no GPU (/dev/nvidiactl missing)\n");
        return 77;
    }
    /* cubatch answers dlsym itself (it hands out its wrappers): libc's own
     * dlsym, found by version, finds the driver's function */
    typedef void *(*dlsym_fn)(void *, const char *);
    dlsym_fn libc_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!libc_dlsym)
        libc_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | (nlibs ? RTLD_GLOBAL : RTLD_NOLOAD));
    launch_fn own = drv && libc_dlsym ? (launch_fn)libc_dlsym(drv, "cuLaunchKernel") : NULL;
    /* columns: the driver's own, each wrapper, the driver's own again (A/A) */
    const char *names[MAX_COLS] = {"driver", "found"};
    launch_fn fns[MAX_COLS] = {own, (launch_fn)dlsym(RTLD_DEFAULT, "cuLaunchKernel")};
    int cols = 2;
    for (int i = 0; i < nlibs; i++) {
        void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "launch_hook: %s\n", dlerror());
            return 1;
        }
        names[1 + i] = i ? "lib2" : "lib";
        fns[1 + i] = libc_dlsym ? (launch_fn)libc_dlsym(h, "cuLaunchKernel") : NULL;
        cols = 2 + i;
    }
    names[cols] = "driver2";
    fns[cols++] = own;
    for (int c = 0; c < cols; c++)
        if (!fns[c]) {
            fprintf(stderr, "launch_hook: cuLaunchKernel not found (%s)\n", names[c]);
            return 1;
        }
    launch_fn found = fns[1];
    CUdevice dev;
    CUmodule mod;
    CUfunction fn;
    CUstream s = NULL;
    CUdeviceptr counter;
    char name[256] = "";
    CK(cuInit(0));
    bench_primary(0, &dev);
    CK(cuDeviceGetName(name, sizeof name, dev));
    /* BENCH_SIM=1 on tests/sim's simulated driver (callgrind counts the hook's
     * instructions there): its module image and compute function, no count */
    static const uint32_t sim_image[4] = {0xBA55ED50u, 0, 0, 0};
    int sim = dlsym(RTLD_DEFAULT, "cusim_count") != NULL;
    CK(cuModuleLoadData(&mod, sim ? (const void *)sim_image : (const void *)ptx));
    CK(cuModuleGetFunction(&fn, mod, sim ? "cusim_compute" : "tick"));
    if (!legacy)
        CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&counter, sizeof(unsigned)));
    CK(cuMemsetD32(counter, 0, 1));
    void *args[] = {&counter};
    char cpus[128];
    cpu_list(cpus, sizeof cpus);
    printf("# device %s, cubatch %s, stream %s, hook %s, cpus %s\n", name,
           nlibs ? "loaded with dlopen" : getenv("LD_PRELOAD") ? "preloaded" : "not loaded", legacy ? "legacy" : "side",
           found == own ? "none (the driver's own)" : "cubatch's wrapper", cpus);
    for (int i = 0; i < nlibs; i++)
        printf("# %s: %s\n", names[1 + i], libs[i]);
    static double ns[2][MAX_COLS][MAX_ROUNDS]; /* [enqueue, step] */
    unsigned long made = 0;
    for (int w = 0; w < 2; w++) /* warm-up: JIT, the wrapper's first call */
        for (int c = 0; c < cols; c++) {
            for (int i = 0; i < launches; i++)
                CK(fns[c](fn, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
            made += (unsigned long)launches;
            CK(cuStreamSynchronize(s));
        }
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < cols; k++) {
            int c = (k + r) % cols;
            double t0 = now_us();
            for (int i = 0; i < launches; i++)
                CK(fns[c](fn, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
            double t1 = now_us();
            CK(cuStreamSynchronize(s));
            ns[0][c][r] = (t1 - t0) * 1e3 / launches;
            ns[1][c][r] = (now_us() - t0) * 1e3 / launches;
            made += (unsigned long)launches;
        }
    unsigned got = 0;
    CK(cuMemcpyDtoH(&got, counter, sizeof got));
    if (!sim && got != (unsigned)(made * 32)) { /* each of a launch's 32 threads adds 1 */
        fprintf(stderr, "launch_hook: the kernel's threads added %u, %lu launches of 32 made\n", got, made);
        return 1;
    }
    printf("column,measure,launches,rounds,median_ns_per_launch,min,max,ratio_median,ratio_min,ratio_max\n");
    const char *measures[2] = {"enqueue", "step"};
    for (int m = 0; m < 2; m++)
        for (int c = 1; c < cols; c++) {
            double ratio[MAX_ROUNDS], v[MAX_ROUNDS], base[MAX_ROUNDS];
            for (int r = 0; r < rounds; r++) {
                ratio[r] = ns[m][c][r] / ns[m][0][r];
                v[r] = ns[m][c][r];
                base[r] = ns[m][0][r];
            }
            if (c == 1) {
                double b = median(base, rounds);
                printf("driver,%s,%d,%d,%.1f,%.1f,%.1f,1,1,1\n", measures[m], launches, rounds, b, base[0],
                       base[rounds - 1]);
            }
            double med = median(v, rounds), rm = median(ratio, rounds);
            printf("%s,%s,%d,%d,%.1f,%.1f,%.1f,%.4f,%.4f,%.4f\n", names[c], measures[m], launches, rounds, med, v[0],
                   v[rounds - 1], rm, ratio[0], ratio[rounds - 1]);
        }
    if (nlibs == 2) { /* the two builds against each other, round by round */
        printf("# lib2/lib,measure,ratio_median,ratio_min,ratio_max\n");
        for (int m = 0; m < 2; m++) {
            double ratio[MAX_ROUNDS];
            for (int r = 0; r < rounds; r++)
                ratio[r] = ns[m][2][r] / ns[m][1][r];
            double rm = median(ratio, rounds);
            printf("lib2/lib,%s,%.4f,%.4f,%.4f\n", measures[m], rm, ratio[0], ratio[rounds - 1]);
        }
    }
    return 0;
}
