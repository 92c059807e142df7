# Examples (the `cubatch` launcher they run under: tools/local.mk).
#
# examples/demo       driver-API program, built by `make` (no nvcc needed; it opens
#                     libcuda.so.1 at run time, so it runs against the real or the
#                     simulated driver); examples/run-demo.sh runs it under cubatch.
# examples/kv_cache_server    CUDA runtime program, built only by `make examples-gpu` (nvcc).
# examples/torch_offload.py   PyTorch; run it with `cubatch --stats python3 ...`.
noinst_PROGRAMS += examples/demo
examples_demo_SOURCES = examples/demo.c
examples_demo_LDADD = -ldl

EXTRA_DIST += \
	examples/run-demo.sh \
	examples/kv_cache_server.cu \
	examples/torch_offload.py

# ---- GPU examples: `make examples-gpu` (needs nvcc; never part of all or check) ----
NVCCFLAGS = -O2 -std=c++17
examples/kv_cache_server: $(srcdir)/examples/kv_cache_server.cu
	@if test -z "$(NVCC)"; then \
	  echo "examples-gpu: nvcc not found; configure --with-cuda=DIR or put nvcc on PATH" >&2; \
	  exit 1; fi
	@$(MKDIR_P) examples
	$(AM_V_GEN)$(NVCC) $(NVCCFLAGS) -o $@ $(srcdir)/examples/kv_cache_server.cu
examples-gpu: examples/kv_cache_server
.PHONY: examples-gpu
CLEANFILES += examples/kv_cache_server
