# libcubatch.so: the preload library.  Hidden visibility; only the wrappers,
# dlsym and the cubatch_* API are exported (checked by tests/check_exports.sh).
lib_LTLIBRARIES += src/libcubatch.la
include_HEADERS += include/cubatch.h
src_libcubatch_la_SOURCES = \
	src/internal.h src/run.h src/hooks.def src/options.def src/stats.def \
	src/resolve.c src/hooks.c src/copy.c src/classify.c src/policy.c \
	src/queue.c src/submit.c src/context.c src/flusher.c src/config.c src/stats.c \
	src/log.c src/api.c
src_libcubatch_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -pthread
src_libcubatch_la_LDFLAGS = -avoid-version -module -no-undefined -shared -pthread $(AM_LDFLAGS)
src_libcubatch_la_LIBADD = -ldl
