# Test suite: the simulated driver and the GPU programs have their own
# fragments; everything else of tests/ is here.
include $(srcdir)/tests/sim/local.mk
include $(srcdir)/tests/gpu/local.mk
include $(srcdir)/tests/nvtx/local.mk

# Operations (tests/ops/check_ops.c): reports from many processes and across fork,
# log levels and quoting, unknown CUBATCH_ names, processes without CUDA.
check_PROGRAMS += tests/opsprog tests/check_ops bench/dl_threads
TESTS += tests/check_ops
tests_opsprog_SOURCES = tests/ops/opsprog.c
tests_opsprog_LDADD = tests/sim/libcuda.la
tests_opsprog_LDFLAGS = -no-install $(AM_LDFLAGS)
tests_check_ops_SOURCES = tests/ops/check_ops.c
tests_check_ops_CPPFLAGS = $(AM_CPPFLAGS) -DBUILDDIR='"$(abs_top_builddir)"'
tests_check_ops_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_ops_LDADD = tests/libharness.la $(CHECK_LIBS) -ldl
# The lookup benchmark (bench/dl-threads.sh) doubles as the cost check's program.
bench_dl_threads_SOURCES = bench/dl_threads.c
bench_dl_threads_LDADD = -ldl -lpthread

# The design notes the code cites are in the tree: every "rule N" is a rule of
# docs/design.md, and nothing points at files beside a checkout.
TESTS += tests/package/check_design_refs.sh
EXTRA_DIST += tests/package/check_design_refs.sh docs/design.md docs/guide.md docs/testing.md docs/contributing.md

# The README names only paths of the tree, figures of the run of bench/RESULTS.md
# it names and counts of the tree (with the man pages and docs/testing.md).
TESTS += tests/package/check_readme.sh
EXTRA_DIST += tests/package/check_readme.sh tests/package/check_facts.py

# The files of src/ call, read and include only downward (src/internal.h's list).
TESTS += tests/package/check_layers.sh
EXTRA_DIST += tests/package/check_layers.sh tests/package/check_layers.py

# Every mutant of tools/mutants.py still finds the text it breaks.
TESTS += tests/package/check_mutants.sh
EXTRA_DIST += tests/package/check_mutants.sh

# The Debian package names the project's license, in LICENSE's words.
TESTS += tests/package/check_license.sh
EXTRA_DIST += tests/package/check_license.sh

# What the test, example and benchmark scripts share (GPU, library, toolkit).
EXTRA_DIST += tests/harness/lib.sh

# Tests of cubatch itself (the simulated driver has its own, in tests/sim).

# What the test programs share: a program run in a fresh, clean environment with
# a time limit, files read whole, check's main() (tests/harness/harness.h).
check_LTLIBRARIES += tests/libharness.la
tests_libharness_la_SOURCES = tests/harness/harness.c tests/harness/harness_check.c tests/harness/harness.h
tests_libharness_la_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
# Any test program under a debugger or valgrind: make check TEST_PREFIX='valgrind -q'
# (with CK_FORK=no for the check-based tests; the shell tests run as they are).
LOG_COMPILER = $(TEST_PREFIX)
TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = top_builddir=$(top_builddir) top_srcdir=$(top_srcdir) CC='$(CC)' \
	CUDA_CPPFLAGS='$(CUDA_CPPFLAGS)' CUDA_TOOLKIT_CPPFLAGS='$(CUDA_TOOLKIT_CPPFLAGS)'; \
	export top_builddir top_srcdir CC CUDA_CPPFLAGS CUDA_TOOLKIT_CPPFLAGS;

# The pure parts, in-process: option parsing, size policy, hazard index.
check_PROGRAMS += tests/check_units
TESTS += tests/check_units
tests_check_units_SOURCES = tests/unit/check_units.c
tests_check_units_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_units_LDADD = src/libcubatch-core.la tests/libharness.la $(CHECK_LIBS) -ldl -lpthread
tests_check_units_LDFLAGS = -no-install $(AM_LDFLAGS)

# The rules of docs/design.md, end to end: probe scenarios under the preload against
# the simulated driver, compared with the same scenarios without it.
check_PROGRAMS += tests/probe tests/nocuda tests/check_rules
TESTS += tests/check_rules tests/package/check_exports.sh tests/rules/check_valgrind.sh \
	tests/package/check_launcher.sh
