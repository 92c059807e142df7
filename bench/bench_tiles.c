/* bench_tiles: 2D tiles between pitched device memory and pinned host memory,
 * through the driver API: a loop of cuMemcpy2DAsync against one hand-written
 * cuMemcpy3DBatchAsync of the same tiles (issue 43: what batching 2D copies
 * could gain), beside the tiles cut into rows (1D copies, which cubatch batches
 * today) and one 2D copy of the whole region (the bandwidth reference).
 *
 *   bench_tiles [-r REPS] [-w WARMUP] [-m MODES] [-n TILES] [-t ROWSxBYTES] [DIR...]
 *
 *   DIR     h2d (pinned host to device) and/or d2h (default: both)
 *   TILES   number of tiles (default 256), laid out 16 to a row of tiles: the
 *           region is 16 tiles wide and ceil(TILES/16) tiles high
 *   ROWSxBYTES  one tile's shape (default 32x256: 32 rows of 256 bytes, 8 KiB)
 *   MODES   comma list (default loop2d,batch3d,rows,rowbatch,whole):
 *     loop2d    TILES cuMemcpy2DAsync (one per tile), then cuStreamSynchronize:
 *               what a program does (under LD_PRELOAD of libcubatch.so, what
 *               cubatch would batch once it takes 2D copies)
 *     batch3d   the same tiles as one cuMemcpy3DBatchAsync (CUDA 13's 4-argument
 *               form, cuGetProcAddress version 13000; CUDA_MEMCPY3D_BATCH_OP with
 *               pointer operands, rowLength = the pitch, depth 1, srcAccessOrder
 *               STREAM), operations filled inside the timed region as a program
 *               would, then cuStreamSynchronize
 *     rows      every tile as ROWS 1D copies (cuMemcpyHtoDAsync/DtoHAsync of
 *               BYTES each, TILES x ROWS calls), then cuStreamSynchronize: the
 *               1D copies cubatch batches today
 *     rowbatch  those rows as one hand-written cuMemcpyBatchAsync
 *     whole     one cuMemcpy2DAsync of the whole region (the same bytes when
 *               TILES is a multiple of 16): the reference bandwidth
 * The device buffers come from cuMemAllocPitch (the driver's pitch, printed);
 * the host buffers are pinned (cuMemHostAlloc) with a pitch of the region's
 * width plus 512 bytes, so the two sides' pitches differ.  Every mode is run
 * once on poisoned destinations first and its bytes checked: every tile equal
 * to its source, and every byte outside the tiles still poison (exit 1 if
 * not).  A mode the driver refuses (cuMemcpy3DBatchAsync missing or failing)
 * is skipped with a comment.  Times: clock_gettime(MONOTONIC) around enqueue +
 * synchronize, median (p10, p90) of REPS (default 15) after WARMUP (3), on a
 * created non-blocking stream.
 * Output: '#' comments (device, cubatch's state, CPUs, pitches), then CSV
 *   mode,stream,dir,count,size,reps,median_us,p10_us,p90_us,extra,tile
 * count = TILES, size = one tile's bytes, extra = GB/s, tile = ROWSxBYTES.
 * Exit: 0 done, 1 error or wrong bytes, 2 usage, 77 no GPU.  BENCH_SIM=1 runs it
 * without /dev/nvidiactl on whatever libcuda.so.1 LD_LIBRARY_PATH finds (a
 * stand-in, to test the program): its times mean nothing.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_NAME "bench_tiles"
#include "bench_cu.h"

typedef CUresult(CUDAAPI *batch3d_fn)(size_t, CUDA_MEMCPY3D_BATCH_OP *, unsigned long long, CUstream);
typedef CUresult(CUDAAPI *batch_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
                                    CUmemcpyAttributes *, size_t *, size_t, CUstream);
static batch3d_fn g_batch3d;
static batch_fn g_batch;

enum { GRID_COLS = 16 };
static size_t g_tiles = 256, g_rows = 32, g_bytes = 256;   /* -n, -t */
static size_t g_width, g_height;       /* the region, bytes x rows */
static size_t g_hpitch, g_dpitch;      /* host pitch (ours), device pitch (the driver's) */
static unsigned char *g_hsrc, *g_hdst, *g_hread;  /* pinned; g_hread: read-back of device dst */
static CUdeviceptr g_dsrc, g_ddst;
static CUstream g_s;
static CUDA_MEMCPY3D_BATCH_OP *g_ops;
static CUdeviceptr *g_rsrc, *g_rdst;
static size_t *g_rsize;

