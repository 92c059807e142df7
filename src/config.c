/* config.c - the option table (options.def) read from the environment once.
 * Parsing follows one rule: the whole string must be understood, or the default
 * stays and a warning names the variable and what it accepts.  A CUBATCH_ variable
 * that names no option gets a warning too, with the closest option's name
 * (suggest.c): a misspelt option would otherwise be ignored without a word.
 * The launcher runs the same code before it starts the program
 * (cubatch__check_options in init.c, through tools/cubatch-check.c), so the two
 * cannot disagree about what is valid. */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

/* The CHECK column's rules (options.def); each is described there. */
typedef int cb_check_fn(const char *text, int ok, uint64_t *v, char *why, size_t wlen);
static cb_check_fn check_NONE, check_STATS, check_SRC_ORDER, check_FILE, check_POLICY;

const char *const cb_opt_type_names[] = {[CB_T_BOOL] = "BOOL", [CB_T_SIZE] = "SIZE", [CB_T_UINT] = "UINT",
                                         [CB_T_ENUM] = "ENUM", [CB_T_STRING] = "STRING"};

/* Each row at the index of its own id; tests/unit/check_units.c checks that every
 * row's id is its index (a row left out would leave a hole with id 0). */
const struct cb_option cb_options[CB_OPTION_COUNT] = {
#define CB_OPTION(name, type, def, lo, hi, values, check, doc)                                              \
    [CB_OPT_##name] = {CB_OPT_##name, #name,  CB_T_##type, (uint64_t)(def), (uint64_t)(lo), (uint64_t)(hi), \
                       values,        check_##check, #check, doc},
#include "options.def"
#undef CB_OPTION
};

/* Defaults until cb_config_load(); log level 1 so early warnings are seen. */
/* Read inline by cb_opt() (internal.h): the copy path reads options without a call. */
uint64_t cb_opt_values[CB_OPTION_COUNT] = {
#define CB_OPTION(name, type, def, lo, hi, values, check, doc) [CB_OPT_##name] = (uint64_t)(def),
#include "options.def"
#undef CB_OPTION
};
static const char *cb_strings[CB_OPTION_COUNT];

/* Where each value in use came from, for the option dump (log level 2). */
enum cb_source { CB_FROM_DEFAULT, CB_FROM_ENV, CB_FROM_REJECTED, CB_FROM_FILE };
static unsigned char cb_source[CB_OPTION_COUNT];
/* What the dump shows for a STRING option its user interpreted (the policy). */
static const char *cb_shown[CB_OPTION_COUNT];

const char *cb_opt_str(enum cb_option_id id) { return cb_strings[id]; }

void cb_opt_reject(enum cb_option_id id)
{
    cb_opt_values[id] = cb_options[id].def;
    cb_strings[id] = NULL;
    cb_source[id] = CB_FROM_REJECTED;
}

void cb_opt_set_shown(enum cb_option_id id, const char *text) { cb_shown[id] = text; }

const char *const cb_bool_words[8] = {"1", "0", "on", "off", "yes", "no", "true", "false"};

static int parse_bool(const char *s, uint64_t *out)
{
    for (size_t i = 0; i < 8; i++)
        if (!strcasecmp(s, cb_bool_words[i])) {
            *out = i % 2 == 0;
            return 0;
        }
    return -1;
}

/* Digits, then optionally K/M/G/T with an optional "iB" or "B"; all binary. */
static int parse_number(const char *s, int allow_suffix, uint64_t *out)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    unsigned shift = 0;
    if (*end && allow_suffix) {
        switch (toupper((unsigned char)*end)) {
        case 'K': shift = 10; break;
        case 'M': shift = 20; break;
        case 'G': shift = 30; break;
        case 'T': shift = 40; break;
        default: return -1;
        }
        end++;
        if (!strcasecmp(end, "iB") || !strcasecmp(end, "B"))
            end += strlen(end);
    }
    if (*end)
        return -1;
    if (shift && v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

int cb_parse_size(const char *text, uint64_t *out) { return parse_number(text, 1, out); }

static int parse_enum(const char *s, const char *values, uint64_t *out)
{
    uint64_t idx = 0;
    size_t len = strlen(s);
    for (const char *p = values; *p; idx++) {
        const char *bar = strchr(p, '|');
        size_t wl = bar ? (size_t)(bar - p) : strlen(p);
        if (wl == len && !strncasecmp(p, s, len)) {
            *out = idx;
            return 0;
        }
        p += wl + (bar ? 1 : 0);
    }
    return -1;
}

/* The type's own rule: 0 ok, -1 malformed or out of range. */
static int parse_type(const struct cb_option *o, const char *text, uint64_t *out)
{
    int rc = -1;
    switch (o->type) {
    case CB_T_BOOL: return parse_bool(text, out);
    case CB_T_SIZE: rc = parse_number(text, 1, out); break;
    case CB_T_UINT: rc = parse_number(text, 0, out); break;
    case CB_T_ENUM: return parse_enum(text, o->values, out);
    case CB_T_STRING: *out = 0; return 0;
    }
    return rc || *out < o->lo || *out > o->hi ? -1 : 0;
}

/* The type's rule, then the option's own: 0 ok, else -1 with why ("" when the
 * type's rule refused it: the message then says what the type accepts). */
static int parse_value(const struct cb_option *o, const char *text, uint64_t *out, char *why, size_t wlen)
{
    why[0] = 0;
    int ok = parse_type(o, text, out) == 0;
    return o->check(text, ok, out, why, wlen);
}

/* ---- the CHECK column ------------------------------------------------------------ */

static int check_NONE(const char *text, int ok, uint64_t *v, char *why, size_t wlen)
{
    (void)text, (void)v, (void)why, (void)wlen;
    return ok ? 0 : -1;
}

_Static_assert(CB_STATS_OFF == 0 && CB_STATS_ON == 1, "a boolean word's value is the stats mode it means");
static int check_STATS(const char *text, int ok, uint64_t *v, char *why, size_t wlen)
{
    (void)why, (void)wlen;
    return ok || parse_bool(text, v) == 0 ? 0 : -1;
}

static int check_SRC_ORDER(const char *text, int ok, uint64_t *v, char *why, size_t wlen)
{
    (void)text;
    if (ok && *v == CB_SRC_ORDER_DURING) {
        snprintf(why, wlen, "during_api_call is refused, since a deferred copy cannot promise that its source "
                            "was read before the program's call returned");
        return -1;
    }
    return ok ? 0 : -1;
}

/* The policy's bands must fit CUBATCH_MAX_COPY: init.c checks them through
 * policy.c (a layer above this file) once every option is read. */
static int check_POLICY(const char *text, int ok, uint64_t *v, char *why, size_t wlen)
{
    return check_NONE(text, ok, v, why, wlen);
}

/* CUBATCH_STATS_FILE's escapes: %p the process id, %h the host name, %% a
 * percent sign (as valgrind, LLVM_PROFILE_FILE and Nsight Systems take them);
 * and a length a path can have (the warning then gives the real length). */
static int check_FILE(const char *pattern, int ok, uint64_t *v, char *why, size_t wlen)
{
    (void)ok, (void)v;
    size_t n = strlen(pattern);
    if (n >= PATH_MAX) {
        snprintf(why, wlen, "a path has at most %d bytes", PATH_MAX - 1);
        return -1;
    }
    for (const char *p = pattern; *p; p++) {
        if (*p != '%')
            continue;
        p++;
        if (*p == 'p' || *p == 'h' || *p == '%')
            continue;
        char what[16];
        if (!*p)
            snprintf(what, sizeof what, "a lone %%");
        else if (isprint((unsigned char)*p))
            snprintf(what, sizeof what, "%%%c", *p);
        else
            snprintf(what, sizeof what, "%%\\x%02x", (unsigned char)*p);
        snprintf(why, wlen, "%s is not an escape it takes (%%p process id, %%h host name, %%%% a percent sign)", what);
        return -1;
    }
    return 0;
}

static const char *accepts(const struct cb_option *o, char *buf, size_t len)
{
    switch (o->type) {
    case CB_T_BOOL:
        snprintf(buf, len, "%s/%s, %s/%s, %s/%s or %s/%s", cb_bool_words[0], cb_bool_words[1], cb_bool_words[2],
                 cb_bool_words[3], cb_bool_words[4], cb_bool_words[5], cb_bool_words[6], cb_bool_words[7]);
        return buf;
    case CB_T_SIZE:
    {
        char lo[24], hi[24];
        snprintf(buf, len, "a byte count from %s to %s (digits, optionally with K, M, G or T)",
                 cb_format_size(o->lo, lo, sizeof lo), cb_format_size(o->hi, hi, sizeof hi));
        return buf;
    }
    case CB_T_UINT:
        snprintf(buf, len, "an integer from %llu to %llu", (unsigned long long)o->lo,
                 (unsigned long long)o->hi);
        return buf;
    case CB_T_ENUM: {
        char w[96];
        snprintf(buf, len, "one of %s", cb_option_words(o, w, sizeof w));
        return buf;
    }
    case CB_T_STRING: return "text";
    }
    return "";
}

static const struct cb_option *find_option(const char *name)
{
    for (size_t i = 0; i < CB_OPTION_COUNT; i++)
        if (!strcmp(cb_options[i].name, name))
            return &cb_options[i];
    return NULL;
}

int cb_parse_option(const char *name, const char *text, uint64_t *out)
{
    const struct cb_option *o = find_option(name);
    char why[CB_QUOTE_LEN];
    if (!o || !text)
        return -1;
    return parse_value(o, text, out, why, sizeof why);
}

const char *cb_format_size(uint64_t v, char *buf, size_t len)
{
    static const char units[] = "KMGT";
    if (v == UINT64_MAX) {
        snprintf(buf, len, "max");
        return buf;
    }
    for (int k = 4; k >= 1; k--) {
        uint64_t unit = (uint64_t)1 << (10 * k);
        if (v >= unit && v % unit == 0) {
            snprintf(buf, len, "%llu%c", (unsigned long long)(v / unit), units[k - 1]);
            return buf;
        }
    }
    snprintf(buf, len, "%llu", (unsigned long long)v);
    return buf;
}

const char *cb_option_env(const struct cb_option *o, char *var, size_t len)
{
    size_t k = 0;
    for (const char *p = "CUBATCH_"; *p && k < len - 1; p++) var[k++] = *p;
    for (const char *p = o->name; *p && k < len - 1; p++) var[k++] = (char)toupper((unsigned char)*p);
    var[k] = 0;
    return var;
}

const char *cb_option_word(const struct cb_option *o, uint64_t k, char *buf, size_t len)
{
    const char *p = o->values;
    for (; k > 0 && strchr(p, '|'); k--)
        p = strchr(p, '|') + 1;
    const char *bar = k ? NULL : strchr(p, '|');
    snprintf(buf, len, "%.*s", bar ? (int)(bar - p) : 0, p);
    return buf;
}

const char *cb_option_words(const struct cb_option *o, char *buf, size_t len)
{
    size_t n = strlen(o->values);
    snprintf(buf, len, "%.*s", (int)(n && o->values[n - 1] == '|' ? n - 1 : n), o->values);
    return buf;
}

/* The launcher's check reads the options only: what happens to a rejected value
 * is the launcher's to say (it does not start the program). */
static int cb_checking;
static const char *then(const char *consequence) { return cb_checking ? "" : consequence; }

/* Read option i from the environment; 1 when its value was rejected. */
static int load_one(size_t i)
{
    const struct cb_option *o = &cb_options[i];
    char var[64], q[CB_QUOTE_LEN], why[CB_QUOTE_LEN + 128];
    cb_option_env(o, var, sizeof var);
    const char *text = getenv(var);
    if (!text)
        return 0;
    if (!*text) { /* the same as unset, for every option */
        if (!cb_checking)
            cb_log(CB_LOG_NOTICE, "%s is set but empty: the default, as if unset", var);
        return 0;
    }
    uint64_t v;
    if (parse_value(o, text, &v, why, sizeof why)) {
        char buf[128];
        if (!why[0])
            snprintf(why, sizeof why, "it accepts %s", accepts(o, buf, sizeof buf));
        cb_warn("%s=%s is not valid: %s%s", var, cb_quote(text, q, sizeof q), why,
                then(i == CB_OPT_stats_file ? "; the report goes to stderr" : "; keeping the default"));
        cb_source[i] = CB_FROM_REJECTED;
        return 1;
    }
    if (o->type == CB_T_STRING)
        cb_strings[i] = text;
    else
        cb_opt_values[i] = v;
    cb_source[i] = CB_FROM_ENV;
    return 0;
}

/* CUBATCH_ names that are not options but are set on purpose: the launcher's
 * library path. */
static const char *const cb_env_not_options[] = {"LIBRARY"};

static int is_known_name(const char *rest, size_t len)
{
    for (size_t i = 0; i < CB_OPTION_COUNT; i++) {
        const char *n = cb_options[i].name;
        size_t k = 0;
        while (k < len && n[k] && rest[k] == toupper((unsigned char)n[k])) k++;
        if (k == len && !n[k])
            return 1;
    }
    for (size_t i = 0; i < sizeof cb_env_not_options / sizeof cb_env_not_options[0]; i++)
        if (strlen(cb_env_not_options[i]) == len && !strncmp(rest, cb_env_not_options[i], len))
            return 1;
    return 0;
}

static const char *candidate(size_t i) { return i < CB_OPTION_COUNT ? cb_options[i].name : "library"; }

/* The option (or CUBATCH_LIBRARY) closest to an unknown name, if close enough
 * to be a slip (suggest.c), as its variable's name. */
static const char *closest_name(const char *rest, size_t len, char *buf, size_t blen)
{
    const char *pick = cb_suggest(rest, len, candidate, CB_OPTION_COUNT + 1);
    if (!pick)
        return NULL;
    size_t k = snprintf(buf, blen, "CUBATCH_");
    for (const char *p = pick; *p && k < blen - 1; p++) buf[k++] = (char)toupper((unsigned char)*p);
    buf[k] = 0;
    return buf;
}

/* Every CUBATCH_ variable that names no option: one warning each. */
static int check_unknown_names(void)
{
    int bad = 0;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "CUBATCH_", 8))
            continue;
        const char *rest = *e + 8, *eq = strchr(rest, '=');
        size_t len = eq ? (size_t)(eq - rest) : strlen(rest);
        if (is_known_name(rest, len))
            continue;
        char name[CB_QUOTE_LEN], q[CB_QUOTE_LEN], hint[80];
        size_t n = (size_t)(8 + len) < sizeof name - 1 ? 8 + len : sizeof name - 1;
        memcpy(name, *e, n);
        name[n] = 0;
        const char *near = closest_name(rest, len, hint, sizeof hint);
        if (near)
            cb_warn("%s is not a cubatch option (did you mean %s?)%s", cb_quote(name, q, sizeof q), near,
                    then("; it is ignored"));
        else
            cb_warn("%s is not a cubatch option (cubatch --help lists them)%s", cb_quote(name, q, sizeof q),
                    then("; it is ignored"));
        bad++;
    }
    return bad;
}

