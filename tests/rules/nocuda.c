/* nocuda.c - a program that never uses CUDA, though it asks dlsym for CUDA names
 * (as plugin loaders and CUDA detection code do).  Under the preload it must
 * behave exactly as without: same output, nothing on stderr, and libcuda never
 * loaded behind its back.
 *
 *   nocuda [x]     lookups: cuInit (not wrapped by cubatch), functions cubatch
 *                  exports (cuStreamSynchronize, cuMemcpyAsync,
 *                  cuGetProcAddress_v2), and names that start with "cu" but are
 *                  no driver function
 *   nocuda weak    calls cuStreamSynchronize through a weak reference, as code
 *                  that detects CUDA at link time does: without the preload the
 *                  reference is NULL; with it, it binds to cubatch's export, and
 *                  the call must answer quietly
 *   nocuda stats   asks the preloaded library for its report (cubatch_stats_json,
 *                  as the Python module's stats() does): libcuda stays unloaded */
#include "config.h"
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

extern CUresult CUDAAPI cuStreamSynchronize(CUstream) __attribute__((weak));

static int libcuda_mapped(void)
{
    int loaded = 0;
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    while (maps && fgets(line, sizeof line, maps))
        if (strstr(line, "libcuda"))
            loaded = 1;
    if (maps)
        fclose(maps);
    return loaded;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "weak")) {
        if (!cuStreamSynchronize) {
            printf("weak: unbound\n");
            return 0;
        }
        printf("weak: bound rc=%d\n", (int)cuStreamSynchronize(NULL));
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "stats")) {
        size_t (*report)(char *, size_t) = (size_t(*)(char *, size_t))dlsym(RTLD_DEFAULT, "cubatch_stats_json");
        char buf[8192];
        if (report && report(buf, sizeof buf) > 0)
            printf("stats: %s\n", strstr(buf, "\"batching\":false") ? "batching false" : "other");
        else
            printf("stats: none\n");
        printf("libcuda_loaded: %d\n", libcuda_mapped());
        return 0;
    }
    static const char *const names[] = {"cuInit", "cuStreamSynchronize", "cuMemcpyAsync", "cuGetProcAddress_v2",
                                        "cuserid", "strlen"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *p = dlsym(RTLD_DEFAULT, names[i]);
        printf("%s_found: %d%s\n", names[i], p != NULL, !p && !dlerror() ? " (no dlerror)" : "");
    }
    printf("libcuda_loaded: %d\n", libcuda_mapped());
    return 0;
}