enum dir { H2D, D2H };
static const char *dir_name[] = {"h2d", "d2h"};

/* byte offsets of tile t's first byte on the host and on the device */
static size_t tile_x(size_t t) { return (t % GRID_COLS) * g_bytes; }
static size_t tile_y(size_t t) { return (t / GRID_COLS) * g_rows; }
static size_t host_off(size_t t) { return tile_y(t) * g_hpitch + tile_x(t); }
static size_t dev_off(size_t t) { return tile_y(t) * g_dpitch + tile_x(t); }

static void copy2d(enum dir d, size_t srcx, size_t srcy, size_t dstx, size_t dsty, size_t w, size_t h)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcXInBytes = srcx;
    c.srcY = srcy;
    c.dstXInBytes = dstx;
    c.dstY = dsty;
    c.WidthInBytes = w;
    c.Height = h;
    if (d == H2D) {
        c.srcMemoryType = CU_MEMORYTYPE_HOST;
        c.srcHost = g_hsrc;
        c.srcPitch = g_hpitch;
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.dstDevice = g_ddst;
        c.dstPitch = g_dpitch;
    } else {
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = g_dsrc;
        c.srcPitch = g_dpitch;
        c.dstMemoryType = CU_MEMORYTYPE_HOST;
        c.dstHost = g_hdst;
        c.dstPitch = g_hpitch;
    }
    CK(cuMemcpy2DAsync(&c, g_s));
}

static void loop2d(enum dir d)
{
    for (size_t t = 0; t < g_tiles; t++)
        copy2d(d, tile_x(t), tile_y(t), tile_x(t), tile_y(t), g_bytes, g_rows);
}

static void whole(enum dir d)
{
    size_t rows = (g_tiles + GRID_COLS - 1) / GRID_COLS * g_rows;
    size_t w = g_tiles < GRID_COLS ? g_tiles * g_bytes : g_width;
    copy2d(d, 0, 0, 0, 0, w, rows);
}

static void rows1d(enum dir d)
{
    for (size_t t = 0; t < g_tiles; t++)
        for (size_t r = 0; r < g_rows; r++) {
            size_t ho = host_off(t) + r * g_hpitch, dof = dev_off(t) + r * g_dpitch;
            if (d == H2D)
                CK(cuMemcpyHtoDAsync(g_ddst + dof, g_hsrc + ho, g_bytes, g_s));
            else
                CK(cuMemcpyDtoHAsync(g_hdst + ho, g_dsrc + dof, g_bytes, g_s));
        }
}

static CUresult rowbatch(enum dir d)
{
    size_t n = 0;
    for (size_t t = 0; t < g_tiles; t++)
        for (size_t r = 0; r < g_rows; r++, n++) {
            size_t ho = host_off(t) + r * g_hpitch, dof = dev_off(t) + r * g_dpitch;
            if (d == H2D) {
                g_rsrc[n] = (CUdeviceptr)(uintptr_t)(g_hsrc + ho);
                g_rdst[n] = g_ddst + dof;
            } else {
                g_rsrc[n] = g_dsrc + dof;
                g_rdst[n] = (CUdeviceptr)(uintptr_t)(g_hdst + ho);
            }
            g_rsize[n] = g_bytes;
        }
    CUmemcpyAttributes attr;
    memset(&attr, 0, sizeof attr);
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    attr.srcLocHint.type = d == H2D ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
    attr.dstLocHint.type = d == H2D ? CU_MEM_LOCATION_TYPE_DEVICE : CU_MEM_LOCATION_TYPE_HOST;
    size_t idx0 = 0;
    return g_batch(g_rdst, g_rsrc, g_rsize, n, &attr, &idx0, 1, g_s);
}

