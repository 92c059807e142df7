# check-based tests of cubatch itself (the simulated driver has its own, in tests/sim).
check_PROGRAMS += tests/check_units
TESTS += tests/check_units
tests_check_units_SOURCES = tests/check_units.c
tests_check_units_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_units_LDADD = src/libcubatch.la $(CHECK_LIBS)
tests_check_units_LDFLAGS = -no-install $(AM_LDFLAGS)
