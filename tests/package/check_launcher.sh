#!/bin/sh
# The launcher and the report, as the README describes them, against the
# simulated driver: usage and exit codes, --help generated from options.def,
# flags reaching the library, an existing LD_PRELOAD kept, the program's exit
# status passed back, the text and JSON reports; the README's option table equal
# to the generated one; the demo of the quick start.
b=${top_builddir:-.}
s=${top_srcdir:-.}
L=$(cd "$b" && pwd)/src/.libs/libcubatch.so
C=$b/cubatch
fail=0
ok() { echo "check_launcher: ok: $1"; }
bad() { echo "check_launcher: FAILED: $1"; fail=1; }
export CUBATCH_LIBRARY="$L" LD_LIBRARY_PATH="$b/tests/sim/.libs" CUBATCH_FLUSH_US=1000000 CUBATCH_SLOW_NS=1000000000

"$C" >/dev/null 2>"$b/launcher.err"; rc=$?
[ $rc -eq 2 ] && grep -q '^usage: cubatch' "$b/launcher.err" && grep -q "Try 'cubatch --help'" "$b/launcher.err" &&
    ok "no command: usage and where the help is, exit 2" || bad "no command (exit $rc)"
# a bare --stats takes no value: the next word was taken for the command
"$C" --stats json /bin/true >/dev/null 2>"$b/launcher.err"; rc=$?
[ $rc -eq 127 ] && grep -q "did you mean --stats=json?" "$b/launcher.err" &&
    ok "--stats json: exit 127, with the form meant" || bad "--stats json (exit $rc): $(cat "$b/launcher.err")"
# in a build tree, the library built there (not the install path that does not exist yet)
v=$(env -u CUBATCH_LIBRARY "$C" --version | sed -n 's/^library: //p')
[ "$v" = "$L" ] && ok "--version in the build tree names its library" || bad "--version names '$v', not $L"
"$C" --no-such-flag /bin/true >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok "unknown flag: exit 2" || bad "unknown flag (exit $rc)"
"$C" --version | grep -q '^cubatch 0' && ok "--version" || bad "--version"
help=$("$C" --help 2>&1)
for v in $(sed -n 's/^CB_OPTION(\([a-z_]*\),.*/\1/p' "$s/src/options.def" | tr a-z A-Z); do
    printf '%s\n' "$help" | grep -q "CUBATCH_$v" || bad "--help lacks CUBATCH_$v"
done
ok "--help lists every option of options.def"
# The help's first paragraph names the engines the default (--engine=auto) uses.
intro=$(printf '%s\n' "$help" | sed -n '/^Run COMMAND/,/^$/p')
printf '%s\n' "$intro" | grep -q 'copy kernel' && printf '%s\n' "$intro" | grep -q 'cuMemcpyBatchAsync' &&
    ok "--help names the copy kernel and the batch API" || bad "--help's description: $intro"
CUBATCH_LIBRARY=/nonexistent/libcubatch.so "$C" /bin/true 2>/dev/null; rc=$?
[ $rc -eq 127 ] && ok "missing library: exit 127" || bad "missing library (exit $rc)"
"$C" -- sh -c 'exit 42'; rc=$?
[ $rc -eq 42 ] && ok "exit status passed back" || bad "exit status (got $rc)"
pre=$(LD_PRELOAD=libm.so.6 "$C" -- sh -c 'printf %s "$LD_PRELOAD"')
[ "$pre" = "$L libm.so.6" ] && ok "existing LD_PRELOAD kept after ours" || bad "LD_PRELOAD became '$pre'"
# what the program gets besides: its starter's signal dispositions (none left
# ignored) and environment, nothing of the launcher's own (as the installed
# launchers must: tools/check-deb.sh, tools/check-wheel.sh)
sh "$s/tools/check-launched-env.sh" --lib "$L" -- "$C"; rc=$?
[ $rc -eq 0 ] || [ $rc -eq 77 ] || bad "signals or environment of the launched program (above)"
flags=$("$C" --max-batch=8 --policy=all --off -- sh -c 'printf "%s %s %s" "$CUBATCH_MAX_BATCH" "$CUBATCH_POLICY" "$CUBATCH_ENABLE"')
[ "$flags" = "8 all 0" ] && ok "flags become CUBATCH_ variables" || bad "flags gave '$flags'"

