# Man pages: cubatch(1), cubatch(7), cubatch-report(1).  The option list of the
# first two is printed from src/options.def by tools/options-doc --roff (the same
# program that prints the README's table and the launcher's --help), in place of
# the line @CUBATCH_OPTIONS_ROFF@; man/fill.sh fills in that and the installed paths.
# nodist: they hold the configured paths, so each build makes its own
nodist_man_MANS = man/cubatch.1 man/cubatch.7 man/cubatch-report.1
EXTRA_DIST += man/fill.sh man/cubatch.1.in man/cubatch.7.in man/cubatch-report.1.in
CLEANFILES += $(nodist_man_MANS) man/options.roff

man/options.roff: tools/options-doc$(EXEEXT)
	$(AM_V_GEN)$(MKDIR_P) man && tools/options-doc$(EXEEXT) --roff >$@.tmp && mv $@.tmp $@

$(nodist_man_MANS): man/options.roff Makefile $(srcdir)/man/fill.sh
	$(AM_V_GEN)$(MKDIR_P) man && \
	$(SHELL) $(srcdir)/man/fill.sh $(srcdir)/$@.in man/options.roff \
	    '$(libdir)' '$(pkglibexecdir)' '$(PACKAGE_VERSION)' >$@.tmp && \
	mv $@.tmp $@
man/cubatch.1: $(srcdir)/man/cubatch.1.in
man/cubatch.7: $(srcdir)/man/cubatch.7.in
man/cubatch-report.1: $(srcdir)/man/cubatch-report.1.in

# The pages render without a warning (groff -ww), and cubatch(7) lists every option.
TESTS += tests/package/check_man.sh
EXTRA_DIST += tests/package/check_man.sh
