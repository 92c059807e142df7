# libcubatch.so: the preload library.  Hidden visibility; only the wrappers,
# dlsym, the cubatch_* API and the launcher's option check are exported (checked
# by tests/package/check_exports.sh, which also checks that the library binds its own
# functions to itself: -Bsymbolic-functions).
#
# Everything below the interception layer is a convenience library of its own,
# which the unit tests link directly: they call internal functions, so nothing
# test-only is exported from the production library.
lib_LTLIBRARIES += src/libcubatch.la
noinst_LTLIBRARIES += src/libcubatch-core.la
nodist_include_HEADERS = include/cubatch.h

src_libcubatch_core_la_SOURCES = \
	src/internal.h src/stats.h src/run.h src/store.h src/notes.h src/event.h src/hazard.h src/engine.h src/copies.h \
	src/engine_batch.h src/engine_loop.h src/engine_kernel.h src/ptds.h src/smwork.h src/tblock.h src/copy_kernel.h \
	src/capture.h src/allocs.h src/choose.h src/stream.h src/futex.h src/cuda_since.h src/waits.h src/flush.h \
	src/hooks.def src/actions.def src/driver.def src/options.def src/stats.def src/directions.def \
	src/copy.c src/context.c src/classify.c src/allocs.c src/policy.c \
	src/life.c src/fork.c src/marker.c src/waits.c src/timer.c src/look.c src/flush.c \
	src/notes.c src/store.c src/run.c src/futex.c src/hazard.c src/event.c \
	src/engine.c src/engine_batch.c src/engine_loop.c src/engine_kernel.c src/ptds.c src/smwork.c src/choose.c src/capture.c \
	src/stream.c src/batching.c src/report.c src/stats.c src/config.c src/suggest.c src/fifo.c src/driver.c src/log.c src/clock.c src/tblock.c
src_libcubatch_core_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -pthread

# hooks_each.h, the code per row of hooks.def by action, is made from the one list
# of actions (src/actions.def) in the build tree: the preprocessor cannot define
# a macro per entry of a list.
nodist_src_libcubatch_core_la_SOURCES = src/hooks_each.h
BUILT_SOURCES += src/hooks_each.h
CLEANFILES += src/hooks_each.h
EXTRA_DIST += tools/gen-hooks-each.sh
src/hooks_each.h: $(srcdir)/src/actions.def $(srcdir)/tools/gen-hooks-each.sh
	$(AM_V_GEN)$(MKDIR_P) src && AWK='$(AWK)' $(SHELL) $(srcdir)/tools/gen-hooks-each.sh $(srcdir)/src/actions.def >$@.tmp && mv $@.tmp $@

src_libcubatch_la_SOURCES = src/init.h src/hooks.c src/resolve.c src/api.c src/net.c src/init.c

# driver_api.h, the names of src/driver_api.list as a sorted C array for the net
# (net.c), made in the build tree.
nodist_src_libcubatch_la_SOURCES = src/driver_api.h
BUILT_SOURCES += src/driver_api.h
CLEANFILES += src/driver_api.h
EXTRA_DIST += src/driver_api.list
src/driver_api.h: $(srcdir)/src/driver_api.list
	$(AM_V_GEN)$(MKDIR_P) src && { \
	    echo '/* driver_api.h - made from src/driver_api.list at build time.  Do not edit. */'; \
	    sed -n 's/^version \([0-9][0-9]*\)$$/#define CB_API_VERSION \1/p' $(srcdir)/src/driver_api.list; \
	    echo 'static const char *const cb_api_names[] = {'; \
	    sed -n 's/^\(cu[A-Za-z0-9_]*\)$$/    "\1",/p' $(srcdir)/src/driver_api.list; \
	    echo '};'; } >$@.tmp && mv $@.tmp $@
src_libcubatch_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -pthread
src_libcubatch_la_LDFLAGS = -avoid-version -module -no-undefined -shared -pthread \
	-Wl,-Bsymbolic-functions $(AM_LDFLAGS)
src_libcubatch_la_LIBADD = src/libcubatch-core.la -ldl

# The copy-kernel engine: the kernel compiled for every architecture the
# toolkit's nvcc knows (configure: CB_NVCC_GENCODE), embedded by the assembler.
EXTRA_DIST += src/copy_kernel.cu src/copy_kernel.h src/copy_kernel_image.S
if KERNEL_ENGINE
src_libcubatch_core_la_SOURCES += src/copy_kernel_image.S
src/copy_kernel.fatbin: $(srcdir)/src/copy_kernel.cu $(srcdir)/src/copy_kernel.h
	$(AM_V_GEN)$(MKDIR_P) src && $(NVCC) -fatbin -O3 -std=c++17 --compress-mode=size $(CB_NVCC_GENCODE) \
	    -I$(srcdir)/src -o $@.tmp $(srcdir)/src/copy_kernel.cu && mv $@.tmp $@
src/copy_kernel_image.lo: src/copy_kernel.fatbin
CLEANFILES += src/copy_kernel.fatbin
endif

# NVTX ranges for profilers (issue 19; compiled away without the nvtx3 headers).
src_libcubatch_core_la_SOURCES += src/nvtx.h src/nvtx.c
