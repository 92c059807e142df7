#!/bin/sh
# check_mutants.sh - every mutant of tools/mutants.py still applies: its text
# is found exactly once in the source it breaks.  A change that moves that text
# fails here until the mutant follows it (running the mutants themselves takes
# minutes a mutant: docs/testing.md).
srcdir=${top_srcdir:-.}
command -v python3 >/dev/null 2>&1 || { echo "check_mutants: no python3"; exit 77; }
exec python3 "$srcdir/tools/mutants.py" --check "$srcdir"