int cb_config_load(int checking)
{
    cb_checking = checking;
    /* CUBATCH_LOG first, so that it governs every message about the others. */
    int bad = load_one(CB_OPT_log);
    cb_log_set_level((unsigned)cb_opt_values[CB_OPT_log]);
    for (size_t i = 0; i < CB_OPTION_COUNT; i++)
        if (i != CB_OPT_log)
            bad += load_one(i);
    /* a FIFO nobody reads would hold the program at exit (fifo.c) */
    if (!cb_checking && cb_fifo_refused(cb_strings[CB_OPT_stats_file])) {
        cb_strings[CB_OPT_stats_file] = NULL;
        cb_source[CB_OPT_stats_file] = CB_FROM_REJECTED;
    }
    /* A report file alone asks for a report: text, unless CUBATCH_STATS says;
     * also one that was refused (its report then goes to stderr, as said). */
    if (cb_source[CB_OPT_stats_file] != CB_FROM_DEFAULT && cb_source[CB_OPT_stats] != CB_FROM_ENV) {
        cb_opt_values[CB_OPT_stats] = CB_STATS_ON;
        cb_source[CB_OPT_stats] = CB_FROM_FILE;
    }
    if (cb_opt_values[CB_OPT_min_run] > cb_opt_values[CB_OPT_max_batch]) {
        cb_warn("CUBATCH_MIN_RUN (%llu) is above CUBATCH_MAX_BATCH (%llu): runs will go out copy by copy",
                (unsigned long long)cb_opt_values[CB_OPT_min_run], (unsigned long long)cb_opt_values[CB_OPT_max_batch]);
    }
    return bad + check_unknown_names();
}

