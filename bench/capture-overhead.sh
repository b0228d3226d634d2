#!/usr/bin/env bash
# What `iolab capture` costs the workload it records (issue 29), median of pairs: each round
# runs the same workload twice, alternately without and with a capture of its device, and
# takes the IOPS ratio (captured / not captured) of the pair.
#   - device-bound: 4k random reads at QD 16 on a loop device throttled to 5000 IOPS (cgroup v1
#     blkio when mounted, else v2 io.max) — the issue asks < 2% lost;
#   - CPU-bound: the same on a loop device over tmpfs, unthrottled (hundreds of thousands of
#     IOPS): the cost per IO of the tracepoints and the reader, stated in docs/capture.md.
# Also prints the capture's own CPU time per IO (from /proc of the capture process).
#
#   bench/capture-overhead.sh [ROUNDS] [TIME]    (default 5 rounds of 10s runs)
#   IOLAB=/path/to/iolab bench/capture-overhead.sh
#
# Needs root (loop devices, tracefs, cgroups), python3. Everything made is removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
TIME=${2:-10s}
[ "$(id -u)" = 0 ] || { echo "bench/capture-overhead.sh: needs root" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench/capture-overhead.sh: needs python3" >&2; exit 2; }
if [ -z "${IOLAB:-}" ]; then cargo build --release -q; IOLAB=$PWD/target/release/iolab; fi
W=$(mktemp -d /var/tmp/iolab-bench-capture.XXXXXX)
LOOPS=()
CG=
cleanup() {
  if [ -n "$CG" ]; then
    [ -f "$CG/cgroup.procs" ] && while read -r p; do echo "$p" >/sys/fs/cgroup/cgroup.procs 2>/dev/null || true; done <"$CG/cgroup.procs"
    rmdir "$CG" 2>/dev/null || true
  fi
  for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null || true; done
  rm -rf "$W" /dev/shm/iolab-bench-capture-$$.img
}
trap cleanup EXIT INT TERM
export IOLAB_DB=$W/bench.db

truncate -s 1G "$W/slow.img"
SLOW=$(losetup --find --show --direct-io=on "$W/slow.img"); LOOPS+=("$SLOW")
truncate -s 1G /dev/shm/iolab-bench-capture-$$.img
FAST=$(losetup --find --show /dev/shm/iolab-bench-capture-$$.img); LOOPS+=("$FAST")

# The throttle: a cgroup the measured runs go into.
majmin=$(lsblk -dno MAJ:MIN "$SLOW" | tr -d ' ')
if [ -d /sys/fs/cgroup/blkio ]; then
  CG=/sys/fs/cgroup/blkio/iolab-bench-$$; mkdir "$CG"
  echo "$majmin 5000" >"$CG/blkio.throttle.read_iops_device"
else
  echo "+io" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
  CG=/sys/fs/cgroup/iolab-bench-$$; mkdir "$CG"
  echo "$majmin riops=5000" >"$CG/io.max"
fi

run() { # device, in-cgroup? -> IOPS
  local dev=$1 cg=$2
  sh -c "[ -n '$cg' ] && echo \$\$ >'$cg/cgroup.procs'; exec '$IOLAB' run '$dev' --pattern randread --bs 4k --qd 16 --time '$TIME' --repeat 1 --no-save --json" \
    | python3 -c 'import json,sys; t=json.load(sys.stdin)["run"]["workloads"][0]["trials"][0]; print(t["ops"][0]["count"]*1e9/t["ops"][0]["elapsed_ns"])'
}

captured() { # device, cgroup -> "IOPS capture-cpu-ns-per-io"
  local dev=$1 cg=$2
  "$IOLAB" capture "$dev" -o "$W/c.trace" --json >"$W/c.json" &
  local cap=$!
  sleep 1
  local iops; iops=$(run "$dev" "$cg")
  local ticks; ticks=$(awk '{print $14+$15}' /proc/$cap/stat)
  kill -INT "$cap"; wait "$cap" || true
  local ios; ios=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["header"]["ios"])' "$W/c.json" 2>/dev/null || echo 1)
  rm -f "$W/c.trace"
  echo "$iops $(python3 -c "print($ticks * 1e9 / $(getconf CLK_TCK) / max(1, $ios))")"
}

for kind in device-bound cpu-bound; do
  if [ $kind = device-bound ]; then dev=$SLOW; cg=$CG; else dev=$FAST; cg=; fi
  : >"$W/$kind"
  for r in $(seq 1 "$ROUNDS"); do
    base=$(run "$dev" "$cg")
    read -r cap cpu < <(captured "$dev" "$cg")
    echo "$base $cap $cpu" >>"$W/$kind"
  done
  python3 - "$W/$kind" "$kind" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
ratio = statistics.median(c / b for b, c, _ in rows)
print(f"{sys.argv[2]:13} {statistics.median(r[0] for r in rows):10.0f} IOPS alone, "
      f"{statistics.median(r[1] for r in rows):10.0f} captured: {100 * (1 - ratio):+.2f}% lost "
      f"(median of {len(rows)} pairs); capture CPU {statistics.median(r[2] for r in rows):.0f} ns per IO")
PY
done
