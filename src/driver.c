/* driver.c - the real driver: libcuda.so.1, opened at initialisation (never
 * linked), the real address of every intercepted function (hooks.def) and the
 * functions cubatch calls itself (driver.def).  Nothing here calls the public
 * dlsym, which is cubatch's own (resolve.c): libc's is found with dlvsym. */
#include "internal.h"

#include <dlfcn.h>

const struct cb_hook_row cb_hook_rows[CB_HOOK_COUNT] = {
#define CB_COPY_DIR(dir, dst, src, bytes, stream) dir
#define CB_ON_COPY(name, ptsz, action, aarg, params, args) [CB_ID_##name] = {#name, ptsz, 1, CB_COPY_DIR aarg},
#define CB_ON_OTHER(name, ptsz, action, aarg, params, args) [CB_ID_##name] = {#name, ptsz, 0, CB_D_ANY},
#include "hooks_each.h"
#undef CB_COPY_DIR
};

void *cb_real[CB_HOOK_COUNT];
struct cb_driver cb_drv;
static int cb_driver_found; /* libcuda.so.1 could be opened */

/* Not static: the x86-64 entry of dlsym (resolve.c) jumps through it. */
void *(*cb_real_dlsym)(void *, const char *);

/* dlsym is called by sanitizer runtimes while they initialise, before their
 * shadow memory exists: this must not be instrumented. */
__attribute__((no_sanitize("address", "undefined", "thread"))) void cb_real_dlsym_init(void)
{
    /* RTLD_NEXT finds libc's unless something (a sanitizer runtime initialising
     * before us) stands between; then ask libc itself. */
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5"};
    void *p = NULL;
    for (int i = 0; i < 2 && !p; i++)
        p = dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    if (!p) {
        void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
        for (int i = 0; i < 2 && libc && !p; i++)
            p = dlvsym(libc, "dlsym", versions[i]);
    }
    cb_real_dlsym = (void *(*)(void *, const char *))p;
}

static void *sym(void *h, const char *name) { return h && cb_real_dlsym ? cb_real_dlsym(h, name) : NULL; }

/* The driver version from which each row's function exists: 0 for a CB_HOOK
 * row (CUDA 13.0 or older), its version for a CB_HOOK_SINCE row. */
static const int cb_hook_since[CB_HOOK_COUNT] = {
#define CB_HOOK(name, ptsz, action, aarg, params, args)
#define CB_HOOK_SINCE(version, name, ptsz, action, aarg, params, args) [CB_ID_##name] = version,
#include "hooks.def"
#undef CB_HOOK_SINCE
#undef CB_HOOK
};

int cb_driver_version;

int cb_driver_load(void)
{
    if (!cb_real_dlsym)
        cb_real_dlsym_init();
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libcuda.so.1", RTLD_LAZY);
#define CB_DRIVER(name) cb_drv.name = (__typeof__(cb_drv.name))sym(h, #name);
#include "driver.def"
#undef CB_DRIVER
    if (!cb_drv.cuDriverGetVersion || cb_drv.cuDriverGetVersion(&cb_driver_version) != CUDA_SUCCESS)
        cb_driver_version = 0;
    /* A lookup on the driver's own handle finds the driver's definition, never
     * cubatch's export of the same name.  A function newer than the driver is
     * not looked up: the driver hands it out to nobody (rule 17). */
    for (size_t i = 0; i < CB_HOOK_COUNT; i++)
        cb_real[i] = cb_hook_since[i] <= cb_driver_version ? sym(h, cb_hook_rows[i].name) : NULL;
    cb_driver_found = h != NULL;
    return cb_driver_found;
}

/* A wrapper called with no real function behind it.  Without cubatch the
 * program could not have reached a function the driver lacks (its dlsym would
 * say NULL, its -lcuda link would not load), so there is no answer to copy; the
 * answer is quiet and the same every time: CUDA_ERROR_STUB_LIBRARY when no
 * driver could be loaded at all (what every function of the toolkit's stub
 * libcuda answers), CUDA_ERROR_NOT_SUPPORTED when the driver lacks just this
 * function.  A notice (log level 2) tells it once per function. */
CUresult cb_absent(int id)
{
    static atomic_uchar told[CB_HOOK_COUNT];
    CUresult rc = cb_driver_found ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_STUB_LIBRARY;
    if (!atomic_exchange(&told[id], 1))
        cb_log(CB_LOG_NOTICE, "%s called, but %s: it returns %d", cb_hook_rows[id].name,
               cb_driver_found ? "the driver does not export it" : "no CUDA driver could be loaded", (int)rc);
    return rc;
}
