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

# tools/: cubatch-report (installed), and the packaging scripts (debian/, the wheel).
#
# cubatch-report sums the JSON reports of many processes; the counters' names,
# kinds and meanings are read from src/stats.def when it is made (every CB_STAT
# and CB_FLUSH row must become a Python row, or the rule fails), its counters by
# direction from src/directions.def, where stats.def includes it.
bin_SCRIPTS += cubatch-report
CLEANFILES += cubatch-report cubatch-report.tmp cubatch-report.rows cubatch-report.dirs cubatch-report.def
EXTRA_DIST += tools/cubatch-report.in
cubatch-report: $(srcdir)/tools/cubatch-report.in $(srcdir)/src/stats.def $(srcdir)/src/directions.def Makefile
	$(AM_V_GEN)rm -f $@ $@.tmp $@.rows $@.dirs $@.def && \
	sed -n -e 's/^CB_DIRECTION([A-Z0-9_]*, *\([a-z0-9_]*\), *"\(.*\)")$$/CB_STAT(copies_\1, SUM, "  \2")/p' \
	    $(srcdir)/src/directions.def >$@.dirs && \
	if [ "`grep -c '^CB_DIRECTION(' $(srcdir)/src/directions.def`" != "`wc -l <$@.dirs`" ] || \
	   [ "`grep -c '^#include "directions.def"$$' $(srcdir)/src/stats.def`" != 1 ]; then \
	  echo "cubatch-report: a CB_DIRECTION row of src/directions.def is not on one line as NAME, word, \"doc\", or src/stats.def does not include it once" >&2; exit 1; fi && \
	sed -e '/^#include "directions.def"$$/{' -e 'r $@.dirs' -e 'd' -e '}' $(srcdir)/src/stats.def >$@.def && \
	sed -n -e 's/^CB_STAT(\([a-z0-9_]*\), *\([A-Z]*\), *\(".*"\))$$/    ("\1", "\2", \3),/p' \
	    -e 's/^CB_FLUSH(\([a-z0-9_]*\), *[A-Z0-9_ |]*, *\(".*"\))$$/    ("\1", "FLUSH", \2),/p' \
	    $@.def >$@.rows && \
	if [ "`grep -c -e '^CB_STAT(' -e '^CB_FLUSH(' $@.def`" != "`wc -l <$@.rows`" ]; then \
	  echo "cubatch-report: a CB_STAT or CB_FLUSH row of src/stats.def is not on one line as NAME, KIND or DOES, \"doc\"" >&2; exit 1; fi && \
	sed -e 's|@PACKAGE_VERSION[@]|$(PACKAGE_VERSION)|g' \
	    -e '/^@CUBATCH_STATS_ROWS[@]$$/{' -e 'r $@.rows' -e 'd' -e '}' \
	    $(srcdir)/tools/cubatch-report.in >$@.tmp && \
	if grep -n '@[A-Za-z_]*@' $@.tmp >&2; then \
	  echo "cubatch-report: placeholders left unsubstituted (above)" >&2; exit 1; fi && \
	chmod +x $@.tmp && mv $@.tmp $@ && rm -f $@.rows $@.dirs $@.def

# Reports of several processes, summed per host and in total.
TESTS += tests/ops/check_report.sh
EXTRA_DIST += tests/ops/check_report.sh

# Packaging: the Debian packages (tools/check-deb.sh builds, lints, installs and
# runs them) and the Python wheel (tools/build-wheel.sh, tools/check-wheel.sh).
EXTRA_DIST += tools/check-deb.sh tools/run-installed-demo.sh tools/check-launched-env.sh \
	debian/control debian/rules debian/changelog debian/copyright debian/source/format \
	debian/libcubatch0.install debian/cubatch.install debian/libcubatch-dev.install \
	debian/not-installed debian/libcubatch0.triggers debian/libcubatch0.lintian-overrides
EXTRA_DIST += tools/build-wheel.sh tools/make-wheel.py tools/check-wheel.sh \
	python/cubatch/__init__.py python/cubatch/__main__.py python/cubatch/_launch.py
EXTRA_DIST += bench/nvtx-cost.sh
