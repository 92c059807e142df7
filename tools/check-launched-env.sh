#!/bin/sh
# check-launched-env.sh - what a program gets from a cubatch launcher besides the
# preload: the signal dispositions and the environment its starter gave it, and
# nothing of the launcher's own plumbing (issue 42: under the wheel's console
# script, Python's start-up left SIGPIPE and SIGXFSZ ignored in the program, and
# CUBATCH_LIBRARY set).  Used by tests/package/check_launcher.sh (the build
# tree's launcher), tools/check-deb.sh and tools/check-wheel.sh (the installed
# ones, against the build tree's as REFERENCE).
#
#   tools/check-launched-env.sh [--ref REFERENCE] [--lib LIBRARY] [--] LAUNCHER [ARGS...]
#
# LAUNCHER [ARGS...] is the launcher as a command (`PYTHON -m cubatch` as three
# words).  Each program is started, with --enable=0, from a starter (python3)
# that sets every signal's disposition and passes on the environment it was
# given: this script's, less LD_PRELOAD, CUBATCH_LIBRARY, LC_ALL and LC_CTYPE,
# with LANG=C (the C locale, where Python >= 3.7 sets LC_CTYPE for itself).
#   - every signal at its default: the program's SigIgn (/proc/self/status) is
#     the starter's own, all zeros (but glibc's signals 32 and 33, which no
#     starter can reset, when inherited ignored), and `LAUNCHER yes | head -1`
#     dies of SIGPIPE without a word;
#   - SIGHUP and SIGINT ignored (nohup, a background job): the starter's again,
#     those two more;
#   - its environment is the starter's plus LD_PRELOAD (LIBRARY, when given) and
#     CUBATCH_ENABLE=0, nothing else;
#   - with REFERENCE: the same SigIgn and, LD_PRELOAD aside, the same environment;
#   - with LIBRARY: CUBATCH_LIBRARY=LIBRARY set by the user is used and kept.
# Exit 0 when all hold, 1 when one does not, 77 without python3.
set -u
ref='' lib=''
while [ $# -gt 0 ]; do
    case $1 in
    --ref) ref=${2:?--ref needs a launcher}; shift 2 ;;
    --lib) lib=${2:?--lib needs a library}; shift 2 ;;
    --) shift; break ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] || { echo "usage: check-launched-env.sh [--ref REFERENCE] [--lib LIBRARY] [--] LAUNCHER [ARGS...]" >&2; exit 2; }
what="$*"
say() { echo "check-launched-env: $*"; }
fail=0
ok() { say "ok: $what: $1"; }
bad() { say "FAILED: $what: $1"; fail=1; }
command -v python3 >/dev/null 2>&1 || { say "no python3: signals and environment not checked"; exit 77; }

unset LD_PRELOAD CUBATCH_LIBRARY LC_ALL LC_CTYPE
LANG=C
export LANG
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# start IGNORED COMMAND...: COMMAND with every signal at its default but those
# named in IGNORED (SIGHUP,SIGINT), ignored; the environment the starter was given
# (/proc/self/environ: not what Python's start-up added to os.environ).
start() {
    python3 -c 'import os, signal, sys
ign = [getattr(signal, n) for n in sys.argv[1].split(",") if n]
for s in signal.valid_signals():
    if s not in (signal.SIGKILL, signal.SIGSTOP):
        try:
            signal.signal(s, signal.SIG_IGN if s in ign else signal.SIG_DFL)
        except (OSError, ValueError):
            pass
env = {}
for item in open("/proc/self/environ", "rb").read().split(b"\0"):
    k, eq, v = item.partition(b"=")
    if eq and k and k not in env:
        env[k] = v
os.execvpe(sys.argv[2], sys.argv[2:], env)' "$@"
}
sigign() { # IGNORED [LAUNCHER...]: the SigIgn of a program (the launcher) starts
    ign=$1; shift
    start "$ign" "$@" sed -n 's/^SigIgn:[[:space:]]*//p' /proc/self/status 2>&1
}