json=$b/launcher-stats.json
"$C" --stats=json --stats-file="$json" --engine=batch --max-batch=8 --merge-adjacent=0 -- "$b/tests/probe" d2h_20 >/dev/null 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q '"batch_max":8,' "$json" && grep -q '"batches":3,' "$json"; then
    ok "JSON report, with --max-batch and --merge-adjacent honoured"
else
    bad "JSON report (exit $rc): $(cat "$json" 2>/dev/null)"
fi
text=$("$C" --stats --engine=batch -- "$b/tests/probe" basic 2>&1 >/dev/null)
for want in 'batching on (ok)' 'cuMemcpyHtoDAsync_v2 ' 'deferred ' 'pass_first ' 'batches ' 'flush_full ' 'mean_batch '; do
    printf '%s\n' "$text" | grep -q "$want" || bad "text report lacks '$want'"
done
ok "text report"
quiet=$("$C" -- "$b/tests/probe" basic 2>&1 >/dev/null)
[ -z "$quiet" ] && ok "no report unless asked" || bad "unasked output: $quiet"
bad_env=$(CUBATCH_MAX_BATCH=lots "$b/tests/probe" basic 2>&1 >/dev/null)
[ -z "$bad_env" ] && ok "nothing printed without the preload" || bad "stderr without preload: $bad_env"
warn=$(CUBATCH_MAX_BATCH=lots "$C" -- "$b/tests/probe" basic 2>&1 >/dev/null)
printf '%s\n' "$warn" | grep -q 'CUBATCH_MAX_BATCH="lots" is not valid: it accepts an integer from 2 to 32768' &&
    ok "malformed value: one clear warning" || bad "malformed value: '$warn'"

# values are checked before the program starts, by the library's own parser
out=$("$C" --stats=garbage -- sh -c 'echo ran' 2>&1); rc=$?
if [ $rc -eq 2 ] && ! printf '%s\n' "$out" | grep -q '^ran' &&
   printf '%s\n' "$out" | grep -q 'CUBATCH_STATS="garbage" is not valid: it accepts one of off|on|json'; then
    ok "bad value refused before the program starts, in the library's words"
else
    bad "--stats=garbage (exit $rc): $out"
fi
out=$(CUBATCH_MAXBATCH=8 "$C" -- sh -c 'echo ran' 2>&1); rc=$?
[ $rc -eq 2 ] && printf '%s\n' "$out" | grep -q 'did you mean CUBATCH_MAX_BATCH?' && ! printf '%s\n' "$out" | grep -q '^ran' &&
    ok "misspelt CUBATCH_ variable refused, closest name given" || bad "CUBATCH_MAXBATCH (exit $rc): $out"
out=$(CUBATCH_POLICY=h2d:1G-2G "$C" -- sh -c 'echo ran' 2>&1); rc=$?
[ $rc -eq 2 ] && printf '%s\n' "$out" | grep -q 'starts above CUBATCH_MAX_COPY (1M)' &&
    ok "unreachable policy refused, with the limit named" || bad "policy (exit $rc): $out"
# CUBATCH_LOG=0 (or --log=0) is no message at all, the launcher's refusal included
for how in "env CUBATCH_LOG=0 $C" "env CUBATCH_LOG=00 $C" "$C --log=0"; do
    out=$(CUBATCH_POLICY=h2d:1G-2G CUBATCH_MAXBATCH=8 $how -- sh -c 'echo ran' 2>&1); rc=$?
    [ $rc -eq 2 ] && [ -z "$out" ] && ok "refused silently at log level 0 ($how)" || bad "$how (exit $rc): '$out'"
