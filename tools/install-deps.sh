#!/bin/sh
# install-deps.sh - install what building and testing cubatch needs, with
# apt-get (through sudo when not root), or say what to install where there is
# no apt-get.  Used by quickstart.sh and .ci/run: the one list of packages.
#   autoconf automake libtool pkg-config make gcc   the build
#   uthash-dev                                      hash tables (header only)
#   check valgrind                                  the test suite
#   libgl-dev libegl-dev libvdpau-dev               headers cudaGL.h, cudaEGL.h and
#                                                   cudaVDPAU.h need (the GL/EGL
#                                                   interop calls cubatch wraps)
#   groff-base                                      make check renders the man pages
#   python3                                         cubatch-report and its test
# The CUDA toolkit itself is not a Debian package here: nvcc on PATH, or
# ./configure --with-cuda=DIR.
set -eu
packages="autoconf automake libtool pkg-config make gcc uthash-dev check valgrind libgl-dev libegl-dev libvdpau-dev groff-base python3"
say() { printf '\n==> %s\n' "$*"; }
if ! command -v apt-get >/dev/null 2>&1; then
    say "no apt-get: install these (or your system's equivalents) yourself: $packages"
    exit 0
fi
missing=''
for p in $packages; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -z "$missing" ]; then
    say "dependencies already installed ($packages)"
    exit 0
fi
sudo=''
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
        echo "install-deps: need root (or sudo) to install:$missing" >&2
        exit 1
    }
    sudo=sudo
fi
say "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update
# shellcheck disable=SC2086
$sudo apt-get install -y $missing
