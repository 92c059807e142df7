// bench_launch: a launch-bound program, no copies at all: each step launches a
// tiny kernel LAUNCHES times on one stream, then synchronizes (issue 43: what
// the preload costs a program whose time is kernel launches).  Run it as plain
// processes and under LD_PRELOAD=libcubatch.so, interleaved (bench/campaign-43.sh):
// every launch passes through cubatch's launch hook, which has nothing to
// submit, so the step's time should not move.
//
//   bench_launch [-r STEPS] [-w WARMUP] [-n LAUNCHES] [-s STREAMS] [-m MODES]
//
//   LAUNCHES  kernel launches a step (default 4096); the kernel is one block of
//             32 threads whose thread 0 adds 1 to a counter in device memory
//             (the launches of a stream run one after another: the counter,
//             read at the end, must equal the launches made: exit 1 if not)
//   STREAMS   comma list of side (a created non-blocking stream) and legacy
//             (the legacy default stream, <<<...>>> without a stream);
//             default side,legacy
//   MODES     comma list (default step,enqueue):
//     step     LAUNCHES launches, then cudaStreamSynchronize: the step's time
//     enqueue  the launches alone (the synchronize after the timed part): the
//              host cost of a launch call
//   STEPS     timed steps (default 15) after WARMUP (3)
// Output: '#' comments (device, cubatch's state, CPUs), then CSV
//   mode,stream,launches,reps,median_us,p10_us,p90_us,extra
// median_us: a step (step) or the launch calls (enqueue); extra: ns per launch
// (the median divided by LAUNCHES).  Exit: 0 done, 1 error or a wrong count,
// 2 usage, 77 no GPU.
#include <cuda_runtime.h>

#include <dlfcn.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(call)                                                                               \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            std::fprintf(stderr, "bench_launch:%d: %s failed: %s\n", __LINE__, #call,          \
                         cudaGetErrorString(e_));                                              \
            std::exit(1);                                                                      \
        }                                                                                      \
    } while (0)

__global__ void tick(unsigned long long *counter)
{
    if (threadIdx.x == 0)
        *counter += 1;
}

static double now_us()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static std::vector<std::string> split(const char *v)
{
    std::vector<std::string> out;
    std::string s(v);
    size_t p = 0;
    while (true) {
        size_t e = s.find(',', p);
        out.push_back(s.substr(p, e == std::string::npos ? std::string::npos : e - p));
        if (e == std::string::npos)
            break;
        p = e + 1;
    }
    return out;
}

static std::string cpu_list()
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return "?";
    std::string out;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set) || (c > 0 && CPU_ISSET(c - 1, &set)))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
            e++;
        if (!out.empty())
            out += ",";
        out += std::to_string(c);
        if (e > c)
            out += "-" + std::to_string(e);
    }
    return out;
}

int main(int argc, char **argv)
{
    int steps = 15, warm = 3;
    long launches = 4096;
    std::vector<std::string> streams{"side", "legacy"}, modes{"step", "enqueue"};
    for (int a = 1; a < argc; a++) {
        const char *o = argv[a];
        if (a + 1 >= argc) {
            std::fprintf(stderr, "bench_launch: %s needs a value\n", o);
            return 2;
        }
        const char *v = argv[++a];
        if (!std::strcmp(o, "-r")) steps = std::atoi(v);
        else if (!std::strcmp(o, "-w")) warm = std::atoi(v);
        else if (!std::strcmp(o, "-n")) launches = std::atol(v);
        else if (!std::strcmp(o, "-s")) streams = split(v);
        else if (!std::strcmp(o, "-m")) modes = split(v);
        else {
            std::fprintf(stderr, "usage: bench_launch [-r STEPS] [-w WARMUP] [-n LAUNCHES] "
                                 "[-s side,legacy] [-m step,enqueue]\n");
            return 2;
        }
    }
    for (auto &s : streams)
        if (s != "side" && s != "legacy") {
            std::fprintf(stderr, "bench_launch: unknown stream '%s' (side, legacy)\n", s.c_str());
            return 2;
        }
    for (auto &m : modes)
        if (m != "step" && m != "enqueue") {
            std::fprintf(stderr, "bench_launch: unknown mode '%s' (step, enqueue)\n", m.c_str());
            return 2;
        }
    if (steps < 1 || warm < 0 || launches < 1) {
        std::fprintf(stderr, "bench_launch: -r, -n must be at least 1, -w at least 0\n");
        return 2;
    }
    if (access("/dev/nvidiactl", F_OK) != 0) {
        std::fprintf(stderr, "bench_launch: no GPU (/dev/nvidiactl missing), skipped\n");
        return 77;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        std::fprintf(stderr, "bench_launch: no usable GPU, skipped\n");
        return 77;
    }
    CK(cudaSetDevice(0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int drv = 0;
    CK(cudaDriverGetVersion(&drv));
    auto cb_enabled = (int (*)())dlsym(RTLD_DEFAULT, "cubatch_batching_enabled");
    std::printf("# device %s, driver %d, cubatch %s, cpus %s\n", prop.name, drv,
                cb_enabled ? (cb_enabled() ? "loaded, batching" : "loaded, pass-through") : "not loaded",
                cpu_list().c_str());
    std::printf("mode,stream,launches,reps,median_us,p10_us,p90_us,extra\n");
    std::fflush(stdout);

    unsigned long long *counter;
    CK(cudaMalloc(&counter, sizeof *counter));
    CK(cudaMemset(counter, 0, sizeof *counter));
    CK(cudaDeviceSynchronize());
    cudaStream_t side;
    CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    unsigned long long made = 0;
    std::vector<double> t((size_t)steps);
    for (auto &sn : streams) {
        cudaStream_t s = sn == "side" ? side : (cudaStream_t)0;
        for (auto &m : modes) {
            bool enq = m == "enqueue";
            for (int r = -warm; r < steps; r++) {
                CK(cudaStreamSynchronize(s));
                double t0 = now_us(), t1;
                for (long i = 0; i < launches; i++) {
                    if (sn == "side")
                        tick<<<1, 32, 0, s>>>(counter);
                    else
                        tick<<<1, 32>>>(counter);
                }
                made += (unsigned long long)launches;
                if (enq) {
                    t1 = now_us();
                    CK(cudaStreamSynchronize(s));
                } else {
                    CK(cudaStreamSynchronize(s));
                    t1 = now_us();
                }
                if (r >= 0)
                    t[(size_t)r] = t1 - t0;
            }
            CK(cudaGetLastError());
            std::vector<double> v = t;
            std::sort(v.begin(), v.end());
            size_t n = v.size();
            double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
            std::printf("%s,%s,%ld,%d,%.2f,%.2f,%.2f,%.1f\n", m.c_str(), sn.c_str(), launches, steps, med,
                        v[n / 10], v[std::min(n - 1, n * 9 / 10)], med * 1e3 / (double)launches);
            std::fflush(stdout);
        }
    }
    CK(cudaDeviceSynchronize());
    unsigned long long got = 0;
    CK(cudaMemcpy(&got, counter, sizeof got, cudaMemcpyDeviceToHost));
    if (got != made) {
        std::fprintf(stderr, "bench_launch: the kernels counted %llu launches, %llu were made\n", got, made);
        return 1;
    }
    std::printf("# launches checked: %llu made, %llu counted\n", made, got);
    CK(cudaStreamDestroy(side));
    CK(cudaFree(counter));
    return 0;
}
