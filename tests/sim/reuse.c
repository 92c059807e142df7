/* reuse.c - handles that come back (CUSIM_HANDLE_REUSE=1).
 *
 * The real driver's handles are addresses of its own objects: once a context or
 * a stream is gone, a context or stream made later may get the very same value.
 * A library that keys state by a handle (cubatch keys runs by stream, its copy
 * kernel's module, side stream and event pool by context) must forget it when
 * the object dies, or the new one inherits it.  By default the simulated driver
 * never gives a value twice; with CUSIM_HANDLE_REUSE=1 cuCtxCreate* takes the
 * handle of a destroyed created context (made anew, empty: no module, stream or
 * memory of the old one is alive in it) and cuStreamCreate* the handle of a
 * stream that is gone (destroyed, or ended with its context) whose work has all
 * run.  A stream of a context that is gone is taken first, then the one made
 * first (a program's streams before the helpers a library made after them in
 * the same context). */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

int sim_handle_reuse(void)
{
    const char *v = getenv("CUSIM_HANDLE_REUSE");
    return v && v[0] == '1' && !v[1];
}

struct sim_ctx *sim_reuse_ctx(struct sim_ctx *list)
{
    if (!sim_handle_reuse())
        return NULL;
    for (struct sim_ctx *c = list; c; c = c->next) /* newest first */
        if (!c->alive && !c->primary)
            return c;
    return NULL;
}

struct sim_stream *sim_reuse_stream(struct sim_ctx *list)
{
    if (!sim_handle_reuse())
        return NULL;
    struct sim_stream *best = NULL, **best_link = NULL;
    int best_alive = 1;
    for (struct sim_ctx *c = list; c; c = c->next)
        for (struct sim_stream **l = &c->streams; *l; l = &(*l)->next) {
            struct sim_stream *s = *l;
            if (s->kind == ST_USER && !s->alive && !s->cap && !sim_node_pending(s->last) &&
                (!best || c->alive < best_alive || (c->alive == best_alive && s->id < best->id))) {
                best = s;
                best_link = l;
                best_alive = c->alive;
            }
        }
    if (!best)
        return NULL;
    *best_link = best->next; /* out of its old context's list: the caller links it anew */
    memset(best, 0, sizeof *best);
    return best;
}
