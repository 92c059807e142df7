/* dl_threads.c - a program without CUDA that looks up symbols from many threads,
 * to measure what the preload costs it (bench/dl-threads.sh runs it plain and
 * under LD_PRELOAD=libcubatch.so; tests/ops/check_ops.c keeps the cost bounded).
 *
 *   dl_threads MODE THREADS ITERATIONS [PLUGIN_DIR]
 *
 * Each of THREADS threads repeats ITERATIONS times:
 *   driver    dlsym(RTLD_DEFAULT, ...) of three driver names cubatch exports
 *             (cuStreamSynchronize, cuMemcpyAsync, cuGetProcAddress_v2) and one
 *             it does not (cuInit): how programs detect CUDA
 *   cuprefix  dlsym(libc, "cuserid") and dlsym(RTLD_DEFAULT, "cuserid"): a name
 *             that starts with "cu" but is no driver function (curl_*, cuserid)
 *   plain     dlsym(libc, "strlen") and dlsym(RTLD_DEFAULT, "malloc")
 *   open      dlopen + dlsym + dlclose of PLUGIN_DIR/libdlplugN.so, N the thread's
 *             number (its own copy: every iteration loads and unloads it)
 * and the program prints one line:
 *   dl_threads MODE THREADS ITERATIONS SECONDS FOUND
 * FOUND counts the driver-mode lookups that returned non-NULL: 0 in a process
 * without CUDA, as without cubatch. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *mode;
static long iterations;
static const char *plugin_dir = ".";
static void *libc_handle;
static long found;
static pthread_mutex_t found_lock = PTHREAD_MUTEX_INITIALIZER;

static void driver_names(long *hits)
{
    static const char *const names[] = {"cuStreamSynchronize", "cuMemcpyAsync", "cuGetProcAddress_v2", "cuInit"};
    for (int k = 0; k < 4; k++)
        if (dlsym(RTLD_DEFAULT, names[k]))
            ++*hits;
}

static void *worker(void *arg)
{
    long id = (long)arg, hits = 0;
    char plugin[4096];
    snprintf(plugin, sizeof plugin, "%s/libdlplug%ld.so", plugin_dir, id);
    for (long i = 0; i < iterations; i++) {
        if (!strcmp(mode, "driver")) {
            driver_names(&hits);
        } else if (!strcmp(mode, "cuprefix")) {
            if (!dlsym(libc_handle, "cuserid") || !dlsym(RTLD_DEFAULT, "cuserid"))
                abort();
        } else if (!strcmp(mode, "plain")) {
            if (!dlsym(libc_handle, "strlen") || !dlsym(RTLD_DEFAULT, "malloc"))
                abort();
        } else {
            void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
            if (!h || !dlsym(h, "dl_plugin_answer")) {
                fprintf(stderr, "dl_threads: %s\n", dlerror());
                exit(1);
            }
            dlclose(h);
        }
    }
    pthread_mutex_lock(&found_lock);
    found += hits;
    pthread_mutex_unlock(&found_lock);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "driver") && strcmp(argv[1], "cuprefix") && strcmp(argv[1], "plain") &&
                     strcmp(argv[1], "open"))) {
        fprintf(stderr, "usage: dl_threads driver|cuprefix|plain|open THREADS ITERATIONS [PLUGIN_DIR]\n");
        return 2;
    }
    mode = argv[1];
    int threads = atoi(argv[2]);
    iterations = atol(argv[3]);
    if (argc > 4)
        plugin_dir = argv[4];
    if (threads < 1 || threads > 64 || iterations < 1) {
        fprintf(stderr, "dl_threads: THREADS must be 1..64, ITERATIONS at least 1\n");
        return 2;
    }
    libc_handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    pthread_t t[64];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i)) {
            fprintf(stderr, "dl_threads: cannot create a thread\n");
            return 1;
        }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("dl_threads %s %d %ld %.4f %ld\n", mode, threads, iterations,
           (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9, found);
    if (libc_handle)
        dlclose(libc_handle);
    return 0;
}
