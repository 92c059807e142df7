# The simulated CUDA driver (tests/sim/README.md): tests/sim/.libs/libcuda.so.1.
check_LTLIBRARIES += tests/sim/libcuda.la
tests_sim_libcuda_la_SOURCES = tests/sim/sim.h tests/sim/core.c tests/sim/api.c tests/sim/procs.c
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
