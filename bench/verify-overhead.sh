#!/usr/bin/env bash
# What --verify costs: the same workloads with and without it, alternately, on the same target.
# Reports median MB/s or IOPS of each and the ratio verify/plain (and CPU per IO).
# Usage: bench/verify-overhead.sh [TARGET_DIR] [PAIRS]   (default: a loop-backed xfs in /dev/shm
# when root, else /var/tmp; 3 pairs)
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${2:-3}
cargo build --release -q
IOLAB=$PWD/target/release/iolab
LOOP=""; MNT=""
cleanup() { [ -n "$MNT" ] && umount "$MNT" 2>/dev/null && rmdir "$MNT"; [ -n "$LOOP" ] && losetup -d "$LOOP"; rm -f /dev/shm/iolab-verify-bench.img; }
trap cleanup EXIT INT TERM
if [ -n "${1:-}" ]; then
  DIR=$1
elif [ "$(id -u)" = 0 ] && command -v mkfs.xfs >/dev/null; then
  truncate -s 3G /dev/shm/iolab-verify-bench.img
  LOOP=$(losetup --find --show /dev/shm/iolab-verify-bench.img)
  mkfs.xfs -q -f "$LOOP"; MNT=$(mktemp -d); mount "$LOOP" "$MNT"; DIR=$MNT
else
  DIR=/var/tmp
fi
M=bench/lib/measure.py
run() { # case-args... [--verify]
  python3 $M iolab x -- "$IOLAB" run "$DIR" --repeat 1 --json --no-save --size 1GiB "$@"
}
{
  for c in "seq write 1m|--pattern write --bs 1m --qd 32 --time 3s" \
           "seq read 1m|--pattern read --bs 1m --qd 32 --time 3s" \
           "randread 4k qd32|--pattern randread --bs 4k --qd 32 --time 3s" \
           "randwrite 4k qd32|--pattern randwrite --bs 4k --qd 32 --time 3s"; do
    IFS='|' read -r name args <<<"$c"
    echo "case $name"
    for i in $(seq "$PAIRS"); do
      # shellcheck disable=SC2086
      run $args | sed 's/"tool": "iolab"/"tool": "plain"/'
      # The workload's own figure: the fill and read-back passes are separate workloads.
      # shellcheck disable=SC2086
      python3 $M iolab x -- "$IOLAB" run "$DIR" --repeat 1 --json --no-save --size 1GiB $args --verify
    done
  done
} > /tmp/verify-bench.jsonl
python3 - <<'PY'
import json, statistics
cases, order, cur = {}, [], None
for line in open("/tmp/verify-bench.jsonl"):
    line=line.strip()
    if line.startswith("case "):
        cur=line[5:]; order.append(cur); cases[cur]={"plain":[], "iolab":[]}; continue
    if not line.startswith("{"): continue
    d=json.loads(line)
    if "error" in d: print(cur, "ERROR", d["error"]); continue
    cases[cur][d["tool"]].append(d)
print("%-22s %12s %12s %8s" % ("case", "plain", "--verify", "ratio"))
for c in order:
    fig = "mbps" if c.startswith("seq") else "iops"
    p = statistics.median(r[fig] for r in cases[c]["plain"])
    v = statistics.median(r[fig] for r in cases[c]["iolab"])
    print("%-22s %12.0f %12.0f %8.3f  (%s, median of %d)" % (c, p, v, v/p, fig, len(cases[c]["plain"])))
PY
