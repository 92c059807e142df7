/* cubatch-check.c - the launcher's check of the option values, installed in
 * $(pkglibexecdir) (not on PATH).
 *
 *   cubatch-check LIBRARY
 *
 * Loads LIBRARY, the libcubatch.so the launcher is about to preload, and runs its
 * own option parser (cubatch__check_options, src/init.c, which runs config.c's
 * parser and the policy's) on this process's
 * environment: the very code that will read the options when the program starts,
 * so the launcher and the library cannot disagree about what is valid, even with
 * CUBATCH_LIBRARY naming a library of another version.  The library prints what
 * it rejects (every CUBATCH_ value, every unknown CUBATCH_ name) as CUBATCH_LOG
 * says: nothing at 0, when the launcher is silent too.
 *
 * Exit: 0 everything valid; 1 something rejected; 3 LIBRARY cannot be loaded or
 * is not cubatch (the message says why); 2 usage. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: cubatch-check LIBRARY\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "cubatch: cannot load %s\n", dlerror());
        return 3;
    }
    int (*check)(void) = (int (*)(void))dlsym(lib, "cubatch__check_options");
    if (!check) {
        fprintf(stderr, "cubatch: %s has no option check (not cubatch, or older than 0.1.0): %s\n", argv[1],
                dlerror());
        dlclose(lib);
        return 3;
    }
    int problems = check();
    dlclose(lib);
    return problems ? 1 : 0;
}
