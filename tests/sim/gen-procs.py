#!/usr/bin/env python3
"""Generate tests/sim/procs.inc: the simulated driver's cuGetProcAddress table.

Maintainer tool, not run by the build (its output is committed).
Sources: tests/data/driver-proc-address-map.txt and tests/data/cudart13-entry-points.txt
(what the real driver answered) and the CUDA toolkit's cudaTypedefs.h (which versions of
each entry point exist: PFN_<name>_v<version>[_ptsz|_ptds]).  Naming rule for versions
the data files do not show: the k-th ABI version of a base name is exported as
<base>_v<k> (the first as <base>), its per-thread twin as that name + _ptsz/_ptds.
Every name the data files show overrides the rule, and the script checks that the
final table reproduces every line of both data files (recorded on a 13.0 driver, so the
check leaves out the entries of later versions, as the simulated driver does when it acts
as a 13.0 one: procs.c).  procs.inc's first line names the cuda.h version of the headers.

Usage: gen-procs.py TOPSRCDIR [CUDA_INCLUDE_DIR] > tests/sim/procs.inc
The committed procs.inc comes from CUDA 13.5's headers (CUDA_INCLUDE_DIR = a directory
holding 13.5's cuda.h and cudaTypedefs.h), so that the simulated driver
can act as any driver up to 13.5 (CUSIM_DRIVER_VERSION, tests/sim/README.md); with an
older toolkit's headers the later entries would be lost.
"""
import collections, os, re, sys

top = sys.argv[1]
cudainc = sys.argv[2] if len(sys.argv) > 2 else '/usr/local/cuda/include'
datafiles = [os.path.join(top, 'tests/data', f) for f in
             ('driver-proc-address-map.txt', 'cudart13-entry-points.txt')]

# versions per base from the typedefs
legv = collections.defaultdict(set)   # base -> {ver}
ptv = collections.defaultdict(dict)   # base -> {ver: suffix}
for hdr in ('cudaTypedefs.h', 'cudaGLTypedefs.h', 'cudaEGLTypedefs.h',
            'cudaVDPAUTypedefs.h', 'cudaProfilerTypedefs.h'):
    p = os.path.join(cudainc, hdr)
    if not os.path.exists(p):
        continue
    for m in re.finditer(r'\*\s*PFN_(cu\w+?)_v(\d+)(_ptsz|_ptds)?\s*\)', open(p).read()):
        b, v, s = m.group(1), int(m.group(2)), m.group(3)
        if s:
            ptv[b][v] = s
        else:
            legv[b].add(v)

# observations from the data files
obs = []   # (base, ver, flags, rc, name, status)
for f in datafiles:
    for line in open(f):
        if line.startswith('#') or not line.strip():
            continue
        p = line.split()
        if p[0] == '0':
            continue
        obs.append((p[0], int(p[1]), int(p[2]), int(p[4]), p[5], int(p[6])))

seen_leg = collections.defaultdict(dict)  # base -> name -> min ver (flags 0)
seen_pt = collections.defaultdict(dict)   # base -> name -> min ver (flags 2, per-thread names)
bases = set(legv) | set(ptv)
for b, v, fl, rc, n, st in obs:
    if rc != 0:
        continue
    bases.add(b)
    if n == 'NULL':
        continue
    if fl == 0 or not (n.endswith('_ptsz') or n.endswith('_ptds')):
        d = seen_leg[b]
    else:
        d = seen_pt[b]
    d[n] = min(v, d.get(n, 1 << 30))
bases.discard('cuNoSuchFunction')

def rule_name(b, k):
    return b if k == 0 else '%s_v%d' % (b, k + 1)

table = []  # (base, from, name, is_pt)
for b in sorted(bases):
    vers = sorted(legv.get(b, ()))
    leg = {}   # name -> from
    for k, v in enumerate(vers):
        leg[rule_name(b, k)] = v
    # data overrides: a name seen in data gets the typedef version <= its first sighting
    for n, v in seen_leg[b].items():
        cands = [tv for tv in vers if tv <= v]
        fv = max(cands) if cands else v
        # drop any rule name that claims the same from-version
        for rn in [rn for rn, rv in leg.items() if rv == fv and rn != n]:
            del leg[rn]
        leg[n] = fv
    pt = {}
    for v, s in ptv.get(b, {}).items():
        # per-thread twin of the legacy name current at that version
        cur = [(fv, n) for n, fv in leg.items() if fv <= v]
        if not cur:
            continue
        n = max(cur)[1] + s
        pt[n] = max(v, 7000)
    for n, v in seen_pt[b].items():
        for rn in [rn for rn, rv in pt.items() if rn != n and rv == v]:
            del pt[rn]
        pt[n] = min(v, pt.get(n, v))
    for n, v in sorted(leg.items(), key=lambda x: x[1]):
        table.append((b, v, n, 0))
    for n, v in sorted(pt.items(), key=lambda x: x[1]):
        table.append((b, v, n, 1))

DATA_DRIVER = 13000  # the driver both data files were recorded on

def lookup(b, ver, flags):
    ents = [t for t in table if t[0] == b and t[1] <= DATA_DRIVER]
    if not ents:
        return 'NULL', 1
    pts = [t for t in ents if t[3]]
    pool = pts if (flags & 2) and pts else [t for t in ents if not t[3]]
    ok = [t for t in pool if t[1] <= ver]
    if not ok:
        return 'NULL', 2
    return max(ok, key=lambda t: t[1])[2], 0

bad = 0
for b, v, fl, rc, n, st in obs:
    if rc != 0 or b == '0':
        continue
    got, gst = lookup(b, v, fl)
    if got != n or (st != -1 and gst != st):
        print('MISMATCH', b, v, fl, n, st, 'got', got, gst, file=sys.stderr)
        bad += 1
if bad:
    sys.exit(1)

m = re.search(r'#define\s+CUDA_VERSION\s+(\d+)', open(os.path.join(cudainc, 'cuda.h')).read())
hdrver = m.group(1) if m else 'unknown'
print('/* Generated by tests/sim/gen-procs.py from tests/data (both .txt files) and cudaTypedefs.h '
      'of CUDA_VERSION %s. Do not edit. */' % hdrver)
print('/* PROC(base, from_version, exported_variant, per_thread) */')
for b, v, n, p in table:
    print('PROC("%s", %d, %s, %d)' % (b, v, n, p))
