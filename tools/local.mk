# tools/: cubatch-report (installed), and the packaging scripts (debian/, the wheel).
#
# cubatch-report sums the JSON reports of many processes; the counters' names,
# kinds and meanings are read from src/stats.def when it is made (every CB_STAT
# row must become a Python row, or the rule fails).
bin_SCRIPTS += cubatch-report
CLEANFILES += cubatch-report cubatch-report.tmp cubatch-report.rows
EXTRA_DIST += tools/cubatch-report.in
cubatch-report: $(srcdir)/tools/cubatch-report.in $(srcdir)/src/stats.def Makefile
	$(AM_V_GEN)rm -f $@ $@.tmp $@.rows && \
	sed -n 's/^CB_STAT(\([a-z0-9_]*\), *\([A-Z]*\), *\(".*"\))$$/    ("\1", "\2", \3),/p' \
	    $(srcdir)/src/stats.def >$@.rows && \
	if [ "`grep -c '^CB_STAT(' $(srcdir)/src/stats.def`" != "`wc -l <$@.rows`" ]; then \
	  echo "cubatch-report: a CB_STAT row of src/stats.def is not on one line as NAME, KIND, \"doc\"" >&2; exit 1; fi && \
	sed -e 's|@PACKAGE_VERSION[@]|$(PACKAGE_VERSION)|g' \
	    -e '/^@CUBATCH_STATS_ROWS[@]$$/{' -e 'r $@.rows' -e 'd' -e '}' \
	    $(srcdir)/tools/cubatch-report.in >$@.tmp && \
	if grep -n '@[A-Za-z_]*@' $@.tmp >&2; then \
	  echo "cubatch-report: placeholders left unsubstituted (above)" >&2; exit 1; fi && \
	chmod +x $@.tmp && mv $@.tmp $@ && rm -f $@.rows

# Reports of several processes, summed per host and in total.
TESTS += tests/check_report.sh
EXTRA_DIST += tests/check_report.sh

# Packaging: the Debian packages (tools/check-deb.sh builds, lints, installs and
# runs them) and the Python wheel (tools/build-wheel.sh, tools/check-wheel.sh).
EXTRA_DIST += tools/check-deb.sh tools/run-installed-demo.sh \
	debian/control debian/rules debian/changelog debian/copyright debian/source/format \
	debian/libcubatch0.install debian/cubatch.install debian/libcubatch-dev.install \
	debian/not-installed debian/libcubatch0.triggers debian/libcubatch0.lintian-overrides
EXTRA_DIST += tools/build-wheel.sh tools/make-wheel.py tools/check-wheel.sh \
	python/cubatch/__init__.py python/cubatch/__main__.py python/cubatch/_launch.py
EXTRA_DIST += bench/nvtx-cost.sh
