#!/bin/sh
# check-deb.sh - build the Debian packages from the tree, check them with
# lintian, install them with dpkg -i, and run the demo through the INSTALLED
# launcher against the simulated driver (tools/run-installed-demo.sh), and check
# that it gives the program the signal dispositions and environment the build
# tree's launcher does (tools/check-launched-env.sh); then `man cubatch` must
# work, and the packages are removed again.  Run as root on Debian 12 (CI:
# .ci/run), from a configured and built tree (the demo and the simulated driver
# come from it).
#
#   tools/check-deb.sh [--keep] [--check]
#
#   --keep    leave the packages installed and the .debs in _build/deb/
#   --check   run the test suite inside the package build too (DEB_BUILD_OPTIONS
#             without nocheck; make check has usually run already)
# The packages are built in a copy of the tree (from `make dist`, which ships
# debian/), so the build tree itself is untouched.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
keep=0 nocheck=nocheck
for a in "$@"; do
    case $a in
    --keep) keep=1 ;;
    --check) nocheck= ;;
    *) echo "check-deb: unknown argument '$a'" >&2; exit 2 ;;
    esac
done
say() { printf '\n==> check-deb: %s\n' "$*"; }
[ "$(id -u)" -eq 0 ] || { echo "check-deb: run as root (dpkg -i)" >&2; exit 2; }
[ -f "$src/Makefile" ] || { echo "check-deb: configure and build the tree first" >&2; exit 2; }

need='build-essential debhelper dh-autoreconf dpkg-dev fakeroot lintian man-db python3'
missing=''
for p in $need; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    say "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

version=$(sed -n 's/^PACKAGE_VERSION = //p' "$src/Makefile")
deb_version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
[ "$deb_version" = "$version" ] ||
    { echo "check-deb: debian/changelog is at $deb_version, configure.ac at $version: add a changelog entry" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say "make dist, unpacked in $work"
make -C "$src" dist >/dev/null
tar -xzf "$src/cubatch-$version.tar.gz" -C "$work"
[ -f "$work/cubatch-$version/debian/control" ] || { echo "check-deb: the tarball lacks debian/ (EXTRA_DIST)" >&2; exit 1; }

say "dpkg-buildpackage -us -uc -b (DEB_BUILD_OPTIONS='$nocheck')"
(cd "$work/cubatch-$version" &&
 DEB_BUILD_OPTIONS="$nocheck parallel=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)" \
     dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) ||
    { tail -60 "$work/build.log"; echo "check-deb: dpkg-buildpackage failed" >&2; exit 1; }
changes=$(ls "$work"/cubatch_"$version"_*.changes)
for d in "$work"/*.deb; do
    echo "--- $(basename "$d")"
    dpkg-deb -c "$d" | awk '{print "    " $6 ($7 ? " " $7 " " $8 : "")}'
done

say "lintian (fails on errors and warnings; overrides in debian/*.lintian-overrides say why)"
lintian --fail-on error,warning --display-info "$changes"
# the overridden tags, for the log (--show-overrides would count them as failures)
lintian --show-overrides "$changes" 2>/dev/null | grep '^O: ' || true

say "dpkg -i"
debs=''
for d in "$work"/*.deb; do
    case $d in *-dbgsym_*) ;; *) debs="$debs $d" ;; esac
done
dpkg -r cubatch libcubatch-dev libcubatch0 >/dev/null 2>&1 || true
# A minimal Debian image excludes /usr/share/man from packages (dpkg.cfg.d); the
# man pages are part of the test, so include them back.
dpkg -i --path-include='/usr/share/man/man1/cubatch*' --path-include='/usr/share/man/man7/cubatch*' $debs

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
lib=/usr/lib/$multiarch/libcubatch.so
fail=0
deps=$(ldd "$lib" | awk '{print $1}' | grep -v -E '^(linux-vdso|/lib64/ld-linux|libc\.so|libdl\.so|libpthread\.so)' || true)
[ -z "$deps" ] && echo "check-deb: ok: $lib links only libc/libdl/libpthread" || { echo "check-deb: FAILED: $lib needs $deps"; fail=1; }

say "the demo through the installed /usr/bin/cubatch"
CUBATCH_BUILDDIR=$src "$src/tools/run-installed-demo.sh" /usr/bin/cubatch "$lib" || fail=1
say "what the program gets besides the preload: signals and environment as under the build tree's launcher"
sh "$src/tools/check-launched-env.sh" --ref "$src/cubatch" --lib "$lib" -- /usr/bin/cubatch || fail=1

say "man cubatch"
for page in 'cubatch' '7 cubatch' 'cubatch-report'; do
    # shellcheck disable=SC2086
    if text=$(MANPAGER=cat MANWIDTH=80 man --warnings $page 2>"$work/man.err") && [ -n "$text" ] && [ ! -s "$work/man.err" ]; then
        echo "check-deb: ok: man $page ($(printf '%s\n' "$text" | grep -m1 -A1 '^NAME' | tail -1 | sed 's/^ *//'))"
    else
        echo "check-deb: FAILED: man $page: $(cat "$work/man.err")"; fail=1
    fi
done
cubatch-report --help >/dev/null && echo "check-deb: ok: cubatch-report runs" || { echo "check-deb: FAILED: cubatch-report"; fail=1; }
pkg-config --cflags --libs cubatch | grep -q -- '-lcubatch' && echo "check-deb: ok: pkg-config cubatch" ||
    { echo "check-deb: FAILED: pkg-config cubatch"; fail=1; }

if [ $keep -eq 1 ]; then
    mkdir -p "$src/_build/deb" && cp $debs "$work"/*.changes "$src/_build/deb/"
    say "kept: installed, and the packages in $src/_build/deb"
else
    dpkg -r cubatch libcubatch-dev libcubatch0 >/dev/null
fi
[ $fail -eq 0 ] && say "all passed" || say "FAILED (above)"
exit $fail