/* The value in use, in the option's own words: an enum's word, a size with its
 * unit, the policy's bands. */
static const char *value_text(size_t i, char *buf, size_t len)
{
    const struct cb_option *o = &cb_options[i];
    char q[CB_QUOTE_LEN];
    switch (o->type) {
    case CB_T_SIZE: return cb_format_size(cb_opt_values[i], buf, len);
    case CB_T_ENUM: return cb_option_word(o, cb_opt_values[i], buf, len);
    case CB_T_STRING:
        if (cb_shown[i])
            snprintf(buf, len, "%s", cb_shown[i]);
        else if (cb_strings[i] && *cb_strings[i])
            snprintf(buf, len, "%s", cb_quote(cb_strings[i], q, sizeof q));
        else
            snprintf(buf, len, "unset");
        return buf;
    default: snprintf(buf, len, "%llu", (unsigned long long)cb_opt_values[i]); return buf;
    }
}

const char *cb_option_default(const struct cb_option *o, char *buf, size_t len)
{
    switch (o->type) {
    case CB_T_SIZE: return cb_format_size(o->def, buf, len);
    case CB_T_ENUM: return cb_option_word(o, o->def, buf, len);
    case CB_T_STRING: snprintf(buf, len, "unset"); return buf;
    default: snprintf(buf, len, "%llu", (unsigned long long)o->def); return buf;
    }
}

void cb_config_describe(void)
{
    static const char *const from[] = {"default", "from the environment", "default: the value given was rejected",
                                       "implied by CUBATCH_STATS_FILE"};
    for (size_t i = 0; i < CB_OPTION_COUNT; i++) {
        char buf[512];
        cb_log(CB_LOG_NOTICE, "option %s = %s (%s)", cb_options[i].name, value_text(i, buf, sizeof buf),
               from[cb_source[i]]);
    }
}
