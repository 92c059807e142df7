# Examples, and the rule that makes the `cubatch` launcher.
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

# ---- the launcher: tools/cubatch.in -> cubatch -------------------------------------
# (bin_SCRIPTS, CLEANFILES and EXTRA_DIST for it are in the top-level Makefile.am.)
# The option flags and --help lines come from src/options.def, through the same
# program that prints the README's option table (tools/options-doc).
cubatch: $(srcdir)/tools/cubatch.in tools/options-doc$(EXEEXT) Makefile
	$(AM_V_GEN)rm -f $@ $@.tmp $@.help $@.cases && \
	tools/options-doc$(EXEEXT) --help-lines >$@.help && \
	tools/options-doc$(EXEEXT) --shell >$@.cases && \
	sed -e 's|@libdir[@]|$(libdir)|g' \
	    -e 's|@pkglibexecdir[@]|$(pkglibexecdir)|g' \
	    -e 's|@PACKAGE_VERSION[@]|$(PACKAGE_VERSION)|g' \
	    -e '/^@CUBATCH_HELP_LINES[@]$$/{' -e 'r $@.help' -e 'd' -e '}' \
	    -e '/^@CUBATCH_OPTION_CASES[@]$$/{' -e 'r $@.cases' -e 'd' -e '}' \
	    $(srcdir)/tools/cubatch.in >$@.tmp && \
	if grep -n '@[A-Za-z_]*@' $@.tmp >&2; then \
	  echo "cubatch: placeholders left unsubstituted (above)" >&2; exit 1; fi && \
	$(SHELL) -n $@.tmp && \
	chmod +x $@.tmp && mv $@.tmp $@ && rm -f $@.help $@.cases
