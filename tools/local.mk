# tools/: the launcher and its option check, the printer of the option table,
# the dependency installer (tools/mutants.py: bench/local.mk).

# The option table of README.md and the launcher's flags and --help lines, printed
# from src/options.def itself (config.c's table).
noinst_PROGRAMS += tools/options-doc
tools_options_doc_SOURCES = tools/options-doc.c
tools_options_doc_LDADD = src/libcubatch-core.la -ldl -lpthread
# The launcher's option check: the library's own parser, run before the program.
pkglibexec_PROGRAMS = tools/cubatch-check
tools_cubatch_check_SOURCES = tools/cubatch-check.c
tools_cubatch_check_LDADD = -ldl
EXTRA_DIST += tools/install-deps.sh

# ---- the launcher: tools/cubatch.in -> cubatch -------------------------------------
bin_SCRIPTS += cubatch
CLEANFILES += cubatch cubatch.tmp cubatch.help cubatch.cases
EXTRA_DIST += tools/cubatch.in
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
