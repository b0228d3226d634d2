#!/usr/bin/env bash
# Peak memory: iolab and fio at 4k random read, QD 128 x 4 threads, O_DIRECT, on the same file,
# alternately. Bar (PRODUCT.md): iolab peak RSS < 64 MiB. Usage: bench/rss.sh [DIR] [PAIRS]
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/var/tmp}
PAIRS=${2:-3}
command -v fio >/dev/null || { [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y fio >/dev/null; }
cargo build --release -q
IOLAB=$PWD/target/release/iolab
F=$(mktemp "$DIR/iolab-rss.XXXXXX")
trap 'rm -f "$F"' EXIT INT TERM
dd if=/dev/urandom of="$F" bs=1M count=1024 status=none
M=bench/lib/measure.py
for i in $(seq "$PAIRS"); do
  python3 $M iolab x -- "$IOLAB" run "$F" --pattern randread --bs 4k --qd 128 --threads 4 --time 3s --repeat 1 --json --no-save
  python3 $M fio x -- fio --name=b --filename="$F" --rw=randread --bs=4k --iodepth=128 --numjobs=4 --thread \
    --ioengine=io_uring --direct=1 --time_based --runtime=3 --size=1g --group_reporting --output-format=json
done | python3 -c '
import json, statistics, sys
rows = {}
for line in sys.stdin:
    d = json.loads(line)
    if "error" in d: print("ERROR", d["error"]); continue
    rows.setdefault(d["tool"], []).append(d)
for t, rs in rows.items():
    m = statistics.median(r["maxrss_kib"] for r in rs) / 1024
    print("%-6s peak RSS median %.1f MiB over %d runs (4k randread QD128 x 4 threads)" % (t, m, len(rs)))
'
