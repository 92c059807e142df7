/* suggest.c - did you mean: the name closest to a word that names nothing, for
 * the warning about an unknown CUBATCH_ variable (config.c).  It calls only libc. */
#include "internal.h"

#include <ctype.h>
#include <string.h>

/* Optimal string alignment distance (edits, including a swap of two adjacent
 * characters), ignoring case; names longer than 64 characters are far from all.
 * Three rows of the table suffice (this may run on a program thread's stack). */
static size_t distance(const char *a, size_t la, const char *b, size_t lb)
{
    enum { N = 65 };
    if (la >= N || lb >= N)
        return (size_t)-1;
    size_t rows[3][N], *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++) prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        int ca = toupper((unsigned char)a[i - 1]);
        for (size_t j = 1; j <= lb; j++) {
            int cb = toupper((unsigned char)b[j - 1]);
            size_t best = prev[j - 1] + (ca != cb);
            if (prev[j] + 1 < best) best = prev[j] + 1;
            if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ca == toupper((unsigned char)b[j - 2]) && toupper((unsigned char)a[i - 2]) == cb &&
                prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

const char *cb_suggest(const char *word, size_t len, const char *(*name)(size_t i), size_t n)
{
    size_t best = (size_t)-1, limit = len / 3 > 1 ? len / 3 : 1;
    const char *pick = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *c = name(i);
        size_t d = distance(word, len, c, strlen(c));
        if (d < best) {
            best = d;
            pick = c;
        }
    }
    return pick && best <= limit ? pick : NULL;
}
