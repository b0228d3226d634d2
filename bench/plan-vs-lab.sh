#!/usr/bin/env bash
# `iolab plan` predicted vs `iolab lab` measured, for btrfs layouts on loop disks.
# 1. measures one loop disk on its own (stored as run "plan-disk"),
# 2. runs a lab of btrfs raid0/1/10/5/6 on disks of the same kind,
# 3. asks `iolab plan --disk-from plan-disk` for each layout and prints predicted, measured, ratio.
# Needs root (loop devices, btrfs). Usage: bench/plan-vs-lab.sh [SECONDS_PER_TRIAL]
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-2}
cargo build --release -q
IOLAB=$PWD/target/release/iolab
WORK=$(mktemp -d /dev/shm/iolab-plan-bench.XXXXXX)
DB=$WORK/bench.db
LOOP=""
cleanup() { [ -n "$LOOP" ] && losetup -d "$LOOP"; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
truncate -s 1G "$WORK/disk.img"
LOOP=$(losetup --find --show "$WORK/disk.img")
"$IOLAB" run "$LOOP" --destroy "$LOOP" --profile quick --time "${SECS}s" --size 512MiB --repeat 3 \
  --label plan-disk --db "$DB" >/dev/null
losetup -d "$LOOP"; LOOP=""; rm -f "$WORK/disk.img"
cat > "$WORK/lab.toml" <<TOML
name = "plan-vs-lab"
[disks]
loop = { count = 5, size = "1GiB", dir = "$WORK/disks" }
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
"$IOLAB" lab "$WORK/lab.toml" --db "$DB" --format json > "$WORK/lab.json"
python3 - "$IOLAB" "$DB" "$WORK/lab.json" <<'PY'
import json, statistics, subprocess, sys
iolab, db, labfile = sys.argv[1:4]
lab = json.load(open(labfile))
members = {"btrfs-raid0": 4, "btrfs-raid1": 2, "btrfs-raid10": 4, "btrfs-raid5": 4, "btrfs-raid6": 5}
figs = [("seq_read_mbps", "seq-read-1m", "read", "mbps"), ("seq_write_mbps", "seq-write-1m", "write", "mbps"),
        ("rand_read_iops", "rand-read-4k-qd32", "read", "iops"), ("rand_write_iops", "rand-write-4k-qd32", "write", "iops")]
def measured(run_id):
    d = json.loads(subprocess.check_output([iolab, "show", run_id, "--json", "--db", db]))
    run = d.get("run", d)
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
