#!/bin/sh
# Fills a man page template: installed paths, version, and the option list.
# usage: fill.sh TEMPLATE OPTIONS_ROFF LIBDIR PKGLIBEXECDIR VERSION >PAGE
# A path is printed with a break point (\:) after each slash: a long
# prefix (make distcheck installs under the build tree) must not leave a
# line troff cannot adjust.
set -e
template=$1 options=$2 libdir=$3 pkglibexecdir=$4 version=$5
breakable() { printf '%s' "$1" | sed -e 's|[&]|\\&|g' -e 's|/|/\\\\:|g'; }
libdir=$(breakable "$libdir")
pkglibexecdir=$(breakable "$pkglibexecdir")
out=$(sed -e "s|@libdir[@]|$libdir|g" \
          -e "s|@pkglibexecdir[@]|$pkglibexecdir|g" \
          -e "s|@PACKAGE_VERSION[@]|$version|g" \
          -e '/^@CUBATCH_OPTIONS_ROFF[@]$/{' -e "r $options" -e 'd' -e '}' \
          "$template")
if printf '%s\n' "$out" | grep -n '@[A-Za-z_]*@' >&2; then
    echo "$template: placeholders left unsubstituted (above)" >&2
    exit 1
fi
printf '%s\n' "$out"
