/* options-doc.c - print cubatch's option table, from src/options.def itself (the
 * same rows the library compiles), for the places that describe the options:
 *
 *   options-doc --markdown     the table of README.md
 *   options-doc --help-lines   one line per option for `cubatch --help`:
 *                                --NAME=VALUE  (CUBATCH_NAME, default D[, range]) doc
 *   options-doc --shell        one case arm per option for the launcher's flag
 *                              parser:  NAME) echo TYPE ;;  (NAME spelled as the flag)
 *   options-doc --roff         the option list of the man pages cubatch(1) and
 *                              cubatch(7): one .TP paragraph per option
 *   options-doc --bool-words   the words 0|1 options take, one a line
 *
 * It walks config.c's own table (cb_options): environment names, enum words and
 * defaults come from the functions the library itself uses.
 * Built at build time (never installed); `make` runs it to make the launcher,
 * tests/package/check_launcher.sh to compare the README's table with it. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* The launcher's flag: the name with '-' for '_'. */
static void dashed(const char *name, char *out)
{
    for (; *name; name++)
        *out++ = *name == '_' ? '-' : *name;
    *out = 0;
}

static void placeholder(const struct cb_option *o, char *out, size_t len)
{
    switch (o->type) {
    case CB_T_BOOL: snprintf(out, len, "0|1"); break;
    case CB_T_UINT: snprintf(out, len, "N"); break;
    case CB_T_SIZE: snprintf(out, len, "BYTES"); break;
    case CB_T_ENUM: cb_option_words(o, out, len); break;
    case CB_T_STRING: snprintf(out, len, "%s", strstr(o->name, "file") ? "FILE" : "TEXT"); break;
    }
}

static void number(const struct cb_option *o, uint64_t v, char *out, size_t len)
{
    if (o->type == CB_T_SIZE)
        cb_format_size(v, out, len);
    else
        snprintf(out, len, "%llu", (unsigned long long)v);
}

/* "lo..hi" for numbers, else "" */
static void range_of(const struct cb_option *o, char *out, size_t len)
{
    out[0] = 0;
    if (o->type != CB_T_UINT && o->type != CB_T_SIZE)
        return;
    char lo[32], hi[32];
    number(o, o->lo, lo, sizeof lo);
    number(o, o->hi, hi, sizeof hi);
    snprintf(out, len, "%s..%s", lo, hi);
}

/* s with every '|' escaped for a Markdown table cell */
static void md(const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            putchar('\\');
        putchar(*s);
    }
}

/* s as roff text: backslashes escaped, hyphens too when minus says it (flags,
 * names), and a leading '.' or '\'' kept from being read as a request. */
static void roff_text(const char *s, int minus)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", stdout);
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", stdout);
        else if (*s == '-' && minus)
            fputs("\\-", stdout);
        else
            putchar(*s);
    }
}
static void roff(const char *s) { roff_text(s, 1); }

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "--markdown";
    if (!strcmp(mode, "--bool-words")) {
        for (size_t i = 0; i < sizeof cb_bool_words / sizeof cb_bool_words[0]; i++)
            puts(cb_bool_words[i]);
        return 0;
    }
    if (strcmp(mode, "--markdown") && strcmp(mode, "--help-lines") && strcmp(mode, "--shell") &&
        strcmp(mode, "--roff")) {
        fprintf(stderr, "usage: options-doc [--markdown | --help-lines | --shell | --roff | --bool-words]\n");
        return 2;
    }
    if (!strcmp(mode, "--markdown")) {
        puts("| Option | Environment variable | Values | Default | Meaning |");
        puts("| --- | --- | --- | --- | --- |");
    }
    for (size_t i = 0; i < CB_OPTION_COUNT; i++) {
        const struct cb_option *o = &cb_options[i];
        char flag[64], env[64], ph[256], def[256], range[80];
        dashed(o->name, flag);
        cb_option_env(o, env, sizeof env);
        placeholder(o, ph, sizeof ph);
        cb_option_default(o, def, sizeof def);
        range_of(o, range, sizeof range);
        if (!strcmp(mode, "--roff")) {
            fputs(".TP\n\\fB\\-\\-", stdout);
            roff(flag);
            fputs("\\fR=\\fI", stdout);
            roff(ph);
            fputs("\\fR", stdout);
            if (*range) {
                fputs(" (", stdout);
                roff(range);
                fputs(")", stdout);
            }
            printf(", \\fB%s\\fR, default \\fB", env);
            roff(def);
            fputs("\\fR\n", stdout);
            roff_text(o->doc, 0);
            putchar('\n');
        } else if (!strcmp(mode, "--shell")) {
            printf("    %s) echo %s ;;\n", flag, cb_opt_type_names[o->type]);
        } else if (!strcmp(mode, "--help-lines")) {
            printf("  --%s=%s  (%s, default %s%s%s) %s\n", flag, ph, env, def, *range ? ", " : "", range, o->doc);
        } else {
            printf("| `--%s` | `%s` | ", flag, env);
            md(ph);
            if (*range)
                printf(" (%s)", range);
            printf(" | `%s` | ", def);
            md(o->doc);
            puts(" |");
        }
    }
    return 0;
}
