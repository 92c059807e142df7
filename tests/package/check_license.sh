#!/bin/sh
# Every package names the project's license: debian/copyright carries the
# permission text of LICENSE word for word (the wheel's copy is checked by
# tools/check-wheel.sh, which packs LICENSE itself).
s=${top_srcdir:-.}
fail=0
license_text() { # the permission text of LICENSE, from "Permission" on, one word a line
    sed -n '/^Permission/,$p' "$s/LICENSE" | tr -s ' \n' '\n\n'
}
copyright_text() { # the standalone License: Expat paragraph of debian/copyright, unindented
    awk '/^License: Expat$/ { n++; next } n == 2 && /^ / { print } n == 2 && /^$/ { exit }' \
        "$s/debian/copyright" | sed -e 's/^ //' -e '/^\.$/d' | tr -s ' \n' '\n\n'
}
grep -q '^MIT License' "$s/LICENSE" || { echo "check_license: LICENSE is not the MIT license this test knows"; fail=1; }
n=$(grep -c '^License: Expat$' "$s/debian/copyright")
[ "$n" -eq 2 ] || { echo "check_license: debian/copyright names Expat $n times (want the Files: field and its paragraph)"; fail=1; }
if [ -n "$(license_text)" ] && [ "$(license_text)" = "$(copyright_text)" ]; then
    echo "check_license: ok: debian/copyright carries LICENSE's text (Expat)"
else
    echo "check_license: FAILED: debian/copyright's Expat paragraph differs from LICENSE:"
    license_text >"${TMPDIR:-/tmp}/cb_lic.$$"; copyright_text | diff "${TMPDIR:-/tmp}/cb_lic.$$" - | head -20
    rm -f "${TMPDIR:-/tmp}/cb_lic.$$"
    fail=1
fi
exit $fail
