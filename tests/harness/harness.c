/* harness.c - the test programs' shared harness (harness.h). */
#include "config.h" /* _GNU_SOURCE */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const th_clean[] = {
    "PATH=/usr/bin:/bin",
    "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0:abort_on_error=0",
    "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1",
    "TSAN_OPTIONS=halt_on_error=1:report_signal_unsafe=0",
};

size_t th_env_clean(const char **env, size_t cap)
{
    size_t n = 0;
    for (; n < sizeof th_clean / sizeof th_clean[0] && n < cap; n++)
        env[n] = th_clean[n];
    return n;
}

char *th_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 4096, n = 0, got;
    char *b = malloc(cap);
    if (!b)
        abort();
    while (f && (got = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n == cap - 1 && !(b = realloc(b, cap *= 2)))
            abort();
    }
    b[n] = 0;
    if (f)
        fclose(f);
    return b;
}

static void redirect(const char *path, int fd)
{
    int f = open(path ? path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (f >= 0 && f != fd) {
        dup2(f, fd);
        close(f);
    }
}

int th_start(char *const argv[], char *const env[], const char *out, const char *err, unsigned timeout_s)
{
    fflush(NULL); /* nothing buffered is written twice by the child */
    pid_t pid = fork();
    if (pid == 0) {
        redirect(out, 1);
        redirect(err, 2);
        alarm(timeout_s); /* survives execve */
        execve(argv[0], argv, env);
        _exit(127);
    }
    return pid;
}

int th_wait(int pid)
{
    int st = 0;
    if (pid < 0)
        return 127;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 127;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int th_run(char *const argv[], char *const env[], const char *out, const char *err, unsigned timeout_s)
{
    return th_wait(th_start(argv, env, out, err, timeout_s));
}
