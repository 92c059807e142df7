# The simulated CUDA driver (tests/sim/README.md): tests/sim/.libs/libcuda.so.1.
check_LTLIBRARIES += tests/sim/libcuda.la
tests_sim_libcuda_la_SOURCES = tests/sim/sim.h tests/sim/core.c tests/sim/api.c tests/sim/procs.c tests/sim/api13x.c tests/sim/reuse.c
tests_sim_libcuda_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/sim
tests_sim_libcuda_la_LDFLAGS = -rpath $(abs_builddir)/tests/sim -version-info 1:0:0 -shared \
	-Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic-functions -export-symbols-regex '^(cu|cusim_)'
tests_sim_libcuda_la_LIBADD = -lpthread
EXTRA_DIST += tests/sim/procs.inc tests/sim/gen-procs.py tests/sim/README.md \
	tests/data/driver-proc-address-map.txt tests/data/cudart13-entry-points.txt

# Tests of the simulator itself.
check_PROGRAMS += tests/sim/check_sim
TESTS += tests/sim/check_sim
tests_sim_check_sim_SOURCES = tests/sim/check_sim.c tests/sim/cusim.h
tests_sim_check_sim_CPPFLAGS = $(AM_CPPFLAGS) -DSIM_SRCDIR='"$(abs_top_srcdir)"'
tests_sim_check_sim_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_sim_check_sim_LDADD = tests/sim/libcuda.la $(CHECK_LIBS) -ldl -lpthread
tests_sim_check_sim_LDFLAGS = -no-install

# What a capture refuses: tests/gpu/capture_legal.c (the driver-API program run on the
# H200) on the simulated driver, its output compared with the H200's line for line.
check_PROGRAMS += tests/sim/capture_legal
TESTS += tests/sim/check_capture_legal.sh
tests_sim_capture_legal_SOURCES = tests/gpu/capture_legal.c
tests_sim_capture_legal_LDADD = tests/sim/libcuda.la -lpthread
tests_sim_capture_legal_LDFLAGS = -no-install $(AM_LDFLAGS)
EXTRA_DIST += tests/sim/check_capture_legal.sh tests/data/capture-legal-h200.txt
