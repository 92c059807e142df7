"""The console scripts: `cubatch` runs the launcher this package carries (the
same shell script as the installed tools/cubatch, the same flags and exit
statuses) with the package's own libcubatch.so; `cubatch-report` runs the
report summer.  Neither returns: each replaces this process."""
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def main():
    launcher = os.path.join(_here, "_bin", "cubatch")
    # the package's library, unless the user named another (as with tools/cubatch)
    if not os.environ.get("CUBATCH_LIBRARY"):
        os.environ["CUBATCH_LIBRARY"] = os.path.join(_here, "_lib", "libcubatch.so")
    try:
        # through sh: the script needs no execute bit; its $0 still finds the
        # option check next to it (_bin/tools/cubatch-check)
        os.execv("/bin/sh", ["/bin/sh", launcher] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write("cubatch: cannot run the launcher %s: %s\n" % (launcher, e.strerror))
        sys.exit(127)


def report():
    script = os.path.join(_here, "_bin", "cubatch-report")
    try:
        os.execv(sys.executable, [sys.executable, script] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write("cubatch-report: cannot run %s: %s\n" % (script, e.strerror))
        sys.exit(1)
