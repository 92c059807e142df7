"""The console scripts: `cubatch` runs the launcher this package carries (the
script `make` builds from tools/cubatch.in, its library path made the package's
own by tools/make-wheel.py: the same flags and exit statuses), so that the
program starts as under the installed tools/cubatch; `cubatch-report` runs the
report summer.  Neither returns: each replaces this process."""
import os
import signal
import sys

_here = os.path.dirname(os.path.abspath(__file__))

# What Python does at start-up that exec would carry to the program: it sets
# these signals to ignored (an ignored signal stays ignored across exec; caught
# ones, SIGINT's, go back to the default), so a program run from a shell would
# die of SIGPIPE where under this launcher it got EPIPE ("Broken pipe").
# Signals ignored by whoever started Python (nohup's SIGHUP) are left as they are;
# one of these three that it ignored too cannot be told apart, and goes back to the default.
_PYTHON_IGNORES = ("SIGPIPE", "SIGXFSZ", "SIGXFZ")


def _start_environment():
    """The environment this process was started with, as the shell launcher
    would get it: Python may add to os.environ at start-up (PEP 538's
    LC_CTYPE=C.UTF-8 in the C locale), which /proc/self/environ does not show.
    None when it cannot be read (os.environ is used then)."""
    try:
        with open("/proc/self/environ", "rb") as f:
            data = f.read()
    except OSError:
        return None
    env = {}
    for item in data.split(b"\0"):
        name, eq, value = item.partition(b"=")
        if eq and name and name not in env:  # the first of a name, as getenv finds it
            env[name] = value
    return env


def _restore_signals():
    for name in _PYTHON_IGNORES:
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)


def main():
    launcher = os.path.join(_here, "_bin", "cubatch")
    env = _start_environment()
    if env is None:
        env = os.environ
    _restore_signals()
    try:
        # through sh: the script needs no execute bit; its $0 still finds the
        # option check (_bin/tools/cubatch-check) and the library (_lib) next to it
        os.execve("/bin/sh", ["/bin/sh", launcher] + sys.argv[1:], env)
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
