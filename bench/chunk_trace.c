/* chunk_trace.c - where the time of a contiguous run of small host-to-device
 * copies goes (rule 18's open question: the chunks of a merged run).
 *
 *   chunk_trace [-n COPIES] [-s BYTES] [-r ROUNDS] [-c NS] [-S SCHED]... [-T]
 *
 * Each round, in rotating order, times one 4 MiB-style copy of n x s bytes
 * (the reference), then every schedule -S: the program's copy calls emulated
 * without cubatch.  A schedule is a comma list of chunk lengths in copies, the
 * last one repeated ("0": the rest), e.g. "1,32,128,512,0" (cubatch's kernel
 * schedule with its first copy passed through) or "256".  Between two chunk
 * calls the thread spends c ns per copy of the chunk (-c: what cubatch costs a
 * deferred copy on the program's thread), writing a 64-byte record per copy as
 * a queue would, then issues the chunk as one cuMemcpyHtoDAsync.  Each chunk
 * call is timed, so a call's host cost beside a busy copy engine shows.
 * -T: also time the program's own loop of n copies of s bytes, each call
 * alone (run it under cubatch: the calls that flush stand out).
 * Prints, per schedule, the median over rounds of the reference's time over the
 * schedule's (the fraction of one copy's bandwidth), its range, the median
 * total, and the median host cost of each chunk call. */
#define _GNU_SOURCE
#define BENCH_NAME "chunk_trace"
#include "bench_cu.h"

#include <stdint.h>
#include <string.h>

#define MAX_SCHED 12
#define MAX_CHUNKS 4096

static double now_ns(void) { return now_us() * 1e3; }

struct sched {
    const char *text;
    unsigned len[32];
    int nlen;
    double *ratio, *total;
    double *call_ns; /* the first 8 chunk calls' host times, 8 x rounds */
    int nchunks;
};

static void parse(struct sched *s, const char *text)
{
    s->text = text;
    s->nlen = 0;
    const char *p = text;
    while (*p && s->nlen < 32) {
        s->len[s->nlen++] = (unsigned)strtoul(p, (char **)&p, 10);
        if (*p == ',')
            p++;
    }
}

static volatile uint64_t sink;

/* the emulated deferral of k copies: a 64-byte record each, then the clock */
static void defer(unsigned char *queue, unsigned first, unsigned k, double c_ns)
{
    double until = now_ns() + c_ns * k;
    for (unsigned i = first; i < first + k; i++)
        memset(queue + (size_t)i * 64, (int)i, 64);
    while (now_ns() < until)
        sink++;
}

static double run_sched(struct sched *s, CUstream st, CUdeviceptr d, const unsigned char *h, unsigned char *queue,
                        unsigned n, size_t size, double c_ns, double *calls, int *ncalls)
{
    double t0 = now_ns();
    unsigned done = 0;
    int j = 0;
    while (done < n) {
        unsigned k = s->len[j < s->nlen ? j : s->nlen - 1];
        if (k == 0 || k > n - done)
            k = n - done;
        defer(queue, done, k, c_ns);
        double a = now_ns();
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)done * size, h + (size_t)done * size, (size_t)k * size, st));
        if (j < MAX_CHUNKS)
            calls[j] = now_ns() - a;
        done += k;
        j++;
    }
    CK(cuStreamSynchronize(st));
    *ncalls = j;
    return now_ns() - t0;
}

