#!/usr/bin/env bash
# How long the default `iolab run` and `iolab run --quick` take (bars: about a minute, about
# 15 s), measured on a directory. Usage: bench/suite-time.sh [DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/var/tmp}
RUNS=${2:-2}
cargo build --release -q
IOLAB=$PWD/target/release/iolab
for mode in "--quick" ""; do
  for i in $(seq "$RUNS"); do
    s=$(date +%s.%N)
    # shellcheck disable=SC2086
    (cd "$DIR" && "$IOLAB" run $mode --no-save >/dev/null)
    e=$(date +%s.%N)
    echo "${mode:-default} $(echo "$e - $s" | bc)"
  done
done | python3 -c '
import statistics, sys
t = {}
for line in sys.stdin:
    k, v = line.split()
    t.setdefault(k, []).append(float(v))
for k, v in t.items():
    print("iolab run %-8s median %.1f s over %d runs" % (k, statistics.median(v), len(v)))
'
