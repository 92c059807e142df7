/* failalloc.c - a preloadable shim that makes every malloc, calloc and realloc
 * called from inside libcubatch fail (returns NULL), while the program and the
 * driver allocate normally.  Used by the rule tests: cubatch must then pass every
 * copy through, never drop one and never crash. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static int from_cubatch(const void *caller)
{
    Dl_info di;
    return dladdr(caller, &di) && di.dli_fname && strstr(di.dli_fname, "libcubatch");
}

void *malloc(size_t n)
{
    return from_cubatch(__builtin_return_address(0)) ? NULL : __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    return from_cubatch(__builtin_return_address(0)) ? NULL : __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    return from_cubatch(__builtin_return_address(0)) ? NULL : __libc_realloc(p, n);
}
