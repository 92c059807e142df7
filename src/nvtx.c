/* nvtx.c - NVTX ranges and markers for profilers (nvtx.h says what and when).
 *
 * The range's text, e.g. "cubatch: 256 copies H2D 1.0 MiB, kernel (flush_full)":
 * the copies of this submission, their directions as their entry points name
 * them (cuMemcpyAsync infers its direction from the pointers: "any"), their
 * bytes, what they were merged into (rule 18: "32 copies H2D 128.0 KiB merged
 * into 1, loop"), the engine (kernel, batch, or loop: one by one) and the flush reason,
 * named as its counter in the report.  The marker's text, e.g. "cubatch: run
 * ended: a call naming the run's stream (flush_stream)", uses the reason's
 * meaning from stats.def. */
#include "nvtx.h"

#if CB_NVTX
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 when a tool may be attached (NVTX_INJECTION64_PATH set), 0 when not, -1 not
 * yet known: read once, relaxed (every thread reads the same answer). */
static int cb_nvtx_state = -1;

static int tool_attached(void)
{
    int s = __atomic_load_n(&cb_nvtx_state, __ATOMIC_RELAXED);
    if (CB_LIKELY(s >= 0))
        return s;
    const char *p = getenv("NVTX_INJECTION64_PATH");
    s = p && *p;
    __atomic_store_n(&cb_nvtx_state, s, __ATOMIC_RELAXED);
    return s;
}

/* The flush reasons: their counters' names and meanings, from stats.def. */
static const char *const why_name[CB_WHY_COUNT] = {
#define CB_STAT(name, kind, doc)
#define CB_FLUSH(name, does, doc) [CB_WHY_##name] = #name,
#include "stats.def"
#undef CB_FLUSH
#undef CB_STAT
};
static const char *const why_doc[CB_WHY_COUNT] = {
#define CB_STAT(name, kind, doc)
#define CB_FLUSH(name, does, doc) [CB_WHY_##name] = doc,
#include "stats.def"
#undef CB_FLUSH
#undef CB_STAT
};

/* Why the run now being submitted by this thread goes out (-1: not said). */
static CB_TLS int cb_nvtx_why = -1;

static void message(nvtxEventAttributes_t *a, const char *text)
{
    memset(a, 0, sizeof *a);
    a->version = NVTX_VERSION;
    a->size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a->messageType = NVTX_MESSAGE_TYPE_ASCII;
    a->message.ascii = text;
}

void cb_nvtx_flush(enum cb_flush_why why)
{
    if (CB_LIKELY(!tool_attached()))
        return;
    cb_nvtx_why = (int)why;
    /* no marker where cubatch decided on its own (a chunk, the timer, the pace rule) */
    if (!(cb_flush_does(why) & CB_FD_MARK))
        return;
    const char *doc = why_doc[why];
    if (!strncmp(doc, "flushes: ", 9))
        doc += 9;
    char text[192];
    snprintf(text, sizeof text, "cubatch: run ended: %s (%s)", doc, why_name[why]);
    nvtxEventAttributes_t a;
    message(&a, text);
    nvtxMarkEx(&a);
}

/* The direction an entry point names: its row's in hooks.def. */
static int hook_direction(unsigned hook)
{
    return hook < CB_HOOK_COUNT ? cb_hook_rows[hook].dir : CB_D_ANY;
}

static void human_bytes(size_t b, char *out, size_t len)
{
    if (b < 1024)
        snprintf(out, len, "%zu B", b);
    else if (b < ((size_t)1 << 20))
        snprintf(out, len, "%.1f KiB", (double)b / 1024);
    else if (b < ((size_t)1 << 30))
        snprintf(out, len, "%.1f MiB", (double)b / (1 << 20));
    else
        snprintf(out, len, "%.1f GiB", (double)b / (1 << 30));
}

void cb_nvtx_submit_begin(const struct cb_copies *c, size_t queued, const char *engine)
{
    if (CB_LIKELY(!tool_attached()))
        return;
    static const char *const dir_name[CB_D_COUNT + 1] = {
#define CB_DIRECTION(NAME, word, doc) [CB_D_##NAME] = #NAME,
#include "directions.def"
#undef CB_DIRECTION
        [CB_D_ANY] = "any",
    };
    int seen[CB_D_COUNT + 1] = {0};
    size_t bytes = 0;
    for (size_t i = 0; i < c->n; i++) {
        seen[hook_direction(c->hooks[i])] = 1;
        bytes += c->rows && c->rows[i].height ? c->sizes[i] * c->rows[i].height : c->sizes[i]; /* 2D: every row */
    }
    char dirs[32] = "", size[32];
    for (int d = 0; d <= CB_D_COUNT; d++)
        if (seen[d]) {
            if (*dirs)
                strcat(dirs, "+");
            strcat(dirs, dir_name[d]);
        }
    human_bytes(bytes, size, sizeof size);
    int why = cb_nvtx_why;
    char text[192], merged[48] = "";
    if (queued != c->n)
        snprintf(merged, sizeof merged, " merged into %zu", c->n);
    snprintf(text, sizeof text, "cubatch: %zu cop%s %s %s%s, %s (%s)", queued, queued == 1 ? "y" : "ies", dirs, size,
             merged, engine, why >= 0 && why < CB_WHY_COUNT ? why_name[why] : "unknown reason");
    nvtxEventAttributes_t a;
    message(&a, text);
    nvtxRangePushEx(&a);
}

void cb_nvtx_submit_end(void)
{
    if (CB_LIKELY(!tool_attached()))
        return;
    cb_nvtx_why = -1;
    nvtxRangePop();
}
#else
typedef int cb_nvtx_compiled_out; /* ISO C: a translation unit declares something */
#endif
