# Test suite: the simulated driver, the check-based unit and rule tests, the GPU programs.
include $(srcdir)/tests/sim/local.mk
include $(srcdir)/tests/unit.mk
include $(srcdir)/tests/gpu/local.mk

# Operations (tests/check_ops.c): reports from many processes and across fork,
# log levels and quoting, unknown CUBATCH_ names, processes without CUDA.
check_PROGRAMS += tests/opsprog tests/check_ops bench/dl_threads
TESTS += tests/check_ops
tests_opsprog_SOURCES = tests/opsprog.c
tests_opsprog_LDADD = tests/sim/libcuda.la
tests_opsprog_LDFLAGS = -no-install $(AM_LDFLAGS)
tests_check_ops_SOURCES = tests/check_ops.c
tests_check_ops_CPPFLAGS = $(AM_CPPFLAGS) -DBUILDDIR='"$(abs_top_builddir)"'
tests_check_ops_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_ops_LDADD = tests/libharness.la $(CHECK_LIBS) -ldl
# The lookup benchmark (bench/dl-threads.sh) doubles as the cost check's program.
bench_dl_threads_SOURCES = bench/dl_threads.c
bench_dl_threads_LDADD = -ldl -lpthread

# The design notes the code cites are in the tree: every "rule N" is a rule of
# docs/design.md, and nothing points at files beside a checkout.
TESTS += tests/check_design_refs.sh
EXTRA_DIST += tests/check_design_refs.sh docs/design.md

# What the test, example and benchmark scripts share (GPU, library, toolkit).
EXTRA_DIST += tests/lib.sh
