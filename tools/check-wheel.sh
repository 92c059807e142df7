#!/bin/sh
# check-wheel.sh - build the wheel from the tree (tools/build-wheel.sh), install
# it into a fresh venv, and check it as a user would:
#   - two builds give the same bytes; the wheel holds only cubatch/ and its
#     .dist-info; auditwheel agrees with its platform tag (auditwheel is
#     installed from PyPI into a venv of its own);
#   - the demo runs under the venv's `cubatch` console script, and under
#     `python -m cubatch`, against the simulated driver, the toolkit's folders off
#     PATH and LD_LIBRARY_PATH (tools/run-installed-demo.sh): the same launcher;
#   - under both, the program gets the signal dispositions and the environment
#     the build tree's launcher gives it, nothing of Python's or the wheel's
#     (tools/check-launched-env.sh: SIGPIPE not left ignored, no CUBATCH_LIBRARY);
#   - the module's answers without the preload (loaded() False, flush() a no-op,
#     stats() and set_enabled() raise NotLoadedError) and with it (loaded(),
#     stats() as a dict, flush(), set_enabled() or its clear error when the
#     library lacks cubatch_set_enabled).
# Run from a configured and built tree (the demo and the simulated driver come
# from it).  CI: .ci/run.  Needs python3 with venv (Debian: python3-venv,
# installed here when missing and root).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
say() { printf '\n==> check-wheel: %s\n' "$*"; }
fail=0
ok() { echo "check-wheel: ok: $1"; }
bad() { echo "check-wheel: FAILED: $1"; fail=1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! python3 -m venv "$work/probe-venv" >/dev/null 2>&1; then
    [ "$(id -u)" -eq 0 ] || { echo "check-wheel: python3 -m venv does not work: install python3-venv" >&2; exit 2; }
    say "installing python3-venv"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv python3-pip >/dev/null
fi
rm -rf "$work/probe-venv"

say "tools/build-wheel.sh"
whl=$("$src/tools/build-wheel.sh" --out "$work/dist" | tail -1)
[ -f "$whl" ] || { echo "check-wheel: tools/build-wheel.sh made no wheel" >&2; exit 1; }
whl2=$("$src/tools/build-wheel.sh" --out "$work/dist2" | tail -1)
if cmp -s "$whl" "$whl2"; then ok "built twice: the same bytes"; else bad "two builds of the same tree differ"; fi
echo "check-wheel: built $whl"

names=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$whl")
printf '%s\n' "$names" | sed 's/^/    /'
outside=$(printf '%s\n' "$names" | grep -v -E '^(cubatch/|cubatch-[0-9.]+\.dist-info/)' || true)
[ -z "$outside" ] && ok "only cubatch/ and its .dist-info in the wheel" || bad "files outside the package: $outside"
python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1])
n = [x for x in z.namelist() if x.endswith(".dist-info/LICENSE")]
sys.exit(0 if n and z.read(n[0]) == open(sys.argv[2], "rb").read() else 1)' "$whl" "$src/LICENSE" &&
    ok "the .dist-info carries the project's LICENSE" || bad "the wheel lacks the project's LICENSE"

say "auditwheel show (auditwheel from PyPI)"
tag=$(basename "$whl" .whl | sed 's/^cubatch-[^-]*-py3-none-//')
python3 -m venv "$work/aw"
if "$work/aw/bin/pip" install -q auditwheel >"$work/aw.log" 2>&1; then
    aw=$("$work/aw/bin/auditwheel" show "$whl" 2>&1) || true
    printf '%s\n' "$aw" | sed 's/^/    /'
    # auditwheel names the most compatible tag the files allow: ours must be it
    printf '%s\n' "$aw" | tr -s ' \n' '  ' | grep -q "consistent with the following platform tag: \"$tag\"" &&
        ok "platform tag $tag is the one auditwheel finds" || bad "platform tag $tag is not auditwheel's"
else
    cat "$work/aw.log"
    bad "pip install auditwheel failed (PyPI unreachable?)"
fi

