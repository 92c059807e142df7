/* hazard_rows.c - the CPU time of rule 19's hazard checks (src/hazard.c) over
 * bench_tiles' layout: 256 tiles of 32 rows x 256 B, 16 to a row of tiles,
 * both pitches 4,608, the run cut at 32 and 128 copies as the copy kernel's
 * chunks cut it; best of 20.  No GPU, no driver: hazard.c alone.
 *
 *   cc -O2 -Isrc -I<build>/src -I<build> -I<cuda>/include bench/hazard_rows.c src/hazard.c -o hazard_rows
 */
#include "hazard.h"

#include <stdio.h>
#include <time.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(void)
{
    struct cb_iset w = {0}, r = {0};
    struct cb_shapes sh = {0};
    const size_t W = 256, H = 32, P = 16 * 256 + 512;
    double best = 1e30;
    int hazards = 0;
    for (int rep = 0; rep < 20; rep++) {
        double t0 = now_us();
        size_t in_run = 0, chunk = 32;
        sh.n = 0;
        for (int t = 0; t < 256; t++) {
            uintptr_t x = (t % 16) * W, y = (t / 16) * H;
            struct cb_shape c = {0x100000000ull + y * P + x, 0x200000000ull + y * P + x, W, H, P, P};
            hazards += cb_hazard_shaped(&w, &r, &sh, &c);
            if (cb_shapes_add(&sh, &c))
                return 1;
            if (++in_run == chunk) {
                sh.n = 0;
                in_run = 0;
                chunk *= 4;
            }
        }
        double dt = now_us() - t0;
        best = dt < best ? dt : best;
    }
    printf("hazard_rows: 256 tiles, %.1f us (best of 20), %d hazards\n", best, hazards);
    cb_shapes_free(&sh);
    return hazards != 0;
}