static void operand(CUmemcpy3DOperand *o, int host, CUdeviceptr base, size_t off, size_t pitch)
{
    memset(o, 0, sizeof *o);
    o->type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    o->op.ptr.ptr = base + off;
    o->op.ptr.rowLength = pitch;       /* elements of 1 byte (pointer to pointer) */
    o->op.ptr.layerHeight = 0;         /* depth 1: tightly packed is fine */
    o->op.ptr.locHint.type = host ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
    o->op.ptr.locHint.id = 0;
}

static CUresult batch3d(enum dir d)
{
    CUdeviceptr hs = (CUdeviceptr)(uintptr_t)g_hsrc, hd = (CUdeviceptr)(uintptr_t)g_hdst;
    for (size_t t = 0; t < g_tiles; t++) {
        CUDA_MEMCPY3D_BATCH_OP *op = &g_ops[t];
        if (d == H2D) {
            operand(&op->src, 1, hs, host_off(t), g_hpitch);
            operand(&op->dst, 0, g_ddst, dev_off(t), g_dpitch);
        } else {
            operand(&op->src, 0, g_dsrc, dev_off(t), g_dpitch);
            operand(&op->dst, 1, hd, host_off(t), g_hpitch);
        }
        op->extent.width = g_bytes;
        op->extent.height = g_rows;
        op->extent.depth = 1;
        op->srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
        op->flags = 0;
    }
    return g_batch3d(g_tiles, g_ops, 0, g_s);
}

enum mode { LOOP2D, BATCH3D, ROWS, ROWBATCH, WHOLE, NMODES };
static const char *mode_name[] = {"loop2d", "batch3d", "rows", "rowbatch", "whole"};

/* Issue one repetition of mode m; a refusal of the batch calls is returned. */
static CUresult issue(enum mode m, enum dir d)
{
    switch (m) {
    case LOOP2D: loop2d(d); break;
    case BATCH3D: return batch3d(d);
    case ROWS: rows1d(d); break;
    case ROWBATCH: return rowbatch(d);
    case WHOLE: whole(d); break;
    default: break;
    }
    return CUDA_SUCCESS;
}

static int in_tile(size_t x, size_t y)
{
    size_t tc = x / g_bytes, tr = y / g_rows;
    if (x >= g_width || tc >= GRID_COLS)
        return 0;
    return tr * GRID_COLS + tc < g_tiles;
}