say "python3 -m venv; pip install the wheel"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --no-index "$whl"
py=$work/venv/bin/python
site=$("$py" -c 'import cubatch, os; print(os.path.dirname(cubatch.__file__))')
lib=$site/_lib/libcubatch.so
deps=$(ldd "$lib" | awk '{print $1}' | grep -v -E '^(linux-vdso|/lib64/ld-linux|libc\.so|libdl\.so|libpthread\.so)' || true)
[ -z "$deps" ] && ok "the wheel's libcubatch.so links only libc/libdl/libpthread" || bad "libcubatch.so needs $deps"
[ -x "$site/_bin/tools/cubatch-check" ] && ok "cubatch-check installed executable" || bad "cubatch-check lost its execute bit"

say "the demo under the venv's cubatch console script"
CUBATCH_BUILDDIR=$src "$src/tools/run-installed-demo.sh" "$work/venv/bin/cubatch" "$lib" || fail=1
printf '#!/bin/sh\nexec "%s" -m cubatch "$@"\n' "$py" >"$work/python-m-cubatch" && chmod +x "$work/python-m-cubatch"
say "the demo under python -m cubatch"
CUBATCH_BUILDDIR=$src "$src/tools/run-installed-demo.sh" "$work/python-m-cubatch" "$lib" || fail=1
say "what the program gets besides the preload, under both: signals and environment as under the build tree's launcher"
# Python ignores SIGPIPE and SIGXFSZ from its start, and exec keeps that: the
# console script must undo it, and leave nothing of its own in the environment
sh "$src/tools/check-launched-env.sh" --ref "$src/cubatch" --lib "$lib" -- "$work/venv/bin/cubatch" || fail=1
sh "$src/tools/check-launched-env.sh" --ref "$src/cubatch" --lib "$lib" -- "$py" -m cubatch || fail=1
v=$("$py" -m cubatch --version 2>&1)
printf '%s\n' "$v" | grep -qx "library: $lib" && ok "python -m cubatch --version: the package's library" || bad "python -m cubatch: $v"
"$py" -m cubatch --no-such-flag true >/dev/null 2>&1 && rc=0 || rc=$?
[ $rc -eq 2 ] && ok "python -m cubatch: a bad flag exits 2, as tools/cubatch" || bad "bad flag: exit $rc"
"$work/venv/bin/cubatch" -- sh -c 'exit 42' && rc=0 || rc=$?
[ $rc -eq 42 ] && ok "the command's exit status comes back" || bad "exit status: $rc"
"$work/venv/bin/cubatch" no-such-command-here >/dev/null 2>&1 && rc=0 || rc=$?
[ $rc -eq 127 ] && ok "a missing command exits 127" || bad "missing command: exit $rc"
"$work/venv/bin/cubatch-report" --help >/dev/null && ok "cubatch-report console script" || bad "cubatch-report"

say "the module without and with the preload"
cat >"$work/mod.py" <<'PY'
import sys
import cubatch
preloaded = sys.argv[1] == "yes"
assert cubatch.loaded() is preloaded, cubatch.loaded()
assert cubatch.flush() == 0
if not preloaded:
    assert cubatch.batching() is False
    for call in (cubatch.stats, lambda: cubatch.set_enabled(False)):
        try:
            call()
        except cubatch.NotLoadedError as e:
            assert "not preloaded" in str(e), e
        else:
            raise AssertionError("no NotLoadedError")
    print("module without the preload: ok")
    sys.exit(0)
s = cubatch.stats()
assert isinstance(s, dict) and s["cubatch"] == cubatch.__version__ and "counters" in s, s
assert s["batching"] is True and cubatch.batching() is True, s
try:
    r = cubatch.set_enabled(False)
    cubatch.set_enabled(True)
    print("set_enabled: the library has it (returned %r)" % (r,))
except cubatch.CubatchError as e:
    assert "has no cubatch_set_enabled" in str(e), e
    print("set_enabled: clear error: %s" % e)
print("module with the preload: ok (%d counters)" % len(s["counters"]))
PY
(cd "$work" && "$py" mod.py no) && ok "module without the preload" || bad "module without the preload"
(cd "$work" && LD_LIBRARY_PATH=$src/tests/sim/.libs "$work/venv/bin/cubatch" "$py" mod.py yes) &&
    ok "module under the console script" || bad "module under the preload"

[ $fail -eq 0 ] && say "all passed" || say "FAILED (above)"
exit $fail
