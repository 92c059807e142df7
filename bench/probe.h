// probe.h - what bench/prio_probe.cu and bench/stage_probe.cu share: their load,
// bf16 N x N x N cuBLAS products on a non-blocking stream of their own between
// two events, then a host spin so that they hold the GPU before the copies
// start; their command line; and the check of the copied blocks.
#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// The probes' command line: --copies --bytes --rounds --n --gemms, each over
// the default the caller put in.
struct probe_args {
    int copies;
    size_t bytes;
    int rounds, n, gemms;
};

static void probe_parse(int argc, char **argv, probe_args *a)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--copies")) a->copies = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--bytes")) a->bytes = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds")) a->rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--n")) a->n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--gemms")) a->gemms = atoi(argv[i + 1]);
    }
}

static double now_us()
{
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct products {
    const char *prog; // the program's name, for its error messages
    int n;
    cudaStream_t stream;
    __nv_bfloat16 *a, *b, *c;
    cublasHandle_t blas;
    cudaEvent_t g0, g1;
};

// A runtime call that failed ends the program, naming it, the call and the line.
static void probe_check(const char *prog, cudaError_t e, const char *what, int line)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s: %s: %s (line %d)\n", prog, what, cudaGetErrorString(e), line);
        exit(1);
    }
}
#define PRODUCTS_CK(p, x) probe_check((p)->prog, (x), #x, __LINE__)

static void products_init(products *p, const char *prog, int n)
{
    p->prog = prog;
    p->n = n;
    size_t bytes = sizeof(*p->a) * n * n;
    PRODUCTS_CK(p, cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking));
    PRODUCTS_CK(p, cudaMalloc(&p->a, bytes));
    PRODUCTS_CK(p, cudaMalloc(&p->b, bytes));
    PRODUCTS_CK(p, cudaMalloc(&p->c, bytes));
    PRODUCTS_CK(p, cudaMemset(p->a, 0, bytes));
    PRODUCTS_CK(p, cudaMemset(p->b, 0, bytes));
    if (cublasCreate(&p->blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(p->blas, p->stream) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "%s: cublas\n", prog);
        exit(1);
    }
    PRODUCTS_CK(p, cudaEventCreate(&p->g0));
    PRODUCTS_CK(p, cudaEventCreate(&p->g1));
}

// gemms products between the two events, then spin_us of the host's time.
static void products_launch(products *p, int gemms, double spin_us)
{
    const float one = 1, zero = 0;
    const int n = p->n;
    PRODUCTS_CK(p, cudaEventRecord(p->g0, p->stream));
    for (int g = 0; g < gemms; g++)
        if (cublasGemmEx(p->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, p->a, CUDA_R_16BF, n, p->b, CUDA_R_16BF, n, &zero,
                         p->c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "%s: gemm\n", p->prog);
            exit(1);
        }
    PRODUCTS_CK(p, cudaEventRecord(p->g1, p->stream));
    double s0 = now_us();
    while (now_us() - s0 < spin_us) { }
}

// A configuration's round begins: the device is idle, the copies' target
// buffer (dev, size bytes) cleared, the products launched and given the GPU;
// returns the host's time then (us), from which the copies are timed.
static double products_round(products *p, char *dev, size_t size, int gemms, double spin_us)
{
    PRODUCTS_CK(p, cudaDeviceSynchronize());
    PRODUCTS_CK(p, cudaMemset(dev, 0, size));
    PRODUCTS_CK(p, cudaDeviceSynchronize());
    products_launch(p, gemms, spin_us);
    return now_us();
}

// The products' own time (us), once they are done.
static double products_us(products *p)
{
    float ms;
    PRODUCTS_CK(p, cudaEventElapsedTime(&ms, p->g0, p->g1));
    return ms * 1000.0;
}

// Block i of the device buffer (blocks of `bytes`) ends in the byte i & 0xff, as
// the probes fill their sources; a quarter of the blocks are read back.  Exits
// naming the configuration on a wrong one.
static void probe_check_blocks(const products *p, const char *config, const char *dev, int copies, size_t bytes)
{
    for (int i = 0; i < copies; i += copies / 4 + 1) {
        unsigned char x;
        PRODUCTS_CK(p, cudaMemcpy(&x, dev + i * bytes + bytes - 1, 1, cudaMemcpyDeviceToHost));
        if (x != (unsigned char)(i & 0xff)) {
            fprintf(stderr, "%s: %s: copy %d wrong\n", p->prog, config, i);
            exit(1);
        }
    }
}
