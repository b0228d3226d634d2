#!/usr/bin/env bash
# Peak memory: iolab and fio at QD 128 x 4 threads, O_DIRECT, on the same file, alternately:
# 4k random reads (bar, PRODUCT.md: iolab peak RSS < 64 MiB), 1 MiB writes (bar: at most fio's,
# which holds one buffer per IO in flight: 512 MiB), and a 1 MiB 70/30 random mix (iolab holds
# twice that: a read must not land in the random pool writes are issued from; docs/accuracy.md).
# Usage: bench/rss.sh [DIR] [PAIRS]
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
run_case() { # name iolab-args fio-args
  local name=$1 ia=$2 fa=$3
  for i in $(seq "$PAIRS"); do
    # shellcheck disable=SC2086
    python3 $M iolab x -- "$IOLAB" run "$F" $ia --qd 128 --threads 4 --time 3s --repeat 1 --json --no-save |
      sed "s/^{/{\"case\": \"$name\", /"
    # shellcheck disable=SC2086
    python3 $M fio x -- fio --name=b --filename="$F" $fa --iodepth=128 --numjobs=4 --thread \
      --ioengine=io_uring --direct=1 --time_based --runtime=3 --size=1g --group_reporting --output-format=json |
      sed "s/^{/{\"case\": \"$name\", /"
  done
}
{
  run_case "4k randread" "--pattern randread --bs 4k" "--rw=randread --bs=4k"
  run_case "1m write" "--pattern write --bs 1m" "--rw=write --bs=1m"
  run_case "1m randrw 70/30" "--pattern randrw --read-pct 70 --bs 1m" "--rw=randrw --rwmixread=70 --bs=1m"
} | python3 -c '
import json, statistics, sys
rows = {}
for line in sys.stdin:
    d = json.loads(line)
    if "error" in d: print("ERROR", d["error"]); continue
    rows.setdefault((d["case"], d["tool"]), []).append(d)
for (c, t), rs in rows.items():
    m = statistics.median(r["maxrss_kib"] for r in rs) / 1024
    print("%-16s %-6s peak RSS median %7.1f MiB over %d runs (QD 128 x 4 threads)" % (c, t, m, len(rs)))
'