tests_probe_SOURCES = tests/rules/probe.c
tests_probe_LDADD = tests/sim/libcuda.la -lpthread
tests_probe_LDFLAGS = -no-install $(AM_LDFLAGS)
tests_nocuda_SOURCES = tests/rules/nocuda.c
tests_nocuda_LDADD = -ldl
tests_check_rules_SOURCES = tests/rules/check_rules.c
tests_check_rules_CPPFLAGS = $(AM_CPPFLAGS) -DBUILDDIR='"$(abs_top_builddir)"'
tests_check_rules_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_rules_LDADD = tests/libharness.la $(CHECK_LIBS)
EXTRA_DIST += tests/package/check_exports.sh tests/rules/check_valgrind.sh \
	tests/package/check_launcher.sh

# The copy kernel's device code on the CPU (tests/kernel/kernel_cpu.cc): random
# runs of 1D and 2D descriptors, bytes and bounds checked (ASan, UBSan).
TESTS += tests/kernel/check_kernel_cpu.sh
EXTRA_DIST += tests/kernel/check_kernel_cpu.sh tests/kernel/kernel_cpu.cc tests/kernel/kernel_cpu_shim.h

# Differential fuzzer (tests/fuzz/README.md): random driver programs run plain and
# preloaded on the simulated driver, outputs compared; saved regressions replayed.
check_PROGRAMS += tests/fuzz/fuzz
TESTS += tests/fuzz/check_fuzz.sh
tests_fuzz_fuzz_SOURCES = tests/fuzz/fuzz.c
tests_fuzz_fuzz_LDADD = tests/sim/libcuda.la tests/libharness.la -lpthread -ldl
tests_fuzz_fuzz_LDFLAGS = -no-install $(AM_LDFLAGS)
EXTRA_DIST += tests/fuzz/check_fuzz.sh tests/fuzz/run-fuzz.sh tests/fuzz/README.md tests/fuzz/regressions

# A shim that makes libcubatch's own allocations fail (tests/shims/failalloc.c).
check_LTLIBRARIES += tests/libfailalloc.la
tests_libfailalloc_la_SOURCES = tests/shims/failalloc.c
tests_libfailalloc_la_LDFLAGS = -module -avoid-version -shared -rpath $(abs_builddir)/tests
tests_libfailalloc_la_LIBADD = -ldl

# Completeness: every driver function that could observe a deferred copy is in
# src/hooks.def or, with its reason, in src/hooks.skip.
TESTS += tests/table/check_hooks_complete.sh
EXTRA_DIST += tests/table/check_hooks_complete.sh src/hooks.skip

# The table-driven flush test: every row of src/hooks.def, called once with copies
# queued on five streams; what it flushed is compared with tests/table/flush-table.expected.
check_PROGRAMS += tests/flushcall
TESTS += tests/table/check_flush_table.sh
nodist_tests_flushcall_SOURCES = tests/flushcalls.inc
tests_flushcall_SOURCES = tests/table/flushcall.c
tests_flushcall_CPPFLAGS = $(AM_CPPFLAGS) -I$(builddir)/tests
tests_flushcall_LDADD = tests/sim/libcuda.la -lpthread
tests_flushcall_LDFLAGS = -no-install $(AM_LDFLAGS)
BUILT_SOURCES += tests/flushcalls.inc
tests/flushcalls.inc: $(top_srcdir)/src/hooks.def src/hooks_each.h $(top_srcdir)/tests/table/gen-flushcalls.sh
	$(AM_V_GEN)$(MKDIR_P) tests && CC='$(CC)' sh $(top_srcdir)/tests/table/gen-flushcalls.sh $(top_srcdir)/src src >$@.tmp && mv $@.tmp $@
CLEANFILES += tests/flushcalls.inc
EXTRA_DIST += tests/table/check_flush_table.sh tests/table/gen-flushcalls.sh tests/table/flush-table.expected

# A virtual CLOCK_MONOTONIC (tests/shims/fakeclock.c): clock-reading rules tested the
# same on an idle or a busy machine.
check_LTLIBRARIES += tests/libfakeclock.la
tests_libfakeclock_la_SOURCES = tests/shims/fakeclock.c
tests_libfakeclock_la_LDFLAGS = -module -avoid-version -shared -rpath $(abs_builddir)/tests
tests_libfakeclock_la_LIBADD = -ldl -lpthread
