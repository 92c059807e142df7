#!/bin/sh
# The preloaded library under valgrind (memcheck): rule scenarios against the
# simulated driver, one thread and several, plus the unit tests.  Any error
# memcheck reports fails the test.  Skipped (77) where valgrind is missing.
command -v valgrind >/dev/null 2>&1 || { echo "check_valgrind: no valgrind, skipped"; exit 77; }
b=${top_builddir:-.}
lib=$b/src/.libs/libcubatch.so
# memcheck and AddressSanitizer do not mix: the sanitizer build has its own checks
if ldd "$lib" 2>/dev/null | grep -q -E 'lib(asan|tsan)'; then
    echo "check_valgrind: sanitizer build, skipped"; exit 77
fi
vg="valgrind -q --error-exitcode=9 --leak-check=no --track-origins=no"
status=0
for sc in basic chain capture ptds_ctxsync ptds_legacy destroy errors threads interleave fork exit exit_destructor resolve; do
    out=$(LD_PRELOAD=$lib CUBATCH_FLUSH_US=1000000 LD_LIBRARY_PATH=$b/tests/sim/.libs \
          timeout 300 $vg "$b/tests/probe" "$sc" 2>&1)
    rc=$?
    if [ $rc -ne 0 ] || ! printf '%s\n' "$out" | grep -q '^result: ok'; then
        echo "check_valgrind: $sc failed (exit $rc)"; printf '%s\n' "$out" | grep -v '^resolve:' | tail -30
        status=1
    else
        echo "check_valgrind: $sc clean"
    fi
done
# the in-process parts, with leak checking (they free what they allocate)
out=$(CK_FORK=no timeout 300 valgrind -q --error-exitcode=9 --leak-check=full "$b/tests/check_units" 2>&1)
rc=$?
[ $rc -eq 0 ] && echo "check_valgrind: check_units clean" || { echo "check_valgrind: check_units failed"; printf '%s\n' "$out" | tail -30; status=1; }
exit $status