int main(int argc, char **argv)
{
    unsigned n = 1024, rounds = 9;
    size_t size = 4096;
    double c_ns = 50;
    int trace = 0;
    struct sched sch[MAX_SCHED];
    int ns = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-T")) {
            trace = 1;
            continue;
        }
        if (i + 1 >= argc)
            goto usage;
        const char *v = argv[++i];
        if (!strcmp(argv[i - 1], "-n"))
            n = (unsigned)atoi(v);
        else if (!strcmp(argv[i - 1], "-s"))
            size = (size_t)atol(v);
        else if (!strcmp(argv[i - 1], "-r"))
            rounds = (unsigned)atoi(v);
        else if (!strcmp(argv[i - 1], "-c"))
            c_ns = atof(v);
        else if (!strcmp(argv[i - 1], "-S") && ns < MAX_SCHED)
            parse(&sch[ns++], v);
        else
            goto usage;
    }
    if (n < 2 || rounds < 1 || size == 0)
        goto usage;
    CUdevice dev;
    CUstream st;
    CK(cuInit(0));
    bench_primary(0, &dev);
    CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    void *hv;
    CUdeviceptr d;
    CK(cuMemAllocHost_v2(&hv, (size_t)n * size));
    CK(cuMemAlloc_v2(&d, (size_t)n * size));
    unsigned char *h = hv, *queue = calloc(n, 64);
    memset(h, 7, (size_t)n * size);
    double *ref = calloc(rounds, sizeof *ref), *loop = calloc(rounds, sizeof *loop), *enq = calloc(rounds, sizeof *enq);
    double *calls = calloc(MAX_CHUNKS, sizeof *calls), *one = calloc(n, sizeof *one);
    for (int k = 0; k < ns; k++) {
        sch[k].ratio = calloc(rounds, sizeof(double));
        sch[k].total = calloc(rounds, sizeof(double));
        sch[k].call_ns = calloc((size_t)rounds * 8, sizeof(double));
    }
    char cpus[256];
    cpu_list(cpus, sizeof cpus);
    printf("# chunk_trace n=%u size=%zu c=%.0f ns rounds=%u cpus %s\n", n, size, c_ns, rounds, cpus);
    /* warm-up: every path once */
    CK(cuMemcpyHtoDAsync_v2(d, h, (size_t)n * size, st));
    CK(cuStreamSynchronize(st));
    for (int k = 0; k < ns; k++) {
        int nc;
        run_sched(&sch[k], st, d, h, queue, n, size, c_ns, calls, &nc);
    }
    for (unsigned r = 0; r < rounds; r++) {
        double a = now_ns();
        CK(cuMemcpyHtoDAsync_v2(d, h, (size_t)n * size, st));
        CK(cuStreamSynchronize(st));
        ref[r] = now_ns() - a;
        for (int q = 0; q < ns; q++) {
            struct sched *s = &sch[(q + r) % ns];
            int nc;
            double t = run_sched(s, st, d, h, queue, n, size, c_ns, calls, &nc);
            s->total[r] = t;
            s->ratio[r] = ref[r] / t;
            s->nchunks = nc;
            for (int c = 0; c < 8; c++)
                s->call_ns[(size_t)c * rounds + r] = c < nc ? calls[c] : 0;
        }
        if (trace) {
            CK(cuStreamSynchronize(st));
            double t0 = now_ns();
            for (unsigned i = 0; i < n; i++) {
                double b = now_ns();
                CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * size, h + (size_t)i * size, size, st));
                one[i] = now_ns() - b;
            }
            enq[r] = now_ns() - t0;
            CK(cuStreamSynchronize(st));
            loop[r] = now_ns() - t0;
            double sum = 0;
            printf("trace r%u ref %.1f us loop %.1f us enqueue %.1f us; calls over 400 ns:", r, ref[r] / 1e3,
                   loop[r] / 1e3, enq[r] / 1e3);
            for (unsigned i = 0; i < n; i++) {
                if (one[i] > 400) {
                    printf(" %u:%.0f", i, one[i]);
                    sum += one[i];
                }
            }
            qsort(one, n, sizeof *one, cmp_d);
            printf(" (sum %.1f us; median call %.0f ns)\n", sum / 1e3, one[n / 2]);
        }
    }
    qsort(ref, rounds, sizeof *ref, cmp_d);
    printf("reference: one copy of %zu bytes %.1f us (%.1f GB/s)\n", (size_t)n * size, ref[rounds / 2] / 1e3,
           (double)n * size / ref[rounds / 2]);
    printf("schedule,chunks,fraction,min,max,total_us,call_ns_1..8\n");
    for (int k = 0; k < ns; k++) {
        struct sched *s = &sch[k];
        qsort(s->ratio, rounds, sizeof(double), cmp_d);
        qsort(s->total, rounds, sizeof(double), cmp_d);
        printf("\"%s\",%d,%.3f,%.3f,%.3f,%.1f,", s->text, s->nchunks, s->ratio[rounds / 2], s->ratio[0],
               s->ratio[rounds - 1], s->total[rounds / 2] / 1e3);
        for (int c = 0; c < 8 && c < s->nchunks; c++) {
            qsort(s->call_ns + (size_t)c * rounds, rounds, sizeof(double), cmp_d);
            printf("%s%.0f", c ? " " : "", s->call_ns[(size_t)c * rounds + rounds / 2]);
        }
        printf("\n");
    }
    return 0;
usage:
    fprintf(stderr, "usage: chunk_trace [-n COPIES] [-s BYTES] [-r ROUNDS] [-c NS] [-S SCHED]... [-T]\n");
    return 2;
}
