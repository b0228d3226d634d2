#!/usr/bin/env bash
# Open loop and SLO search, measured (issue 30). Needs root, cgroup v1 blkio and fio.
#   (1) precision: a RAM-backed loop device at an open-loop 20k IOPS, 4k randread QD 8:
#       achieved/asked (bar: within 0.5%), issue error p50/p99 (bar: p99 < 50 us), late IOs.
#   (2) coordinated omission: the same device throttled to 500 read IOPS for 200 ms of every
#       2 s (a periodic stall), open loop at 2000 IOPS, iolab --rate and fio --rate_iops
#       alternately: iolab's latency (from schedule) p99/p99.9 shows the stall, its service time
#       and fio's lat (measured from submission) do not; printed side by side.
#   (3) the search: --slo 'p99<=20ms' on the device throttled to 2000 IOPS: the capacity and
#       its interval (bar: within 5% below 2000) and the search's wall time (bar: < 2 min).
#   (4) the search as a user starts it (issue 40): no --time, --slo 'p99<=50ms' --budget 2m on
#       the device throttled to 3000 IOPS, at QD 1 and QD 32: the capacity against 3000 (bar:
#       within 5%) and the wall time (bar: the budget + one trial).
# Usage: bench/slo.sh [PAIRS]   (default 3; medians printed)
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${1:-3}
BLKIO=/sys/fs/cgroup/blkio
[ "$(id -u)" = 0 ] || { echo "bench/slo.sh: needs root" >&2; exit 2; }
[ -w "$BLKIO/cgroup.procs" ] || { echo "bench/slo.sh: cgroup v1 blkio is not mounted at $BLKIO" >&2; exit 2; }
command -v fio >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y fio >/dev/null
cargo build --release -q
IOLAB=$PWD/target/release/iolab
IMG=$(mktemp /dev/shm/iolab-slo.XXXXXX)
CG=$BLKIO/iolab-slo-$$
LOOP=""
STALLER=""
cleanup() {
  [ -n "$STALLER" ] && kill "$STALLER" 2>/dev/null && wait "$STALLER" 2>/dev/null || true
  [ -d "$CG" ] && { cat "$CG/cgroup.procs" 2>/dev/null | while read -r p; do echo "$p" > "$BLKIO/cgroup.procs"; done; rmdir "$CG"; }
  [ -n "$LOOP" ] && losetup -d "$LOOP"
  rm -f "$IMG"
}
trap cleanup EXIT INT TERM
truncate -s 512M "$IMG"
dd if=/dev/urandom of="$IMG" bs=1M count=512 conv=notrunc status=none
LOOP=$(losetup --find --show --direct-io=on "$IMG")
DEV=$(lsblk -dno MAJ:MIN "$LOOP" | tr -d ' ')
mkdir "$CG"
inside() { sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG" "$@"; }
limit() { echo "$DEV $1" > "$CG/blkio.throttle.read_iops_device"; }
med() { python3 -c "import sys,statistics; v=[float(x) for x in sys.argv[1:]]; print(f'{statistics.median(v):.4g}')" "$@"; }

echo "(1) open-loop precision: 20k IOPS, 4k randread QD 8, RAM-backed loop, 3 s"
R=(); P50=(); P99=(); LATE=()
for _ in $(seq "$PAIRS"); do
  read -r r p50 p99 late < <("$IOLAB" run "$LOOP" --pattern randread --bs 4k --qd 8 --rate 20000 --time 3s \
    --repeat 1 --json --no-save 2>/dev/null | python3 -c "import json,sys
s=json.load(sys.stdin)['summary'][0]['open_loop']
print(s['achieved_iops']/s['asked_iops'], s['issue_error']['p50_ns']/1e3, s['issue_error']['p99_ns']/1e3, s['late'])")
  R+=("$r"); P50+=("$p50"); P99+=("$p99"); LATE+=("$late")
done
printf '  achieved/asked %s   issue error p50 %s us  p99 %s us   late IOs %s\n' \
  "$(med "${R[@]}")" "$(med "${P50[@]}")" "$(med "${P99[@]}")" "$(med "${LATE[@]}")"

echo "(2) coordinated omission: 2000 IOPS open loop, the device stalls to 500 IOPS for 200 ms every 2 s"
( while true; do limit 500; sleep 0.2; limit 0; sleep 1.8; done ) & STALLER=$!
IS99=(); IS999=(); IV99=(); F99=(); F999=()
for _ in $(seq "$PAIRS"); do
  read -r a b c < <(inside "$IOLAB" run "$LOOP" --pattern randread --bs 4k --qd 32 --rate 2000 --time 10s \
    --repeat 1 --json --no-save 2>/dev/null | python3 -c "import json,sys
o=json.load(sys.stdin)['summary'][0]['ops'][0]
print(o['latency']['p99_ns']/1e6, o['latency']['p99_9_ns']/1e6, o['service']['p99_ns']/1e6)")
  IS99+=("$a"); IS999+=("$b"); IV99+=("$c")
  read -r d e < <(inside fio --name=t --filename="$LOOP" --rw=randread --bs=4k --iodepth=32 --ioengine=io_uring \
    --direct=1 --rate_iops=2000 --lat_percentiles=1 --time_based --runtime=10 --output-format=json | python3 -c "import json,sys
p=json.load(sys.stdin)['jobs'][0]['read']['lat_ns']['percentile']
print(p['99.000000']/1e6, p['99.900000']/1e6)")
  F99+=("$d"); F999+=("$e")
done
kill "$STALLER"; wait "$STALLER" 2>/dev/null || true; STALLER=""; limit 0
printf '  %-34s %10s %10s\n' "" "p99 (ms)" "p99.9 (ms)"
printf '  %-34s %10s %10s\n' "iolab latency (from schedule)" "$(med "${IS99[@]}")" "$(med "${IS999[@]}")"
printf '  %-34s %10s %10s\n' "iolab service time" "$(med "${IV99[@]}")" "-"
printf '  %-34s %10s %10s\n' "fio --rate_iops lat" "$(med "${F99[@]}")" "$(med "${F999[@]}")"

echo "(3) the search: p99<=20ms on the device throttled to 2000 IOPS"
limit 2000
for _ in $(seq "$PAIRS"); do
  t0=$(date +%s.%N)
  inside "$IOLAB" run "$LOOP" --pattern randread --bs 4k --qd 16 --time 1s --slo 'p99<=20ms' --json --no-save 2>/dev/null |
    python3 -c "import json,sys
c=json.load(sys.stdin)['summary'][0]['slo']
lo,hi=c['interval'] or (0,0)
print(f\"  {c['verdict']}: capacity {c['capacity']:.0f} IOPS ({c['capacity']/2000:.3f} of 2000), 95% {lo:.0f}-{hi:.0f}\", end='')"
  echo "   wall $(python3 -c "print(f'{$(date +%s.%N)-$t0:.0f} s')")"
done

echo "(4) the search without --time: p99<=50ms --budget 2m on the device throttled to 3000 IOPS"
limit 3000
for qd in 1 32; do
  for _ in $(seq "$PAIRS"); do
    t0=$(date +%s.%N)
    inside "$IOLAB" run "$LOOP" --pattern randread --bs 4k --qd "$qd" --slo 'p99<=50ms' --budget 2m --json --no-save 2>/dev/null |
      python3 -c "import json,sys
j=json.load(sys.stdin)
c=j['summary'][0]['slo']
n=len(j['run']['workloads'][0]['trials'])
print(f\"  QD {$qd}: {c['verdict']}: capacity {c['capacity'] or 0:.0f} IOPS ({(c['capacity'] or 0)/3000:.3f} of 3000), peak {c['peak']:.0f}, {n} trials\", end='')"
    echo "   wall $(python3 -c "print(f'{$(date +%s.%N)-$t0:.0f} s')")"
  done
done
