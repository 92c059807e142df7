/* check_ops.c - cubatch as operations meets it: reports from many processes and
 * across fork, what each log level shows and how values are quoted, unknown
 * CUBATCH_ names, and processes that never load CUDA (dlsym answers, weak
 * references, the cost of lookups from many threads).
 *
 * Every case runs programs in fresh processes with a cleaned environment:
 * tests/opsprog (a small driver program, against the simulated driver),
 * tests/nocuda (no CUDA at all) and bench/dl_threads (lookups from threads). */
#include "config.h" /* _GNU_SOURCE */
#define TH_WITH_CHECK 1
#include "../harness/harness.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef BUILDDIR
#error "BUILDDIR must name the build tree"
#endif

#define OPSPROG BUILDDIR "/tests/opsprog"
#define NOCUDA BUILDDIR "/tests/nocuda"
#define DL_THREADS BUILDDIR "/bench/dl_threads"
#define LIBCUBATCH BUILDDIR "/src/.libs/libcubatch.so"
#define SIMDIR BUILDDIR "/tests/sim/.libs"

struct proc {
    pid_t pid;
    char dir[64]; /* holds out and err */
};
struct res {
    int status; /* exit status, or 128 + the signal that ended it */
    char *out, *err;
};

enum { PRELOAD = 1, SIM = 2 };

/* Start argv in a clean environment: PATH, sanitizer settings, the simulated
 * driver (SIM), the preload (PRELOAD), timers out of the way, then `extra`. */
