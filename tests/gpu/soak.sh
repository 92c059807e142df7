#!/usr/bin/env bash
# The PyTorch soak (torch_soak.py) plain for SECONDS, then under cubatch for the
# same number of steps, then plain again (the A/A: how far two plain processes
# differ); the digests must match bit for bit.
#   soak.sh LIBCUBATCH [SECONDS] [OUTDIR]
set -u
. "$(dirname "$0")/../harness/lib.sh"
cb_gpu_or_skip soak
lib=$1 secs=${2:-120} out=${3:-/tmp}
here=$(cd "$(dirname "$0")" && pwd)
plain=$(PYTHONUNBUFFERED=1 python3 "$here/torch_soak.py" --seconds "$secs") || { echo "soak: plain run failed"; exit 1; }
echo "plain:   $plain"
steps=$(echo "$plain" | awk '{print $2}')
shim=$(CUBATCH_STATS=json CUBATCH_STATS_FILE="$out/soak-stats.json" LD_PRELOAD="$lib" PYTHONUNBUFFERED=1 \
       python3 "$here/torch_soak.py" --steps "$steps") || { echo "soak: cubatch run failed"; exit 1; }
echo "cubatch: $shim"
plain2=$(PYTHONUNBUFFERED=1 python3 "$here/torch_soak.py" --steps "$steps") || { echo "soak: second plain run failed"; exit 1; }
echo "plain2:  $plain2"
python3 - "$out/soak-stats.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["counters"]
print("cubatch counters:", " ".join(f"{k}={v}" for k, v in c.items() if v))
PY
d=$(echo "$plain" | awk '{print $4}')
[ "$d" = "$(echo "$shim" | awk '{print $4}')" ] && [ "$d" = "$(echo "$plain2" | awk '{print $4}')" ] &&
    { echo "soak: digests equal"; exit 0; }
echo "soak: DIGESTS DIFFER"; exit 1
