/* nocuda.c - a program that never uses CUDA, though it asks dlsym for a CUDA name
 * (as plugin loaders do).  Under the preload it must behave exactly as without:
 * same output, nothing on stderr, and libcuda never loaded behind its back. */
#include "config.h"
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    void *p = dlsym(RTLD_DEFAULT, "cuInit");
    void *q = dlsym(RTLD_DEFAULT, "strlen");
    int loaded = 0;
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    while (maps && fgets(line, sizeof line, maps))
        if (strstr(line, "libcuda"))
            loaded = 1;
    if (maps)
        fclose(maps);
    printf("cuInit_found: %d\nstrlen_found: %d\nlibcuda_loaded: %d\n", p != NULL, q != NULL, loaded);
    return 0;
}