# ---- signals -------------------------------------------------------------------
for case in ':every signal at its default' 'SIGHUP,SIGINT:SIGHUP and SIGINT ignored'; do
    ign=${case%%:*} how=${case#*:}
    want=$(sigign "$ign")   # the starter's, as a program started without a launcher gets it
    case $ign:$want in
    # nothing ignored (SIGHUP and SIGINT: 3) but maybe glibc's 32 and 33
    :0000000[01][08]0000000|SIGHUP,SIGINT:0000000[01][08]0000003) ;;
    *) bad "the starter gives the mask '$want', not the one asked for: python3 cannot set the signals" ;;
    esac
    got=$(sigign "$ign" "$@" --enable=0)
    [ "$got" = "$want" ] && ok "started with $how: the program's SigIgn is $got, as without the launcher" ||
        bad "started with $how: the program's SigIgn is '$got', without the launcher $want"
    if [ -n "$ref" ]; then
        r=$(sigign "$ign" "$ref" --enable=0)
        [ "$got" = "$r" ] && ok "the same SigIgn as under $ref" || bad "SigIgn '$got', under $ref '$r'"
    fi
done
out=$(start '' sh -c '"$@" --enable=0 yes 2>"$0" | head -n 1' "$tmp/yes.err" "$@")
[ "$out" = y ] && [ ! -s "$tmp/yes.err" ] && ok "'yes | head -1': killed by SIGPIPE, silently" ||
    bad "'yes | head -1' printed '$out', and on stderr: $(cat "$tmp/yes.err")"

# ---- the environment -------------------------------------------------------------
start '' env | sort >"$tmp/plain"
# launched COMMAND...: the environment the launched program gets, less LD_PRELOAD
# (in FILE.preload), in FILE
launched() { # FILE COMMAND...
    f=$1; shift
    start '' "$@" --enable=0 env >"$f.raw" 2>&1
    sed -n 's/^LD_PRELOAD=//p' "$f.raw" >"$f.preload"
    grep -v '^LD_PRELOAD=' "$f.raw" | sort >"$f"
}
launched "$tmp/got" "$@"
{ cat "$tmp/plain"; echo CUBATCH_ENABLE=0; } | sort >"$tmp/want"
if cmp -s "$tmp/want" "$tmp/got"; then
    ok "the program's environment: the starter's, with LD_PRELOAD and CUBATCH_ENABLE=0"
else
    bad "the program's environment differs from the starter's (+ CUBATCH_ENABLE=0): < not given it, > added: $(
        diff "$tmp/want" "$tmp/got" | grep '^[<>]' | cut -c1-200 | tr '\n' ' ')"
fi
grep -q '^CUBATCH_LIBRARY=' "$tmp/got" && bad "CUBATCH_LIBRARY is set in the program's environment"
pre=$(cat "$tmp/got.preload")
if [ -n "$lib" ]; then
    [ "$pre" = "$lib" ] && ok "LD_PRELOAD=$lib" || bad "LD_PRELOAD is '$pre', not $lib"
else
    case $pre in
    /*/libcubatch.so) ok "LD_PRELOAD=$pre" ;;
    *) bad "LD_PRELOAD is '$pre'" ;;
    esac
fi
if [ -n "$ref" ]; then
    launched "$tmp/ref" "$ref"
    cmp -s "$tmp/ref" "$tmp/got" && ok "LD_PRELOAD aside, the same environment as under $ref" ||
        bad "the environment under $ref differs (<) from this one's (>): $(
            diff "$tmp/ref" "$tmp/got" | grep '^[<>]' | cut -c1-200 | tr '\n' ' ')"
fi
if [ -n "$lib" ]; then
    got=$(CUBATCH_LIBRARY=$lib start '' "$@" --enable=0 sh -c 'printf "%s|%s" "$CUBATCH_LIBRARY" "$LD_PRELOAD"' 2>&1)
    [ "$got" = "$lib|$lib" ] && ok "a CUBATCH_LIBRARY the user set is used and kept" ||
        bad "with CUBATCH_LIBRARY=$lib set: '$got'"
fi
exit $fail
