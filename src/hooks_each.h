/* hooks_each.h - code per row of hooks.def, by ACTION: the one list of actions.
 *
 * A file that wants code for some actions defines, for each of them,
 *
 *   CB_ON_<ACTION>(name, ptsz, action, aarg, params, args)
 *
 * (the row's own arguments; optionally CB_ON_OTHER for every action it does not
 * name), then includes this header where the code is to go: each row of
 * hooks.def expands to its action's macro, and a row whose action the file has
 * no code for expands to nothing.
 * The CB_ON_ macros are undefined afterwards, so the header may be included
 * again with others.  A row whose ACTION is not listed here is a compile error
 * (CB_ACT_<ACTION> undefined): adding an action means adding its line below and
 * its wrapper in hooks.c. */

#if defined(CB_ON_COPY)
#define CB_ACT_COPY CB_ON_COPY
#elif defined(CB_ON_OTHER)
#define CB_ACT_COPY CB_ON_OTHER
#else
#define CB_ACT_COPY(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_STREAM)
#define CB_ACT_STREAM CB_ON_STREAM
#elif defined(CB_ON_OTHER)
#define CB_ACT_STREAM CB_ON_OTHER
#else
#define CB_ACT_STREAM(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_STREAM2)
#define CB_ACT_STREAM2 CB_ON_STREAM2
#elif defined(CB_ON_OTHER)
#define CB_ACT_STREAM2 CB_ON_OTHER
#else
#define CB_ACT_STREAM2(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_LAUNCH)
#define CB_ACT_LAUNCH CB_ON_LAUNCH
#elif defined(CB_ON_OTHER)
#define CB_ACT_LAUNCH CB_ON_OTHER
#else
#define CB_ACT_LAUNCH(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_CTX_SYNC)
#define CB_ACT_CTX_SYNC CB_ON_CTX_SYNC
#elif defined(CB_ON_OTHER)
#define CB_ACT_CTX_SYNC CB_ON_OTHER
#else
#define CB_ACT_CTX_SYNC(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_CAPTURE_BEGIN)
#define CB_ACT_CAPTURE_BEGIN CB_ON_CAPTURE_BEGIN
#elif defined(CB_ON_OTHER)
#define CB_ACT_CAPTURE_BEGIN CB_ON_OTHER
#else
#define CB_ACT_CAPTURE_BEGIN(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_CAPTURE_END)
#define CB_ACT_CAPTURE_END CB_ON_CAPTURE_END
#elif defined(CB_ON_OTHER)
#define CB_ACT_CAPTURE_END CB_ON_OTHER
#else
#define CB_ACT_CAPTURE_END(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_STREAM_FREE)
#define CB_ACT_STREAM_FREE CB_ON_STREAM_FREE
#elif defined(CB_ON_OTHER)
#define CB_ACT_STREAM_FREE CB_ON_OTHER
#else
#define CB_ACT_STREAM_FREE(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_DESTROY_STREAM)
#define CB_ACT_DESTROY_STREAM CB_ON_DESTROY_STREAM
#elif defined(CB_ON_OTHER)
#define CB_ACT_DESTROY_STREAM CB_ON_OTHER
#else
#define CB_ACT_DESTROY_STREAM(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_CONTEXT)
#define CB_ACT_CONTEXT CB_ON_CONTEXT
#elif defined(CB_ON_OTHER)
#define CB_ACT_CONTEXT CB_ON_OTHER
#else
#define CB_ACT_CONTEXT(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_FREE)
#define CB_ACT_FREE CB_ON_FREE
#elif defined(CB_ON_OTHER)
#define CB_ACT_FREE CB_ON_OTHER
#else
#define CB_ACT_FREE(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_ALLOC)
#define CB_ACT_ALLOC CB_ON_ALLOC
#elif defined(CB_ON_OTHER)
#define CB_ACT_ALLOC CB_ON_OTHER
#else
#define CB_ACT_ALLOC(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_DESTROY_CTX)
#define CB_ACT_DESTROY_CTX CB_ON_DESTROY_CTX
#elif defined(CB_ON_OTHER)
#define CB_ACT_DESTROY_CTX CB_ON_OTHER
#else
#define CB_ACT_DESTROY_CTX(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_PRIMARY_CTX)
#define CB_ACT_PRIMARY_CTX CB_ON_PRIMARY_CTX
#elif defined(CB_ON_OTHER)
#define CB_ACT_PRIMARY_CTX CB_ON_OTHER
#else
#define CB_ACT_PRIMARY_CTX(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_RESOLVER)
#define CB_ACT_RESOLVER CB_ON_RESOLVER
#elif defined(CB_ON_OTHER)
#define CB_ACT_RESOLVER CB_ON_OTHER
#else
#define CB_ACT_RESOLVER(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_MARKER)
#define CB_ACT_MARKER CB_ON_MARKER
#elif defined(CB_ON_OTHER)
#define CB_ACT_MARKER CB_ON_OTHER
#else
#define CB_ACT_MARKER(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_EVENT)
#define CB_ACT_EVENT CB_ON_EVENT
#elif defined(CB_ON_OTHER)
#define CB_ACT_EVENT CB_ON_OTHER
#else
#define CB_ACT_EVENT(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_EVENT_ASK)
#define CB_ACT_EVENT_ASK CB_ON_EVENT_ASK
#elif defined(CB_ON_OTHER)
#define CB_ACT_EVENT_ASK CB_ON_OTHER
#else
#define CB_ACT_EVENT_ASK(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_EVENT_FORGET)
#define CB_ACT_EVENT_FORGET CB_ON_EVENT_FORGET
#elif defined(CB_ON_OTHER)
#define CB_ACT_EVENT_FORGET CB_ON_OTHER
#else
#define CB_ACT_EVENT_FORGET(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_EVENT_CREATE)
#define CB_ACT_EVENT_CREATE CB_ON_EVENT_CREATE
#elif defined(CB_ON_OTHER)
#define CB_ACT_EVENT_CREATE CB_ON_OTHER
#else
#define CB_ACT_EVENT_CREATE(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_EVENT_FOREIGN)
#define CB_ACT_EVENT_FOREIGN CB_ON_EVENT_FOREIGN
#elif defined(CB_ON_OTHER)
#define CB_ACT_EVENT_FOREIGN CB_ON_OTHER
#else
#define CB_ACT_EVENT_FOREIGN(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_CTX_EVENT)
#define CB_ACT_CTX_EVENT CB_ON_CTX_EVENT
#elif defined(CB_ON_OTHER)
#define CB_ACT_CTX_EVENT CB_ON_OTHER
#else
#define CB_ACT_CTX_EVENT(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_WAIT)
#define CB_ACT_WAIT CB_ON_WAIT
#elif defined(CB_ON_OTHER)
#define CB_ACT_WAIT CB_ON_OTHER
#else
#define CB_ACT_WAIT(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_GRAPH_LAUNCH)
#define CB_ACT_GRAPH_LAUNCH CB_ON_GRAPH_LAUNCH
#elif defined(CB_ON_OTHER)
#define CB_ACT_GRAPH_LAUNCH CB_ON_OTHER
#else
#define CB_ACT_GRAPH_LAUNCH(name, ptsz, action, aarg, params, args)
#endif