static struct proc start(const char *const *argv, int how, const char *const *extra)
{
    struct proc p;
    snprintf(p.dir, sizeof p.dir, "/tmp/cubatch-ops-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(p.dir));
    const char *env[400];
    int ne = (int)th_env_clean(env, 400);
    env[ne++] = "CUBATCH_FLUSH_US=1000000";
    env[ne++] = "CUBATCH_SLOW_NS=1000000000";
    if (how & SIM)
        env[ne++] = "LD_LIBRARY_PATH=" SIMDIR;
    if (how & PRELOAD)
        env[ne++] = "LD_PRELOAD=" LIBCUBATCH;
    for (; extra && *extra && ne < 398; extra++)
        env[ne++] = *extra;
    env[ne] = NULL;
    char out[96], err[96];
    snprintf(out, sizeof out, "%s/out", p.dir);
    snprintf(err, sizeof err, "%s/err", p.dir);
    p.pid = th_start((char *const *)argv, (char *const *)env, out, err, 120);
    ck_assert_int_ge(p.pid, 0);
    return p;
}

static struct res finish(struct proc *p)
{
    struct res r = {th_wait(p->pid), NULL, NULL};
    char path[96];
    snprintf(path, sizeof path, "%s/out", p->dir);
    r.out = th_slurp(path);
    unlink(path);
    snprintf(path, sizeof path, "%s/err", p->dir);
    r.err = th_slurp(path);
    unlink(path);
    rmdir(p->dir);
    return r;
}

static struct res run(const char *const *argv, int how, const char *const *extra)
{
    struct proc p = start(argv, how, extra);
    return finish(&p);
}

static void res_free(struct res *r)
{
    free(r->out);
    free(r->err);
}

static char *tmpdir_new(void)
{
    char *d = strdup("/tmp/cubatch-reports-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d));
    return d;
}

/* Remove the folder and what it holds (files only). */
static void tmpdir_free(char *d)
{
    DIR *dir = opendir(d);
    struct dirent *e;
    while (dir && (e = readdir(dir)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s", d, e->d_name);
            unlink(path);
        }
    if (dir)
        closedir(dir);
    rmdir(d);
    free(d);
}

static int count_entries(const char *d)
{
    int n = 0;
    DIR *dir = opendir(d);
    struct dirent *e;
    while (dir && (e = readdir(dir)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (dir)
        closedir(dir);
    return n;
}

/* One complete JSON report and nothing else: one line, braces balanced outside
 * strings, a newline right after the last brace (a shorter report written over
 * a longer one leaves a tail: "Extra data"). */
static int one_json_report(const char *s)
{
    if (!s || strncmp(s, "{\"cubatch\":", 11))
        return 0;
    int depth = 0, in_str = 0;
    const char *p = s;
    for (; *p; p++) {
        if (in_str) {
            if (*p == '\\')
                p++;
            else if (*p == '"')
                in_str = 0;
        } else if (*p == '"') {
            in_str = 1;
        } else if (*p == '{') {
            depth++;
        } else if (*p == '}') {
            if (--depth == 0)
                break;
        } else if (*p == '\n') {
            return 0;
        }
    }
    return *p == '}' && !strcmp(p + 1, "\n");
}

static long json_num(const char *s, const char *key)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = s ? strstr(s, pat) : NULL;
    return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

/* The end of a long output, for a failure message (check caps their length). */
static const char *tail(const char *s)
{
    size_t n = strlen(s);
    return n > 1500 ? s + n - 1500 : s;
}

static int count_lines_with(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/* ---- reports ------------------------------------------------------------------------------ */

/* n processes at once, each with its own %p report: n files, each whole and its own */
static void reports_per_process(int n)
{
    char *d = tmpdir_new();
    char file[160];
    snprintf(file, sizeof file, "CUBATCH_STATS_FILE=%s/r.%%p.json", d);
    const char *env[] = {"CUBATCH_STATS=json", file, NULL};
    const char *argv[] = {OPSPROG, "copies", "32", NULL};
    struct proc p[6];
    for (int i = 0; i < n; i++)
        p[i] = start(argv, PRELOAD | SIM, env);
    for (int i = 0; i < n; i++) {
        struct res r = finish(&p[i]);
        ck_assert_msg(r.status == 0 && strstr(r.out, "opsprog: ok"), "%s%s", r.out, tail(r.err));
        char path[200];
        snprintf(path, sizeof path, "%s/r.%d.json", d, (int)p[i].pid);
        char *rep = th_slurp(path);
        ck_assert_msg(one_json_report(rep), "%s: not one whole report: %s", path, rep ? rep : "(missing)");
        ck_assert_int_eq(json_num(rep, "pid"), p[i].pid);
        ck_assert_int_eq(json_num(rep, "deferred"), 31); /* 32 copies: the first of the burst goes out at once */
        free(rep);
        res_free(&r);
    }
    ck_assert_int_eq(count_entries(d), n); /* no temporary file left behind */
    tmpdir_free(d);
}

START_TEST(two_processes_two_reports) { reports_per_process(2); }
END_TEST

START_TEST(six_processes_six_reports) { reports_per_process(6); }
END_TEST

START_TEST(host_name_and_percent_in_the_name)
{
    char *d = tmpdir_new(), host[256] = "";
    gethostname(host, sizeof host - 1);
    char file[160];
    snprintf(file, sizeof file, "CUBATCH_STATS_FILE=%s/r.%%h.%%%%.json", d);
    const char *env[] = {"CUBATCH_STATS=json", file, NULL};
    const char *argv[] = {OPSPROG, "copies", "4", NULL};
    struct res r = run(argv, PRELOAD | SIM, env);
    ck_assert_int_eq(r.status, 0);
    char path[512];
    snprintf(path, sizeof path, "%s/r.%s.%%.json", d, host);
    char *rep = th_slurp(path);
    ck_assert_msg(one_json_report(rep), "%s: %s; stderr: %s", path, rep ? rep : "(missing)", tail(r.err));
    free(rep);
    res_free(&r);
    tmpdir_free(d);
}
END_TEST

/* Many processes, one fixed name, reports of different lengths: the file is
 * always one whole report (the last one renamed into place). */
START_TEST(one_name_many_processes_never_torn)
{
    char *d = tmpdir_new();
    char file[240], path[200];
    snprintf(path, sizeof path, "%s/report.json", d);
    snprintf(file, sizeof file, "CUBATCH_STATS_FILE=%s", path);
    const char *env[] = {"CUBATCH_STATS=json", file, NULL};
    for (int round = 0; round < 30; round++) {
        /* all six leave at the same moment, 50 ms from now */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        char at[32];
        snprintf(at, sizeof at, "%llu", (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec +
                                            50000000ull);
        const char *longer[] = {OPSPROG, "copies", "300", at, NULL}, *shorter[] = {OPSPROG, "copies", "0", at, NULL};
        struct proc p[6];
        for (int i = 0; i < 6; i++)
            p[i] = start(i % 2 ? shorter : longer, PRELOAD | SIM, env);
        for (int i = 0; i < 6; i++) {
            struct res r = finish(&p[i]);
            ck_assert_int_eq(r.status, 0);
            res_free(&r);
        }
        char *rep = th_slurp(path);
        ck_assert_msg(one_json_report(rep), "round %d: torn report: %s", round, rep ? rep : "(missing)");
        free(rep);
        ck_assert_int_eq(count_entries(d), 1);
    }
    tmpdir_free(d);
}
END_TEST

START_TEST(fork_child_reports_its_own_work)
{
    char *d = tmpdir_new();
    char file[160];
    snprintf(file, sizeof file, "CUBATCH_STATS_FILE=%s/r.%%p.json", d);
    const char *env[] = {"CUBATCH_STATS=json", file, NULL};
    const char *argv[] = {OPSPROG, "fork", NULL};
    struct proc p = start(argv, PRELOAD | SIM, env);
    struct res r = finish(&p);
    ck_assert_msg(r.status == 0 && strstr(r.out, "opsprog: ok"), "%s%s", r.out, tail(r.err));
    int child = atoi(strstr(r.out, "opsprog: child ") + 15);
    char path[200];
    snprintf(path, sizeof path, "%s/r.%d.json", d, (int)p.pid);
    char *parent_rep = th_slurp(path);
    snprintf(path, sizeof path, "%s/r.%d.json", d, child);
    char *child_rep = th_slurp(path);
    ck_assert_msg(one_json_report(parent_rep), "%s", parent_rep ? parent_rep : "(no parent report)");
    ck_assert_msg(one_json_report(child_rep), "%s", child_rep ? child_rep : "(no child report)");
    ck_assert_int_eq(json_num(parent_rep, "copies"), 16);
    ck_assert_int_eq(json_num(parent_rep, "deferred"), 15); /* the first of the burst at once */
    /* the child made no copy: none of the parent's counts may appear in its report */
    ck_assert_msg(json_num(child_rep, "copies") == 0 && json_num(child_rep, "deferred") == 0 &&
                      json_num(child_rep, "flush_stream") == 0 && strstr(child_rep, "\"calls\":{}"),
                  "child report: %s", child_rep);
    free(parent_rep);
    free(child_rep);
    res_free(&r);
    tmpdir_free(d);
}
END_TEST

/* The report cannot go where asked: a warning with the reason, the report on stderr. */
static void write_fails(const char *target, const char *reason)
{
    char file[200];
    snprintf(file, sizeof file, "CUBATCH_STATS_FILE=%s", target);
    const char *env[] = {"CUBATCH_STATS=json", file, NULL};
    const char *argv[] = {OPSPROG, "copies", "8", NULL};
    struct res r = run(argv, PRELOAD | SIM, env);
    ck_assert_int_eq(r.status, 0);
    char want[300];
    snprintf(want, sizeof want, "cubatch: warning: cannot write the report to \"%s\": %s; it follows on stderr\n",
             target, reason);
    ck_assert_msg(strstr(r.err, want), "want: %sgot: %s", want, tail(r.err));
    const char *rep = strstr(r.err, want) + strlen(want);
    ck_assert_msg(one_json_report(rep), "the report did not follow on stderr: %s", tail(r.err));
    res_free(&r);
}

START_TEST(write_failure_says_why)
{
    write_fails("/dev/full", "No space left on device");
    write_fails("/nonexistent-cubatch-dir/r.json", "No such file or directory");
}
END_TEST

START_TEST(file_alone_means_text_report)
{
    char *d = tmpdir_new();
    char file[240], path[200];
    snprintf(path, sizeof path, "%s/r.txt", d);
    snprintf(file, sizeof file, "CUBATCH_STATS_FILE=%s", path);
    const char *env[] = {file, NULL};
    const char *argv[] = {OPSPROG, "copies", "8", NULL};
    struct res r = run(argv, PRELOAD | SIM, env);
    ck_assert_int_eq(r.status, 0);
    char *rep = th_slurp(path);
    ck_assert_msg(rep && !strncmp(rep, "cubatch ", 8) && strstr(rep, " report (pid ") && strstr(rep, "deferred "),
                  "%s", rep ? rep : "(no report)");
    ck_assert_str_eq(r.err, "");
    free(rep);
    res_free(&r);
    tmpdir_free(d);
}
END_TEST

/* The copy program with CUBATCH_STATS_FILE=file, while fifo is a FIFO that
 * nobody reads: it must not hang at exit (a hang ends in the child's alarm:
 * 128 + SIGALRM), and the JSON report goes to stderr.  The caller checks the
 * warning that says why. */
static struct res run_beside_unread_fifo(const char *fifo, const char *file)
{
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    char var[480];
    snprintf(var, sizeof var, "CUBATCH_STATS_FILE=%s", file);
    const char *env[] = {"CUBATCH_STATS=json", var, NULL};
    const char *argv[] = {OPSPROG, "copies", "8", NULL};
    struct res r = run(argv, PRELOAD | SIM, env);
    unlink(fifo);
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, tail(r.err));
    ck_assert_msg(strstr(r.err, "{\"cubatch\":"), "no report on stderr: %s", tail(r.err));
    return r;
}

/* A report file that is a FIFO nobody reads: the program must not hang at exit
 * (it blocked in open() once); a warning says why, the report goes to stderr. */
START_TEST(fifo_nobody_reads_does_not_hang)
{
    char *d = tmpdir_new();
    char path[200];
    snprintf(path, sizeof path, "%s/fifo", d);
    struct res r = run_beside_unread_fifo(path, path);
    ck_assert_msg(strstr(r.err, "is a FIFO that nobody is reading (the report would block the program at exit); "
                                "the report goes to stderr\n"), "%s", tail(r.err));
    res_free(&r);
    tmpdir_free(d);
}
END_TEST

/* The same FIFO named through an escape (%h: the start check cannot see it),
 * or made after the program started: the report's own open must not block. */
START_TEST(fifo_behind_an_escape_does_not_hang)
{
    char *d = tmpdir_new();
    char host[128] = "", path[400], file[240];
    ck_assert_int_eq(gethostname(host, sizeof host - 1), 0);
    snprintf(path, sizeof path, "%s/fifo.%s", d, host);
    snprintf(file, sizeof file, "%s/fifo.%%h", d);
    struct res r = run_beside_unread_fifo(path, file);
    ck_assert_msg(strstr(r.err, "cannot write the report to ") && strstr(r.err, ": a FIFO that nobody is reading; "
                                                                                "it follows on stderr\n"),
                  "%s", tail(r.err));
    res_free(&r);
    tmpdir_free(d);
}
END_TEST

/* A FIFO somebody reads gets the whole report (the check at start must not hand
 * the reader an end of file before it). */
START_TEST(fifo_with_a_reader_gets_the_report)
{
    char *d = tmpdir_new();
    char path[200], got[220], file[240];
    snprintf(path, sizeof path, "%s/fifo", d);
    snprintf(got, sizeof got, "%s/got", d);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t reader = fork();
    ck_assert_int_ge(reader, 0);
    if (reader == 0) {
        /* open without waiting for a writer, say so, then read until the
         * report has come and every writer is gone (an end of file before any
         * byte only means no writer yet) */
        alarm(60);
        int in = open(path, O_RDONLY | O_NONBLOCK), out = open(got, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || out < 0 || write(ready[1], "r", 1) != 1)
            _exit(1);
        fcntl(in, F_SETFL, 0);
        char buf[4096];
        size_t total = 0;
        for (;;) {
            ssize_t n = read(in, buf, sizeof buf);
            if (n > 0) {
                if (write(out, buf, (size_t)n) != n)
                    _exit(1);
                total += (size_t)n;
            } else if (n == 0 && total > 0) {
                _exit(0);
            } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                _exit(1);
            } else {
                usleep(1000);
            }
        }
    }
    char token;
    close(ready[1]);
    ck_assert_int_eq(read(ready[0], &token, 1), 1); /* the reader is there before the program starts */
    close(ready[0]);
    snprintf(file, sizeof file, "CUBATCH_STATS_FILE=%s", path);
    const char *env[] = {"CUBATCH_STATS=json", file, NULL};
    const char *argv[] = {OPSPROG, "copies", "8", NULL};
    struct res r = run(argv, PRELOAD | SIM, env);
    int st = 0;
    waitpid(reader, &st, 0);
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, tail(r.err));
    ck_assert_str_eq(r.err, "");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the reader failed (%d)", st);
    char *rep = th_slurp(got);
    ck_assert_msg(rep && one_json_report(rep), "the reader got: %s", rep ? rep : "(nothing)");
    free(rep);
    res_free(&r);
    unlink(got);
    unlink(path);
    tmpdir_free(d);
}
END_TEST

/* A report file name longer than a path: refused at start with its real length. */
START_TEST(long_file_name_gives_its_length)
{
    static char file[5000 + 64];
    int n = snprintf(file, sizeof file, "CUBATCH_STATS_FILE=/tmp/");
    memset(file + n, 'r', 5000);
    file[n + 5000] = 0;
    const char *env[] = {file, NULL};
    const char *argv[] = {OPSPROG, "copies", "8", NULL};
    struct res r = run(argv, PRELOAD | SIM, env);
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(strstr(r.err, "rrr\"... (5005 bytes) is not valid: a path has at most 4095 bytes; the report "
                                "goes to stderr\n"), "%s", tail(r.err));
    ck_assert_msg(strstr(r.err, " report (pid "), "the text report did not come on stderr: %s", tail(r.err));
    res_free(&r);
}
END_TEST

/* ---- messages ----------------------------------------------------------------------------- */

static struct res opsprog_with(const char *const *env)
{
    const char *argv[] = {OPSPROG, "copies", "4", NULL};
    struct res r = run(argv, PRELOAD | SIM, env);
    ck_assert_msg(r.status == 0, "%s%s", r.out, tail(r.err));
    return r;
}

START_TEST(log_0_silences_every_message)
{
    const char *env[] = {"CUBATCH_LOG=0", "CUBATCH_MAX_BATCH=lots", "CUBATCH_POLICY=garbage",
                         "CUBATCH_SRC_ORDER=during_api_call", "CUBATCH_MAXBATCH=8", "CUBATCH_STATS_FILE=%q",
                         "CUBATCH_STATS=off", /* a refused file alone would still ask for a report, on stderr */
                         NULL};
    struct res r = opsprog_with(env);
    ck_assert_msg(r.err[0] == 0, "CUBATCH_LOG=0 printed: %s", tail(r.err));
    res_free(&r);
}
END_TEST

/* An empty value is the default, as if unset, for every option of the table:
 * nothing printed; at log level 2 a notice names it. */
static const char *const cb_option_names[] = {
#define CB_OPTION(name, type, def, lo, hi, values, check, doc) #name,
#include "options.def"
#undef CB_OPTION
};
#define NOPTIONS (sizeof cb_option_names / sizeof cb_option_names[0])

START_TEST(empty_values_mean_the_default)
{
    static char vars[NOPTIONS][64];
    const char *env[NOPTIONS + 2];
    size_t ne = 0;
    for (size_t i = 0; i < NOPTIONS; i++) {
        int k = snprintf(vars[i], sizeof vars[i], "CUBATCH_");
        for (const char *c = cb_option_names[i]; *c; c++)
            vars[i][k++] = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
        vars[i][k++] = '=';
        vars[i][k] = 0;
        env[ne++] = vars[i];
    }
    env[ne] = NULL;
    struct res r = opsprog_with(env);
    ck_assert_msg(r.err[0] == 0, "empty values printed: %s", tail(r.err));
    res_free(&r);
    const char *two[] = {"CUBATCH_LOG=2", "CUBATCH_MAX_BATCH=", "CUBATCH_POLICY=", NULL};
    r = opsprog_with(two);
    ck_assert_msg(strstr(r.err, "cubatch: CUBATCH_MAX_BATCH is set but empty: the default, as if unset\n"), "%s",
                  tail(r.err));
    ck_assert_msg(strstr(r.err, "cubatch: option max_batch = 4096 (default)\n"), "%s", tail(r.err));
    ck_assert_msg(strstr(r.err, "cubatch: CUBATCH_POLICY is set but empty"), "%s", tail(r.err));
    ck_assert_int_eq(count_lines_with(r.err, "cubatch: warning: "), 0);
    res_free(&r);
}
END_TEST

START_TEST(log_2_shows_values_in_use_in_their_words)
{
    const char *env[] = {"CUBATCH_LOG=2", "CUBATCH_POLICY=garbage", "CUBATCH_STATS=json", "CUBATCH_MAX_COPY=1T",
                         "CUBATCH_SRC_ORDER=any", "CUBATCH_MAX_BATCH=8", NULL};
    struct res r = opsprog_with(env);
    const char *want[] = {
        "cubatch: option policy = h2d:0-max,d2h:0-max,d2d:0-max (default: the value given was rejected)\n",
        "cubatch: option stats = json (from the environment)\n",
        "cubatch: option max_copy = 1T (from the environment)\n",
        "cubatch: option src_order = any (from the environment)\n",
        "cubatch: option max_batch = 8 (from the environment)\n",
        "cubatch: option min_run = 2 (default)\n",
        "cubatch: option stats_file = unset (default)\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(r.err, want[i]), "missing: %sin:\n%s", want[i], tail(r.err));
    ck_assert_msg(!strstr(r.err, "option policy = garbage") && !strstr(r.err, "option policy = \"garbage"), "%s",
                  tail(r.err)); /* the rejected value is in the warning, not in the dump */
    res_free(&r);
}
END_TEST

START_TEST(long_values_cut_and_control_characters_escaped)
{
    static char policy[10240 + 32];
    strcpy(policy, "CUBATCH_POLICY=");
    memset(policy + 15, 'a', 10240);
    policy[15 + 10240] = 0;
    const char *env[] = {policy, "CUBATCH_SRC_ORDER=a\nforged line\033[31mred", NULL};
    struct res r = opsprog_with(env);
    ck_assert_msg(strstr(r.err, "aaaa\"... (10240 bytes) is not valid: "), "%s", tail(r.err));
    ck_assert_msg(strstr(r.err, "; keeping the default\n"), "%s", tail(r.err));
    ck_assert_msg(strstr(r.err, "CUBATCH_SRC_ORDER=\"a\\nforged line\\x1b[31mred\" is not valid"), "%s", tail(r.err));
    ck_assert_msg(!strchr(r.err, '\033'), "an escape character reached stderr: %s", tail(r.err));
    for (const char *l = r.err; *l; l = strchr(l, '\n') + 1) /* every line is cubatch's own */
        ck_assert_msg(!strncmp(l, "cubatch: warning: ", 18), "a line not cubatch's: %.200s", l);
    res_free(&r);
}
END_TEST

START_TEST(unknown_names_get_the_closest_option)
{
    const char *env[] = {"CUBATCH_MAXBATCH=8", "CUBATCH_STAT=on", "CUBATCH_ZQXJ=1", "CUBATCH_LIBRARY=/x.so", NULL};
    struct res r = opsprog_with(env);
    ck_assert_msg(strstr(r.err, "cubatch: warning: \"CUBATCH_MAXBATCH\" is not a cubatch option (did you mean "
                                "CUBATCH_MAX_BATCH?); it is ignored\n"), "%s", tail(r.err));
    ck_assert_msg(strstr(r.err, "\"CUBATCH_STAT\" is not a cubatch option (did you mean CUBATCH_STATS?)"), "%s",
                  tail(r.err));
    ck_assert_msg(strstr(r.err, "\"CUBATCH_ZQXJ\" is not a cubatch option (cubatch --help lists them)"), "%s",
                  tail(r.err));
    ck_assert_int_eq(count_lines_with(r.err, "\n"), 3); /* the launcher's CUBATCH_LIBRARY is no mistake */
    res_free(&r);
}
END_TEST

/* 120 warnings: 100 printed, then one line; notices are not counted. */
START_TEST(the_cap_counts_warnings_only)
{
    static char names[120][32];
    const char *env[124];
    int ne = 0;
    env[ne++] = "CUBATCH_LOG=2";
    for (int i = 0; i < 120; i++) {
        snprintf(names[i], sizeof names[i], "CUBATCH_UNKNOWN_%03d=1", i);
        env[ne++] = names[i];
    }
    env[ne] = NULL;
    struct res r = opsprog_with(env);
    ck_assert_int_eq(count_lines_with(r.err, "cubatch: warning: "), 101);
    ck_assert_int_eq(count_lines_with(r.err, "cubatch: warning: further warnings suppressed\n"), 1);
    ck_assert_msg(strstr(r.err, "cubatch: option log = 2 (from the environment)\n"), "%s", tail(r.err));
    res_free(&r);
}
END_TEST

START_TEST(policy_beyond_max_copy_names_the_limit)
{
    const char *env[] = {"CUBATCH_POLICY=h2d:1G-2G", NULL};
    struct res r = opsprog_with(env);
    ck_assert_msg(strstr(r.err, "CUBATCH_POLICY=\"h2d:1G-2G\" is not valid: h2d:1G-2G starts above "
                                "CUBATCH_MAX_COPY (1M): no copy could ever use it"), "%s", tail(r.err));
    res_free(&r);
    const char *raised[] = {"CUBATCH_POLICY=h2d:1G-2G", "CUBATCH_MAX_COPY=1T", NULL};
    r = opsprog_with(raised);
    ck_assert_str_eq(r.err, "");
    res_free(&r);
}
END_TEST

/* ---- processes without CUDA -------------------------------------------------------------------- */

START_TEST(dlsym_does_not_find_cuda_that_is_not_there)
{
    const char *argv[] = {NOCUDA, NULL};
    const char *env[] = {"CUBATCH_STATS=on", NULL};
    struct res plain = run(argv, 0, env), shim = run(argv, PRELOAD, env);
    ck_assert_int_eq(shim.status, 0);
    ck_assert_str_eq(plain.out, shim.out);
    ck_assert_msg(strstr(shim.out, "cuStreamSynchronize_found: 0\n"), "%s", shim.out);
    ck_assert_str_eq(shim.err, "");
    res_free(&plain);
    res_free(&shim);
}
END_TEST

START_TEST(weak_reference_call_answers_quietly)
{
    const char *argv[] = {NOCUDA, "weak", NULL};
    struct res plain = run(argv, 0, NULL), shim = run(argv, PRELOAD, NULL);
    ck_assert_str_eq(plain.out, "weak: unbound\n");
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY);
    if (!driver) /* no driver on this machine: what the toolkit's stub driver answers */
        ck_assert_str_eq(shim.out, "weak: bound rc=34\n");
    else
        dlclose(driver);
    ck_assert_msg(shim.err[0] == 0, "stderr: %s", shim.err);
    res_free(&plain);
    res_free(&shim);
}
END_TEST

/* Median of three runs of dl_threads MODE 4 threads, in seconds. */
static double lookup_seconds(const char *mode, int how, long *found)
{
    double t[3];
    for (int k = 0; k < 3; k++) {
        const char *argv[] = {DL_THREADS, mode, "4", "5000", NULL};
        struct res r = run(argv, how, NULL);
        ck_assert_msg(r.status == 0, "%s%s", r.out, tail(r.err));
        char m[16];
        int th;
        long it;
        ck_assert_int_eq(sscanf(r.out, "dl_threads %15s %d %ld %lf %ld", m, &th, &it, &t[k], found), 5);
        res_free(&r);
    }
    double lo = t[0] < t[1] ? t[0] : t[1], hi = t[0] < t[1] ? t[1] : t[0];
    return t[2] < lo ? lo : t[2] > hi ? hi : t[2];
}

/* dlsym of driver names (and of cu-prefixed names that are not) from four
 * threads costs a program without CUDA at most a few times what it costs
 * without cubatch; a search of the library path per lookup made it 60-300x. */
START_TEST(lookups_from_threads_stay_cheap)
{
#ifdef __SANITIZE_THREAD__
    return; /* ThreadSanitizer's own locking dominates every lookup */
#endif
    const char *modes[] = {"driver", "cuprefix"};
    for (int i = 0; i < 2; i++) {
        long found_plain = -1, found_shim = -1;
        double plain = lookup_seconds(modes[i], 0, &found_plain);
        double shim = lookup_seconds(modes[i], PRELOAD, &found_shim);
        ck_assert_msg(shim <= 4 * plain + 0.1, "%s: %.4f s with cubatch, %.4f s without", modes[i], shim, plain);
        ck_assert_int_eq(found_shim, found_plain);
    }
}
END_TEST

int main(void)
{
    const struct th_case cases[] = {
        {"reports", TH_TESTS(two_processes_two_reports, six_processes_six_reports, host_name_and_percent_in_the_name,
                             one_name_many_processes_never_torn, fork_child_reports_its_own_work, write_failure_says_why,
                             file_alone_means_text_report, fifo_nobody_reads_does_not_hang)},
        {"report_names", TH_TESTS(fifo_with_a_reader_gets_the_report, fifo_behind_an_escape_does_not_hang,
                                  long_file_name_gives_its_length)},
        {"messages", TH_TESTS(log_0_silences_every_message, empty_values_mean_the_default, log_2_shows_values_in_use_in_their_words,
                              long_values_cut_and_control_characters_escaped, unknown_names_get_the_closest_option,
                              the_cap_counts_warnings_only, policy_beyond_max_copy_names_the_limit)},
        {"without_cuda", TH_TESTS(dlsym_does_not_find_cuda_that_is_not_there, weak_reference_call_answers_quietly,
                                  lookups_from_threads_stay_cheap)},
    };
    return th_check_main("ops", cases, sizeof cases / sizeof cases[0], 240);
}
