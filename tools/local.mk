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
