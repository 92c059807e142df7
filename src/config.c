/* config.c - the option table (options.def) read from the environment once.
 * Parsing follows one rule: the whole string must be understood, or the default
 * stays and a warning names the variable and what it accepts. */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum cb_opt_type { CB_T_BOOL, CB_T_SIZE, CB_T_UINT, CB_T_ENUM, CB_T_STRING };

struct cb_option {
    enum cb_option_id id; /* must equal the row's index: checked by cb_opt() users */
    const char *name;
    enum cb_opt_type type;
    uint64_t def, lo, hi;
    const char *values;
    const char *doc;
};

static const struct cb_option cb_options[CB_OPTION_COUNT] = {
#define CB_OPTION(name, type, def, lo, hi, values, doc) \
    {CB_OPT_##name, #name, CB_T_##type, (uint64_t)(def), (uint64_t)(lo), (uint64_t)(hi), values, doc},
#include "options.def"
#undef CB_OPTION
};

/* Defaults until cb_config_load(); log level 1 so early warnings are seen. */
static uint64_t cb_values[CB_OPTION_COUNT] = {
#define CB_OPTION(name, type, def, lo, hi, values, doc) (uint64_t)(def),
#include "options.def"
#undef CB_OPTION
};
static const char *cb_strings[CB_OPTION_COUNT];

uint64_t cb_opt(enum cb_option_id id) { return cb_values[id]; }
const char *cb_opt_str(enum cb_option_id id) { return cb_strings[id]; }

static int parse_bool(const char *s, uint64_t *out)
{
    static const char *const yes[] = {"1", "on", "yes", "true"};
    static const char *const no[] = {"0", "off", "no", "false"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(s, yes[i])) { *out = 1; return 0; }
        if (!strcasecmp(s, no[i])) { *out = 0; return 0; }
    }
    return -1;
}

/* Digits, then optionally K/M/G with an optional "iB" or "B"; all binary. */
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

static int parse_value(const struct cb_option *o, const char *text, uint64_t *out)
{
    int rc = -1;
    switch (o->type) {
    case CB_T_BOOL: return parse_bool(text, out);
    case CB_T_SIZE: rc = parse_number(text, 1, out); break;
    case CB_T_UINT: rc = parse_number(text, 0, out); break;
    case CB_T_ENUM:
        rc = parse_enum(text, o->values, out);
        /* stats also takes the boolean words: 1 = on, 0 = off */
        if (rc && o->id == CB_OPT_stats && parse_bool(text, out) == 0)
            rc = 0;
        return rc;
    case CB_T_STRING: *out = 0; return 0;
    }
    return rc; /* numbers: the caller checks the range */
}

static const char *accepts(const struct cb_option *o, char *buf, size_t len)
{
    switch (o->type) {
    case CB_T_BOOL: return "1/0, on/off, yes/no or true/false";
    case CB_T_SIZE:
        snprintf(buf, len, "a byte count from %llu to %llu, optionally with K, M or G",
                 (unsigned long long)o->lo, (unsigned long long)o->hi);
        return buf;
    case CB_T_UINT:
        snprintf(buf, len, "an integer from %llu to %llu", (unsigned long long)o->lo,
                 (unsigned long long)o->hi);
        return buf;
    case CB_T_ENUM: snprintf(buf, len, "one of %s", o->values); return buf;
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

int cubatch__parse_option(const char *name, const char *text, uint64_t *out)
{
    const struct cb_option *o = find_option(name);
    if (!o || !text)
        return -1;
    if (parse_value(o, text, out))
        return -1;
    if ((o->type == CB_T_SIZE || o->type == CB_T_UINT) && (*out < o->lo || *out > o->hi))
        return -1;
    return 0;
}

void cb_config_load(void)
{
    for (size_t i = 0; i < CB_OPTION_COUNT; i++) {
        const struct cb_option *o = &cb_options[i];
        char var[64];
        size_t k = 0;
        for (const char *p = "CUBATCH_"; *p; p++) var[k++] = *p;
        for (const char *p = o->name; *p && k < sizeof var - 1; p++) var[k++] = (char)toupper((unsigned char)*p);
        var[k] = 0;
        const char *text = getenv(var);
        if (!text)
            continue;
        if (o->type == CB_T_STRING) {
            cb_strings[i] = text;
            continue;
        }
        uint64_t v;
        if (cubatch__parse_option(o->name, text, &v)) {
            char buf[128];
            cb_warn("%s=\"%s\" is not valid: it accepts %s; keeping the default", var, text,
                    accepts(o, buf, sizeof buf));
            continue;
        }
        cb_values[i] = v;
    }
    if (cb_values[CB_OPT_src_order] == CB_SRC_ORDER_DURING) {
        cb_warn("CUBATCH_SRC_ORDER=during_api_call is refused: a deferred copy cannot promise its "
                "source was read before the program's call returned; using stream");
        cb_values[CB_OPT_src_order] = CB_SRC_ORDER_STREAM;
    }
    if (cb_values[CB_OPT_min_run] > cb_values[CB_OPT_max_batch]) {
        cb_warn("CUBATCH_MIN_RUN (%llu) is above CUBATCH_MAX_BATCH (%llu): runs will go out copy by copy",
                (unsigned long long)cb_values[CB_OPT_min_run], (unsigned long long)cb_values[CB_OPT_max_batch]);
    }
    if (cb_policy_load(cb_strings[CB_OPT_policy]))
        cb_warn("CUBATCH_POLICY=\"%s\" is not valid: it accepts default, all, none, or a comma list of "
                "DIR:LO-HI bands (DIR h2d, d2h, d2d or h2h; sizes with K/M/G; HI may be max); keeping the default",
                cb_strings[CB_OPT_policy]);
}

void cb_config_describe(void)
{
    for (size_t i = 0; i < CB_OPTION_COUNT; i++) {
        const struct cb_option *o = &cb_options[i];
        if (o->type == CB_T_STRING)
            cb_log(CB_LOG_NOTICE, "option %s = %s", o->name, cb_strings[i] ? cb_strings[i] : "(default)");
        else
            cb_log(CB_LOG_NOTICE, "option %s = %llu", o->name, (unsigned long long)cb_values[i]);
    }
}