/* Poison, run once, compare: 0 right, 1 wrong bytes, -1 the batch call refused. */
static int check(enum mode m, enum dir d, const char **why)
{
    size_t hbytes = g_hpitch * g_height;
    if (d == D2H)
        memset(g_hdst, 0xa5, hbytes);
    else
        CK(cuMemsetD8Async(g_ddst, 0xa5, g_dpitch * g_height, g_s));
    CUresult r = issue(m, d);
    if (r != CUDA_SUCCESS) {
        CK(cuStreamSynchronize(g_s));
        if (cuGetErrorName(r, why) != CUDA_SUCCESS || !*why)
            *why = "?";
        return -1;
    }
    CK(cuStreamSynchronize(g_s));
    const unsigned char *got = g_hdst;
    if (d == H2D) {  /* read the device destination back, in the host pitch */
        CUDA_MEMCPY2D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = g_ddst;
        c.srcPitch = g_dpitch;
        c.dstMemoryType = CU_MEMORYTYPE_HOST;
        c.dstHost = g_hread;
        c.dstPitch = g_hpitch;
        c.WidthInBytes = g_dpitch < g_hpitch ? g_dpitch : g_hpitch;
        c.Height = g_height;
        memset(g_hread, 0xa5, hbytes);
        CK(cuMemcpy2D(&c));
        got = g_hread;
    }
    size_t w = d == H2D ? (g_dpitch < g_hpitch ? g_dpitch : g_hpitch) : g_hpitch;
    for (size_t y = 0; y < g_height; y++)
        for (size_t x = 0; x < w; x++) {
            unsigned char want = in_tile(x, y) ? g_hsrc[y * g_hpitch + x] : 0xa5;
            if (got[y * g_hpitch + x] != want) {
                fprintf(stderr, "bench_tiles: %s %s: wrong byte at row %zu, column %zu (%s a tile)\n",
                        mode_name[m], dir_name[d], y, x, in_tile(x, y) ? "in" : "outside");
                return 1;
            }
        }
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_tiles [-r REPS] [-w WARMUP] [-m loop2d,batch3d,rows,rowbatch,whole] "
                    "[-n TILES] [-t ROWSxBYTES] [h2d] [d2h]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int reps = 15, warm = 3, want[NMODES] = {1, 1, 1, 1, 1}, dirs[2] = {0, 0};
    for (int a = 1; a < argc; a++) {
        const char *o = argv[a];
        if (o[0] == '-' && a + 1 < argc) {
            const char *v = argv[++a];
            if (!strcmp(o, "-r")) reps = atoi(v);
            else if (!strcmp(o, "-w")) warm = atoi(v);
            else if (!strcmp(o, "-n")) g_tiles = strtoul(v, NULL, 10);
            else if (!strcmp(o, "-t")) {
                if (sscanf(v, "%zux%zu", &g_rows, &g_bytes) != 2)
                    return usage();
            } else if (!strcmp(o, "-m")) {
                char list[128], *save = NULL;
                snprintf(list, sizeof list, "%s", v);
                memset(want, 0, sizeof want);
                for (char *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
                    int k = 0;
                    while (k < NMODES && strcmp(m, mode_name[k]))
                        k++;
                    if (k == NMODES) {
                        fprintf(stderr, "bench_tiles: unknown mode '%s'\n", m);
                        return 2;
                    }
                    want[k] = 1;
                }
            } else
                return usage();
            continue;
        }
        if (!strcmp(o, "h2d")) dirs[H2D] = 1;
        else if (!strcmp(o, "d2h")) dirs[D2H] = 1;
        else return usage();
    }
    if (reps < 1 || warm < 0 || g_tiles < 1 || g_tiles > 65536 || g_rows < 1 || g_bytes < 1 ||
        g_rows * g_bytes > (64u << 20))
        return usage();
    if (!dirs[H2D] && !dirs[D2H])
        dirs[H2D] = dirs[D2H] = 1;
    const char *sim = getenv("BENCH_SIM");  /* a stand-in driver (LD_LIBRARY_PATH): times mean nothing */
    if (access("/dev/nvidiactl", F_OK) != 0 && !(sim && !strcmp(sim, "1"))) {
        fprintf(stderr, "bench_tiles: no GPU (/dev/nvidiactl missing), skipped\n");
        return 77;
    }
    int ndev = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&ndev) != CUDA_SUCCESS || ndev == 0) {
        fprintf(stderr, "bench_tiles: no usable GPU, skipped\n");
        return 77;
    }
    CUdevice dev;
    char name[128];
    int drv = 0;
    bench_primary(0, &dev);
    CK(cuDeviceGetName(name, sizeof name, dev));
    CK(cuDriverGetVersion(&drv));
    CK(cuStreamCreate(&g_s, CU_STREAM_NON_BLOCKING));
    CUdriverProcAddressQueryResult st;
    void *p = NULL;
    if (cuGetProcAddress("cuMemcpy3DBatchAsync", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st) == CUDA_SUCCESS &&
        st == CU_GET_PROC_ADDRESS_SUCCESS)
        g_batch3d = (batch3d_fn)p;
    p = NULL;
    if (cuGetProcAddress("cuMemcpyBatchAsync", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st) == CUDA_SUCCESS &&
        st == CU_GET_PROC_ADDRESS_SUCCESS)
        g_batch = (batch_fn)p;

    g_width = (g_tiles < GRID_COLS ? g_tiles : GRID_COLS) * g_bytes;
    g_height = (g_tiles + GRID_COLS - 1) / GRID_COLS * g_rows;
    g_hpitch = g_width + 512;
    CK(cuMemAllocPitch(&g_dsrc, &g_dpitch, g_width, g_height, 16));
    size_t p2 = 0;
    CK(cuMemAllocPitch(&g_ddst, &p2, g_width, g_height, 16));
    if (p2 != g_dpitch) {
        fprintf(stderr, "bench_tiles: the two device pitches differ (%zu, %zu)\n", g_dpitch, p2);
        return 1;
    }
    size_t hbytes = g_hpitch * g_height;
    CK(cuMemHostAlloc((void **)&g_hsrc, hbytes, 0));
    CK(cuMemHostAlloc((void **)&g_hdst, hbytes, 0));
    CK(cuMemHostAlloc((void **)&g_hread, hbytes, 0));
    size_t nrows = g_tiles * g_rows;
    g_ops = calloc(g_tiles, sizeof *g_ops);
    g_rsrc = malloc(nrows * sizeof *g_rsrc);
    g_rdst = malloc(nrows * sizeof *g_rdst);
    g_rsize = malloc(nrows * sizeof *g_rsize);
    if (!g_ops || !g_rsrc || !g_rdst || !g_rsize) {
        fprintf(stderr, "bench_tiles: out of memory\n");
        return 1;
    }
    uint64_t x = 0x243f6a8885a308d3ULL ^ (uint64_t)now_us();
    for (size_t i = 0; i < hbytes; i++) {  /* random, and never the poison everywhere */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        g_hsrc[i] = (unsigned char)(x >> 24);
    }
    {  /* the device source: the same image, in the device pitch */
        CUDA_MEMCPY2D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_HOST;
        c.srcHost = g_hsrc;
        c.srcPitch = g_hpitch;
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.dstDevice = g_dsrc;
        c.dstPitch = g_dpitch;
        c.WidthInBytes = g_width;
        c.Height = g_height;
        CK(cuMemcpy2D(&c));
    }
    int (*cb_enabled)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cubatch_batching_enabled");
    char cpus[256];
    cpu_list(cpus, sizeof cpus);
    printf("# device %s, driver %d, cuMemcpy3DBatchAsync %s, cuMemcpyBatchAsync %s, cubatch %s, cpus %s\n",
           name, drv, g_batch3d ? "found" : "MISSING", g_batch ? "found" : "MISSING",
           cb_enabled ? (cb_enabled() ? "loaded, batching" : "loaded, pass-through") : "not loaded", cpus);
    printf("# %zu tiles of %zu rows x %zu bytes; region %zu x %zu; device pitch %zu, host pitch %zu\n",
           g_tiles, g_rows, g_bytes, g_width, g_height, g_dpitch, g_hpitch);
    printf("mode,stream,dir,count,size,reps,median_us,p10_us,p90_us,extra,tile\n");
    fflush(stdout);

    int status = 0;
    double *t = malloc((size_t)reps * sizeof *t);
    for (int di = 0; di < 2; di++) {
        if (!dirs[di])
            continue;
        enum dir d = (enum dir)di;
        for (int m = 0; m < NMODES; m++) {
            if (!want[m])
                continue;
            if (m == WHOLE && g_tiles > GRID_COLS && g_tiles % GRID_COLS) {
                printf("# whole %s: %zu tiles do not fill the region's rows, skipped\n", dir_name[d], g_tiles);
                continue;
            }
            if ((m == BATCH3D && !g_batch3d) || (m == ROWBATCH && !g_batch)) {
                printf("# %s %s: the batch entry point is missing, skipped\n", mode_name[m], dir_name[d]);
                continue;
            }
            const char *why = NULL;
            int c = check((enum mode)m, d, &why);
            if (c < 0) {
                printf("# %s %s: the driver refused it (%s), skipped\n", mode_name[m], dir_name[d], why);
                continue;
            }
            if (c > 0) {
                status = 1;
                continue;
            }
            for (int r = -warm; r < reps; r++) {
                CK(cuStreamSynchronize(g_s));
                double t0 = now_us();
                CK(issue((enum mode)m, d));
                CK(cuStreamSynchronize(g_s));
                if (r >= 0)
                    t[r] = now_us() - t0;
            }
            qsort(t, (size_t)reps, sizeof *t, cmp_d);
            double med = reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2;
            size_t bytes = g_tiles * g_rows * g_bytes;
            printf("%s,side,%s,%zu,%zu,%d,%.2f,%.2f,%.2f,%.3f,%zux%zu\n", mode_name[m], dir_name[d], g_tiles,
                   g_rows * g_bytes, reps, med, t[reps / 10], t[(reps * 9) / 10 < reps ? (reps * 9) / 10 : reps - 1],
                   bytes / med / 1e3, g_rows, g_bytes);
            fflush(stdout);
        }
    }
    free(t);
    CK(cuStreamDestroy(g_s));
    CK(cuDevicePrimaryCtxRelease(dev));
    return status;
}
