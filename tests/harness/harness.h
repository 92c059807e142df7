/* harness.h - what the test programs share: a program run in a fresh process
 * with a clean environment and a time limit, a file read whole (harness.c), and
 * the main() of the check-based tests (harness_check.c, with TH_WITH_CHECK
 * defined before this header).  Used by check_rules.c, check_ops.c,
 * check_units.c and fuzz/fuzz.c, through tests/libharness.la. */
#ifndef CUBATCH_TEST_HARNESS_H
#define CUBATCH_TEST_HARNESS_H

#include <stddef.h>

/* The environment every spawned program starts from: PATH, and the sanitizer
 * settings for the sanitizer builds (ignored otherwise): the preloaded library
 * comes before the sanitizer runtime, and what the simulated driver still holds
 * at exit is no leak of cubatch's.  Copies them into env[0..cap) and returns how
 * many. */
size_t th_env_clean(const char **env, size_t cap);

/* The whole file, NUL-terminated (malloc'd); "" (malloc'd) when it cannot be
 * read: never NULL. */
char *th_slurp(const char *path);

/* Starts argv[0] (argv NULL-terminated) with exactly env (nothing inherited),
 * its stdout and stderr into the files out and err (created or truncated; NULL:
 * /dev/null), to be killed after timeout_s seconds; its pid (-1: fork failed). */
int th_start(char *const argv[], char *const env[], const char *out, const char *err, unsigned timeout_s);
/* Waits for it: its exit status, or 128 + the signal that ended it (SIGALRM:
 * the time limit); 127 when it cannot be waited for. */
int th_wait(int pid);
/* th_start, then th_wait. */
int th_run(char *const argv[], char *const env[], const char *out, const char *err, unsigned timeout_s);

/* ---- check-based tests -------------------------------------------------------- */
#ifdef TH_WITH_CHECK
#include <check.h>

/* A case: its name and its tests, as many as it lists, {"name", TH_TESTS(a, b)}.
 * No fixed limit: the list is an array of its own size, ended by a NULL. */
#define TH_TESTS(...) ((const TTest *const[]){__VA_ARGS__, NULL})
struct th_case {
    const char *name;
    const TTest *const *tests; /* ends at the first NULL */
};
/* One suite of these cases, each case with a timeout of timeout_s; run, and
 * the exit status of the test program. */
int th_check_main(const char *suite, const struct th_case *cases, size_t ncases, int timeout_s);
#endif

#endif /* CUBATCH_TEST_HARNESS_H */
