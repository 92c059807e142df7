#!/bin/sh
# check_layers.sh - the files of src/ call only downward, in the order of the
# layers src/internal.h lists (tests/package/check_layers.py says how it reads
# them).  Sources only: it runs in distcheck's tree.
exec python3 "${top_srcdir:-.}/tests/package/check_layers.py" "${top_srcdir:-.}"