done
# the library's words agree with what the launcher does: nothing "is ignored"
# (or kept at its default) when the program is then not started
out=$(CUBATCH_MAXBATCH=8 CUBATCH_STATS=loud "$C" -- sh -c 'echo ran' 2>&1); rc=$?
[ $rc -eq 2 ] && ! printf '%s\n' "$out" | grep -q 'it is ignored\|keeping the default' &&
    printf '%s\n' "$out" | grep -q "not starting 'sh'" &&
    ok "the refusal's messages say what happens: the program is not started" || bad "refusal wording (exit $rc): $out"
# a value forgotten: the command was taken for it
out=$("$C" --max-batch ./prog 2>&1); rc=$?
[ $rc -eq 2 ] && printf '%s\n' "$out" | grep -q "'./prog' was taken as the value of --max-batch" &&
    ok "--max-batch ./prog: the forgotten value said plainly" || bad "--max-batch ./prog (exit $rc): $out"
out=$("$C" --policy= -- sh -c 'echo ran' 2>&1); rc=$?
[ $rc -eq 2 ] && printf '%s\n' "$out" | grep -q "option '--policy' needs a value" &&
    ok "an empty flag value is a usage error" || bad "--policy= (exit $rc): $out"
# the boolean words, for 0|1 options and --stats, as --help and the README say
for w in $("$b/tools/options-doc" --bool-words); do
    out=$("$C" --stats="$w" --pipeline="$w" -- sh -c 'echo ran' 2>&1); rc=$?
    [ $rc -eq 0 ] && [ "$out" = ran ] || bad "--stats=$w --pipeline=$w (exit $rc): $out"
    printf '%s\n' "$help" | grep -q "[ /]$w[/ ,]" || bad "--help does not name the word $w"
