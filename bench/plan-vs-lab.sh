#!/usr/bin/env bash
# `iolab plan` predicted vs `iolab lab` measured, for btrfs layouts on loop disks.
# 1. attaches five loop disks backed by /dev/shm; with MBPS/IOPS given (default 200 MB/s and
#    2000 IOPS, read and write), each is throttled through the cgroup v1 blkio controller so that
#    the disk, not the shared host CPU and memory, is the limit, as with real disks;
# 2. measures one disk on its own (stored as run "plan-disk");
# 3. runs a lab of btrfs raid0/1/10/5/6 on those disks (as real devices, --destroy);
# 4. asks `iolab plan --disk-from plan-disk` for each layout and prints predicted, measured, ratio.
# MBPS=0 runs unthrottled (then loop disks share one host: the prediction overshoots many-fold).
# Needs root. Usage: bench/plan-vs-lab.sh [SECONDS_PER_TRIAL] [MBPS] [IOPS]
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-2}
MBPS=${2:-200}
IOPS=${3:-2000}
cargo build --release -q
IOLAB=$PWD/target/release/iolab
WORK=$(mktemp -d /dev/shm/iolab-plan-bench.XXXXXX)
DB=$WORK/bench.db
CG=/sys/fs/cgroup/blkio/iolab-plan-bench-$$
LOOPS=()
cleanup() {
  for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null || true; done
  [ -d "$CG" ] && rmdir "$CG" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
for i in 0 1 2 3 4; do
  truncate -s 1G "$WORK/disk$i.img"
  LOOPS+=("$(losetup --find --show --direct-io=on "$WORK/disk$i.img")")
done
# Runs a command inside the throttled cgroup (or plainly when unthrottled).
throttled() {
  if [ "$MBPS" = 0 ]; then "$@"; else sh -c 'echo $$ > "$0/cgroup.procs" && shift && exec "$@"' "$CG" x "$@"; fi
}
if [ "$MBPS" != 0 ]; then
  mkdir "$CG"
  for l in "${LOOPS[@]}"; do
    dev=$(lsblk -dno MAJ:MIN "$l" | tr -d ' ')
    echo "$dev $((MBPS * 1000000))" > "$CG/blkio.throttle.read_bps_device"
    echo "$dev $((MBPS * 1000000))" > "$CG/blkio.throttle.write_bps_device"
    echo "$dev $IOPS" > "$CG/blkio.throttle.read_iops_device"
    echo "$dev $IOPS" > "$CG/blkio.throttle.write_iops_device"
  done
  echo "each disk throttled to $MBPS MB/s and $IOPS IOPS (read and write)"
else
  echo "disks not throttled"
fi
D=${LOOPS[0]}
# psync for the lone disk: under blk-throttle, io_uring's O_DIRECT writes to a loop device are
# charged about twice (the cgroup's io_service_bytes shows it; fio at QD 4 too), which would halve
# the disk's write figure. The lab's btrfs layouts submit their own bios and are charged once.
throttled "$IOLAB" run "$D" --destroy "$D" --engine psync --profile quick --time "${SECS}s" --size 512MiB --repeat 3 \
  --label plan-disk --db "$DB" >/dev/null
DEVLIST=$(printf '"%s", ' "${LOOPS[@]}")
cat > "$WORK/lab.toml" <<TOML
name = "plan-vs-lab"
[disks]
devices = [${DEVLIST%, }]
[[layout]]
name = "btrfs-raid0"
btrfs = { data = "raid0", metadata = "raid1", members = 4 }
[[layout]]
name = "btrfs-raid1"
btrfs = { data = "raid1", metadata = "raid1", members = 2 }
[[layout]]
name = "btrfs-raid10"
btrfs = { data = "raid10", metadata = "raid10", members = 4 }
[[layout]]
name = "btrfs-raid5"
btrfs = { data = "raid5", metadata = "raid1", members = 4 }
[[layout]]
name = "btrfs-raid6"
btrfs = { data = "raid6", metadata = "raid1c3", members = 5 }
[workloads]
profiles = ["quick"]
repeat = 3
time = "${SECS}s"
size = "256MiB"
TOML
throttled "$IOLAB" lab "$WORK/lab.toml" --db "$DB" --format json --destroy "$(IFS=,; echo "${LOOPS[*]}")" \
  > "$WORK/lab.json"
python3 - "$IOLAB" "$DB" "$WORK/lab.json" <<'PY'
import json, statistics, subprocess, sys
iolab, db, labfile = sys.argv[1:4]
lab = json.load(open(labfile))
members = {"btrfs-raid0": 4, "btrfs-raid1": 2, "btrfs-raid10": 4, "btrfs-raid5": 4, "btrfs-raid6": 5}
figs = [("seq_read_mbps", "seq-read-1m", "read", "mbps"), ("seq_write_mbps", "seq-write-1m", "write", "mbps"),
        ("rand_read_iops", "rand-read-4k-qd32", "read", "iops"), ("rand_write_iops", "rand-write-4k-qd32", "write", "iops")]
def measured(run_id):
    run = json.loads(subprocess.check_output([iolab, "show", run_id, "--json", "--db", db]))
    out = {}
    for key, wl, op, fig in figs:
        w = next(w for w in run["workloads"] if w["workload"]["name"] == wl)
        vals = []
        for t in w["trials"]:
            o = next(o for o in t["ops"] if o["op"] == op)
            vals.append(o["bytes"] * 1e3 / o["elapsed_ns"] if fig == "mbps" else o["count"] * 1e9 / o["elapsed_ns"])
        out[key] = statistics.median(vals)
    return out
print("%-14s %-15s %12s %12s %7s" % ("layout", "figure", "predicted", "measured", "ratio"))
for r in lab["runs"]:
    if r["phase"] != "healthy": continue
    name = r["layout"]
    p = json.loads(subprocess.check_output([iolab, "plan", "--disks", str(members[name]), "--disk-size", "1GiB",
        "--layouts", name, "--disk-from", "plan-disk", "--format", "json", "--db", db]))["layouts"][0]
    m = measured(r["run_id"])
    for key, *_ in figs:
        print("%-14s %-15s %12.0f %12.0f %7.2f" % (name, key, p[key], m[key], m[key] / p[key]))
PY