#if defined(CB_ON_LAUNCH_CONFIG)
#define CB_ACT_LAUNCH_CONFIG CB_ON_LAUNCH_CONFIG
#elif defined(CB_ON_OTHER)
#define CB_ACT_LAUNCH_CONFIG CB_ON_OTHER
#else
#define CB_ACT_LAUNCH_CONFIG(name, ptsz, action, aarg, params, args)
#endif

#define CB_HOOK(name, ptsz, action, aarg, params, args) CB_ACT_##action(name, ptsz, action, aarg, params, args)
#include "hooks.def"
#undef CB_HOOK

#undef CB_ACT_COPY
#undef CB_ACT_STREAM
#undef CB_ACT_STREAM2
#undef CB_ACT_LAUNCH
#undef CB_ACT_CTX_SYNC
#undef CB_ACT_CAPTURE_BEGIN
#undef CB_ACT_CAPTURE_END
#undef CB_ACT_STREAM_FREE
#undef CB_ACT_DESTROY_STREAM
#undef CB_ACT_CONTEXT
#undef CB_ACT_FREE
#undef CB_ACT_ALLOC
#undef CB_ACT_DESTROY_CTX
#undef CB_ACT_PRIMARY_CTX
#undef CB_ACT_RESOLVER
#undef CB_ACT_MARKER
#undef CB_ACT_EVENT
#undef CB_ACT_EVENT_ASK
#undef CB_ACT_EVENT_FORGET
#undef CB_ACT_CTX_EVENT
#undef CB_ACT_EVENT_CREATE
#undef CB_ACT_EVENT_FOREIGN
#undef CB_ACT_WAIT
#undef CB_ACT_GRAPH_LAUNCH
#undef CB_ACT_LAUNCH_CONFIG
#undef CB_ON_COPY
#undef CB_ON_STREAM
#undef CB_ON_STREAM2
#undef CB_ON_LAUNCH
#undef CB_ON_CTX_SYNC
#undef CB_ON_CAPTURE_BEGIN
#undef CB_ON_CAPTURE_END
#undef CB_ON_STREAM_FREE
#undef CB_ON_DESTROY_STREAM
#undef CB_ON_CONTEXT
#undef CB_ON_FREE
#undef CB_ON_ALLOC
#undef CB_ON_DESTROY_CTX
#undef CB_ON_PRIMARY_CTX
#undef CB_ON_RESOLVER
#undef CB_ON_MARKER
#undef CB_ON_EVENT
#undef CB_ON_EVENT_ASK
#undef CB_ON_EVENT_FORGET
#undef CB_ON_CTX_EVENT
#undef CB_ON_EVENT_CREATE
#undef CB_ON_EVENT_FOREIGN
#undef CB_ON_WAIT
#undef CB_ON_GRAPH_LAUNCH
#undef CB_ON_LAUNCH_CONFIG
#undef CB_ON_OTHER
