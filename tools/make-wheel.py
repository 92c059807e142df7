#!/usr/bin/env python3
"""make-wheel.py - write the cubatch wheel from installed files (make install
DESTDIR=...), with the standard library only.  Called by tools/build-wheel.sh.

    make-wheel.py --lib libcubatch.so --launcher cubatch --report cubatch-report
                  --check cubatch-check --python SRCDIR/python --version V --out DIR

The wheel holds one package, cubatch/ (the ctypes module, the launcher and the
library), and its .dist-info; nothing else.  The launcher is the installed
one, its installed library made the package's (_lib/, found from the script's
own path).  The platform tag is manylinux_2_N for the newest GLIBC_2.N symbol
version the ELF files need (objdump -T), so it says what the files really
require (tools/check-wheel.sh compares it with auditwheel's).  Entries are
sorted, dated SOURCE_DATE_EPOCH (default 1980-01-01), with fixed permissions:
the same inputs give the same bytes.
"""
import argparse
import base64
import hashlib
import os
import platform
import re
import subprocess
import sys
import time
import zipfile


def glibc_minor(path):
    """The newest GLIBC_2.N version PATH's dynamic symbols need (0: none)."""
    out = subprocess.run(["objdump", "-T", path], check=True, capture_output=True, text=True).stdout
    return max([int(m) for m in re.findall(r"\bGLIBC_2\.(\d+)", out)] or [0])


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--lib", "--launcher", "--report", "--check"):
        ap.add_argument(opt, required=True, help="the installed file")
    ap.add_argument("--python", required=True, help="the source folder holding cubatch/")
    ap.add_argument("--license", required=True, help="the project's LICENSE file")
    ap.add_argument("--version", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    native = {  # wheel path: (installed file, mode)
        "cubatch/_lib/libcubatch.so": (a.lib, 0o755),
        "cubatch/_bin/cubatch": (a.launcher, 0o755),
        "cubatch/_bin/cubatch-report": (a.report, 0o755),
        "cubatch/_bin/tools/cubatch-check": (a.check, 0o755),
    }
    files = {}
    for name, (src, mode) in native.items():
        with open(src, "rb") as f:
            files[name] = (f.read(), mode)
    # The launcher preloads the package's library, found next to it as the build
    # tree's is: the console script (cubatch/_launch.py) then sets nothing in the
    # environment, which the program gets as from the installed launcher.
    launcher, n = re.subn(rb"(?m)^installed_library='[^'\n]*'$",
                          b"# the wheel's: the library in the package, _lib/ beside this _bin/ (tools/make-wheel.py)\n"
                          b"installed_library=$(cd -- \"$(dirname -- \"$0\")/../_lib\" && pwd)/libcubatch.so",
                          files["cubatch/_bin/cubatch"][0])
    if n != 1:
        sys.exit("make-wheel: %s has no line installed_library='...' to point at the package's library" % a.launcher)
    files["cubatch/_bin/cubatch"] = (launcher, 0o755)
    pkg = os.path.join(a.python, "cubatch")
    for fn in sorted(os.listdir(pkg)):
        if fn.endswith(".py"):
            with open(os.path.join(pkg, fn), "rb") as f:
                files["cubatch/" + fn] = (f.read(), 0o644)
    files["cubatch/_version.py"] = (('__version__ = "%s"\n' % a.version).encode(), 0o644)

    machine = platform.machine()
    minor = max(glibc_minor(src) for src in (a.lib, a.check))
    tag = "py3-none-manylinux_2_%d_%s" % (max(minor, 17), machine)

    dist = "cubatch-%s.dist-info" % a.version
    files[dist + "/METADATA"] = (("""Metadata-Version: 2.1
Name: cubatch
Version: %s
Summary: Batch a CUDA program's small asynchronous copies, without changing the program (LD_PRELOAD)
Requires-Python: >=3.7
License: MIT
Classifier: License :: OSI Approved :: MIT License
License-File: LICENSE
Description-Content-Type: text/plain

cubatch is a library preloaded into an unmodified CUDA program: it collects runs
of small asynchronous copies per stream and submits each run at once, as one
copy-kernel launch or one cuMemcpyBatchAsync.  Run a program under it with the
console script: `cubatch python train.py` (or `python -m cubatch ...`);
`cubatch --help` lists the options.  The cubatch module (loaded, batching,
flush, set_enabled, stats) talks to the preloaded library through ctypes.
""" % a.version).encode(), 0o644)
    with open(a.license, "rb") as f:
        files[dist + "/LICENSE"] = (f.read(), 0o644)
    files[dist + "/WHEEL"] = (("Wheel-Version: 1.0\nGenerator: cubatch tools/make-wheel.py\n"
                               "Root-Is-Purelib: false\nTag: %s\n" % tag).encode(), 0o644)
    files[dist + "/entry_points.txt"] = (b"[console_scripts]\ncubatch = cubatch._launch:main\n"
                                         b"cubatch-report = cubatch._launch:report\n", 0o644)
    files[dist + "/top_level.txt"] = (b"cubatch\n", 0o644)
    record = []
    for name in sorted(files):
        data = files[name][0]
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
    record.append(dist + "/RECORD,,")
    files[dist + "/RECORD"] = (("\n".join(record) + "\n").encode(), 0o644)

    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    stamp = time.gmtime(max(epoch, 315532800))[:6]
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "cubatch-%s-%s.whl" % (a.version, tag))
    # the package first, the .dist-info last (RECORD at the very end)
    order = sorted(n for n in files if not n.startswith(dist)) + sorted(n for n in files if n.startswith(dist) and
                                                                         not n.endswith("/RECORD")) + [dist + "/RECORD"]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name in order:
            data, mode = files[name]
            info = zipfile.ZipInfo(name, stamp)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so that the permissions are read
            z.writestr(info, data)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