done
ok "every boolean word accepted by --stats and 0|1 options, and named by --help"
out=$("$C" --max-copy=1T --policy=h2d:1G-2G -- sh -c 'echo ran' 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$out" = ran ] && ok "--max-copy=1T accepted, as --help documents" || bad "--max-copy=1T (exit $rc): $out"
out=$(CUBATCH_LIBRARY=/etc/passwd "$C" -- sh -c 'echo ran' 2>&1); rc=$?
[ $rc -eq 127 ] && printf '%s\n' "$out" | grep -q 'cannot be loaded' && ok "a library that cannot be loaded: exit 127" ||
    bad "unloadable library (exit $rc): $out"

# --opt value as well as --opt=value
flags=$("$C" --log 2 --max-batch 8 --policy all --stats-file /dev/null -- sh -c \
        'printf "%s %s %s %s" "$CUBATCH_LOG" "$CUBATCH_MAX_BATCH" "$CUBATCH_POLICY" "$CUBATCH_STATS_FILE"')
[ "$flags" = "2 8 all /dev/null" ] && ok "--opt value" || bad "--opt value gave '$flags'"

# commands that exec cannot run: said plainly, documented statuses
out=$("$C" exit 5 2>&1); rc=$?
[ $rc -eq 127 ] && printf '%s\n' "$out" | grep -q "'exit' is a shell builtin" && ok "shell builtin: exit 127, said so" ||
    bad "builtin (exit $rc): $out"
out=$("$C" /tmp 2>&1); rc=$?
[ $rc -eq 126 ] && printf '%s\n' "$out" | grep -q "'/tmp' is a directory" && ok "directory: exit 126, said so" ||
    bad "directory (exit $rc): $out"
noexec=$b/launcher-noexec
printf '#!/bin/sh\n' >"$noexec"; chmod 644 "$noexec"
out=$("$C" "$noexec" 2>&1); rc=$?
[ $rc -eq 126 ] && printf '%s\n' "$out" | grep -q "is not executable" && ok "not executable: exit 126, said so" ||
    bad "not executable (exit $rc): $out"
rm -f "$noexec"
out=$("$C" no-such-command-cubatch 2>&1); rc=$?
[ $rc -eq 127 ] && printf '%s\n' "$out" | grep -q "command not found" && ok "not found: exit 127" || bad "not found (exit $rc): $out"
printf '%s\n' "$help" | grep -q '^  126 ' && printf '%s\n' "$help" | grep -q '^  127 ' && printf '%s\n' "$help" | grep -q '^  2 ' &&
    ok "--help documents exit statuses 2, 126, 127" || bad "--help exit statuses"

# a report file alone asks for a text report (the library's rule, not the launcher's)
txt=$b/launcher-stats.txt
"$C" --stats-file="$txt" -- "$b/tests/probe" basic >/dev/null 2>&1
grep -q 'report (pid' "$txt" && ok "--stats-file alone: text report" || bad "--stats-file alone: $(cat "$txt" 2>/dev/null)"
rm -f "$txt"
txt=$b/launcher-stats-env.txt
CUBATCH_STATS_FILE="$txt" "$C" -- "$b/tests/probe" basic >/dev/null 2>&1
grep -q 'report (pid' "$txt" && ok "CUBATCH_STATS_FILE alone: text report" || bad "CUBATCH_STATS_FILE alone"
rm -f "$txt"

# the README's option table is the generated one
gen=$("$b/tools/options-doc" --markdown)
doc=$(sed -n '/options-table: begin/,/options-table: end/p' "$s/README.md" | sed '1d;$d')
[ "$gen" = "$doc" ] && ok "README option table up to date" || bad "README option table differs from tools/options-doc --markdown"

# the README's words for the boolean values are the library's
gen=$("$b/tools/options-doc" --bool-words | sed 's/.*/`&`/' | tr '\n' ' ' | sed 's/ $//')
doc=$(sed -n '/bool-words: begin/,/bool-words: end/p' "$s/README.md" | sed '1d;$d')
[ "$doc" = "Options of values 0|1 take $gen" ] && ok "README's boolean words are the library's" ||
    bad "README's boolean words '$doc' differ from tools/options-doc --bool-words ($gen)"

# the README's default policy is the one the library prints at --log=2
lib_policy=$("$C" --log=2 -- "$b/tests/probe" basic 2>&1 >/dev/null | sed -n 's/^cubatch: option policy = \(.*\) (default)$/\1/p')
doc_policy=$(tr '\n' ' ' <"$s/README.md" | grep -o 'The default policy ([^)]*) is `[^`]*`' | sed 's/.*`\(.*\)`$/\1/')
[ -n "$lib_policy" ] && [ "$lib_policy" = "$doc_policy" ] && ok "README's default policy is the library's ($lib_policy)" ||
    bad "default policy: library '$lib_policy', README '$doc_policy'"
# and the example of the option dump (docs/guide.md, "Messages and log levels")
# names the same default
guide=$s/docs/guide.md
[ -f "$guide" ] || bad "$guide is missing (the README's Options link to it; is it in EXTRA_DIST?)"
tr '\n' ' ' <"$guide" | grep -q "option policy = $lib_policy (default: the value given was rejected)" &&
    ok "the guide's log example shows the default policy" || bad "docs/guide.md's log example of the policy is not '$lib_policy'"

# the quick start's demo, against the simulated driver
demo=$(CB_BUILDDIR="$b" sh "$s/examples/run-demo.sh" --sim 2>&1); rc=$?
if [ $rc -eq 0 ] && printf '%s\n' "$demo" | grep -q 'demo: OK' && printf '%s\n' "$demo" | grep -qi 'simulated'; then
    ok "demo under the launcher, simulated driver, says so"
else
    bad "demo (exit $rc): $demo"
fi
# the "with cubatch" line it prints works when pasted into a fresh shell
cmd=$(printf '%s\n' "$demo" | sed -n 's/^run-demo: with cubatch: //p')
pasted=$(cd / && env -u CUBATCH_LIBRARY -u LD_LIBRARY_PATH sh -c "$cmd" 2>&1); rc=$?
[ -n "$cmd" ] && [ $rc -eq 0 ] && printf '%s\n' "$pasted" | grep -q 'demo: OK (every byte' &&
    ok "the demo's command line works pasted" || bad "pasted demo command '$cmd' (exit $rc): $pasted"
rm -f "$json" "$b/launcher.err"
exit $fail
