# NVTX ranges (src/nvtx.c, issue 19): a recording injection library stands in for
# Nsight Systems (tests/nvtx/nvtxrec.c); tests/nvtx/check_nvtx.sh asserts the ranges and
# markers it is handed.  Without the nvtx3 headers the test skips.
TESTS += tests/nvtx/check_nvtx.sh
EXTRA_DIST += tests/nvtx/check_nvtx.sh tests/nvtx/nvtxrec.c
if NVTX
check_LTLIBRARIES += tests/libnvtxrec.la
tests_libnvtxrec_la_SOURCES = tests/nvtx/nvtxrec.c
tests_libnvtxrec_la_LDFLAGS = -module -avoid-version -shared -rpath $(abs_builddir)/tests $(AM_LDFLAGS)
tests_libnvtxrec_la_LIBADD = -lpthread
endif
