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
 *
 * Built at build time (never installed); `make` runs it to make the launcher,
 * tests/check_launcher.sh to compare the README's table with it. */
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

struct row {
    const char *name, *type;
    uint64_t def, lo, hi;
    const char *values, *doc;
};
static const struct row rows[] = {
#define CB_OPTION(name, type, def, lo, hi, values, doc) \
    {#name, #type, (uint64_t)(def), (uint64_t)(lo), (uint64_t)(hi), values, doc},
#include "options.def"
#undef CB_OPTION
};

static void dashed(const char *name, char *out)
{
    for (; *name; name++)
        *out++ = *name == '_' ? '-' : *name;
    *out = 0;
}

static void env_name(const char *name, char *out)
{
    out += sprintf(out, "CUBATCH_");
    for (; *name; name++)
        *out++ = (char)toupper((unsigned char)*name);
    *out = 0;
}

/* The enum's words as "a|b|c" (the row's values end in '|'). */
static void words(const struct row *r, char *out)
{
    size_t n = strlen(r->values);
    sprintf(out, "%.*s", (int)(n && r->values[n - 1] == '|' ? n - 1 : n), r->values);
}

static void number(const struct row *r, uint64_t v, char *out)
{
    if (!strcmp(r->type, "SIZE"))
        cb_format_size(v, out, 32);
    else
        sprintf(out, "%llu", (unsigned long long)v);
}

static void placeholder(const struct row *r, char *out)
{
    if (!strcmp(r->type, "BOOL"))
        strcpy(out, "0|1");
    else if (!strcmp(r->type, "UINT"))
        strcpy(out, "N");
    else if (!strcmp(r->type, "SIZE"))
        strcpy(out, "BYTES");
    else if (!strcmp(r->type, "ENUM"))
        words(r, out);
    else
        strcpy(out, strstr(r->name, "file") ? "FILE" : "TEXT");
}

static void default_of(const struct row *r, char *out)
{
    if (!strcmp(r->type, "ENUM")) {
        char w[256], *p = w;
        words(r, w);
        for (uint64_t k = 0; k < r->def && strchr(p, '|'); k++)
            p = strchr(p, '|') + 1;
        char *bar = strchr(p, '|');
        if (bar)
            *bar = 0;
        strcpy(out, p);
    } else if (!strcmp(r->type, "STRING")) {
        strcpy(out, "unset");
    } else {
        number(r, r->def, out);
    }
}

/* "lo..hi" for numbers, else "" */
static void range_of(const struct row *r, char *out)
{
    out[0] = 0;
    if (strcmp(r->type, "UINT") && strcmp(r->type, "SIZE"))
        return;
    char lo[32], hi[32];
    number(r, r->lo, lo);
    number(r, r->hi, hi);
    sprintf(out, "%s..%s", lo, hi);
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
 * values: what is typed), and a line never starts with a control character (the
 * text is one line, so only its first character). */
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
    if (strcmp(mode, "--markdown") && strcmp(mode, "--help-lines") && strcmp(mode, "--shell") &&
        strcmp(mode, "--roff")) {
        fprintf(stderr, "usage: options-doc [--markdown | --help-lines | --shell | --roff]\n");
        return 2;
    }
    if (!strcmp(mode, "--markdown")) {
        puts("| Option | Environment variable | Values | Default | Meaning |");
        puts("| --- | --- | --- | --- | --- |");
    }
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct row *r = &rows[i];
        char flag[64], env[64], ph[256], def[256], range[80];
        dashed(r->name, flag);
        env_name(r->name, env);
        placeholder(r, ph);
        default_of(r, def);
        range_of(r, range);
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
            roff_text(r->doc, 0);
            putchar('\n');
        } else if (!strcmp(mode, "--shell")) {
            printf("    %s) echo %s ;;\n", flag, r->type);
        } else if (!strcmp(mode, "--help-lines")) {
            printf("  --%s=%s  (%s, default %s%s%s) %s\n", flag, ph, env, def, *range ? ", " : "", range, r->doc);
        } else {
            printf("| `--%s` | `%s` | ", flag, env);
            md(ph);
            if (*range)
                printf(" (%s)", range);
            printf(" | `%s` | ", def);
            md(r->doc);
            puts(" |");
        }
    }
    return 0;
}
