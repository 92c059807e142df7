# Tests of cubatch itself (the simulated driver has its own, in tests/sim).
TESTS_ENVIRONMENT = top_builddir=$(top_builddir) top_srcdir=$(top_srcdir); export top_builddir top_srcdir;

# The pure parts, in-process: option parsing, size policy, hazard index.
check_PROGRAMS += tests/check_units
TESTS += tests/check_units
tests_check_units_SOURCES = tests/check_units.c
tests_check_units_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_units_LDADD = src/libcubatch.la $(CHECK_LIBS)
tests_check_units_LDFLAGS = -no-install $(AM_LDFLAGS)

# The rules of DESIGN.md, end to end: probe scenarios under the preload against
# the simulated driver, compared with the same scenarios without it.
check_PROGRAMS += tests/probe tests/nocuda tests/check_rules
TESTS += tests/check_rules tests/check_exports.sh tests/check_valgrind.sh tests/check_launcher.sh
tests_probe_SOURCES = tests/probe.c
tests_probe_LDADD = tests/sim/libcuda.la -lpthread
tests_probe_LDFLAGS = -no-install $(AM_LDFLAGS)
tests_nocuda_SOURCES = tests/nocuda.c
tests_nocuda_LDADD = -ldl
tests_check_rules_SOURCES = tests/check_rules.c
tests_check_rules_CPPFLAGS = $(AM_CPPFLAGS) -DBUILDDIR='"$(abs_top_builddir)"'
tests_check_rules_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_rules_LDADD = $(CHECK_LIBS)
EXTRA_DIST += tests/check_exports.sh tests/check_valgrind.sh tests/check_launcher.sh

# Differential fuzzer (tests/fuzz/README.md): random driver programs run plain and
# preloaded on the simulated driver, outputs compared; saved regressions replayed.
check_PROGRAMS += tests/fuzz/fuzz
TESTS += tests/fuzz/check_fuzz.sh
tests_fuzz_fuzz_SOURCES = tests/fuzz/fuzz.c
tests_fuzz_fuzz_LDADD = tests/sim/libcuda.la -lpthread -ldl
tests_fuzz_fuzz_LDFLAGS = -no-install $(AM_LDFLAGS)
EXTRA_DIST += tests/fuzz/check_fuzz.sh tests/fuzz/run-fuzz.sh tests/fuzz/README.md tests/fuzz/regressions

# A shim that makes libcubatch's own allocations fail (tests/failalloc.c).
check_LTLIBRARIES += tests/libfailalloc.la
tests_libfailalloc_la_SOURCES = tests/failalloc.c
tests_libfailalloc_la_LDFLAGS = -module -avoid-version -shared -rpath $(abs_builddir)/tests
tests_libfailalloc_la_LIBADD = -ldl
