#!/usr/bin/env bash
# iolab's small-file workload vs bonnie++ -n, alternately, same files/sizes/dirs/fsync, same fs.
# bonnie++ -b fsyncs each file, and fsyncs one directory (always its first, 00000: a bonnie++
# quirk seen with strace) after each create and delete. iolab --fsync fsyncs each file;
# --fsync-dir also fsyncs the file's own directory after each create and delete (stricter than
# bonnie++, since that directory is the one that changed). Both are shown.
# Prints ops/s per phase (medians) and iolab/bonnie++ ratios, then iolab's --threads 2 scaling.
# Bar (PRODUCT.md): iolab single-threaded >= bonnie++ on create/stat/delete.
# Usage: bench/vs-bonnie.sh [DIR] [PAIRS] [N]   (defaults: /var/tmp, 3 pairs, -n 4 = 4096 files)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/var/tmp}
PAIRS=${2:-3}
N=${3:-4}
command -v bonnie++ >/dev/null || { [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y bonnie++ >/dev/null; }
cargo build --release -q
IOLAB=$PWD/target/release/iolab
WORK=$(mktemp -d "$DIR/iolab-vs-bonnie.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
FILES=$((N * 1024))
bonnie() {
  bonnie++ -d "$WORK" -u root -s 0 -n "$N:25000:500:16" -b -x 1 -q 2>/dev/null | tail -1
}
iolab() { # threads [extra flags]
  "$IOLAB" run "$WORK" --pattern smallfile --files "$FILES" --dirs 16 --min-file-size 500 --max-file-size 25000 \
    --fsync --threads "$@" --repeat 1 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({o["op"]: o["ops_per_sec_median"] for o in d["summary"][0]["ops"]}))'
}
{
  for i in $(seq "$PAIRS"); do
    echo "bonnie $(bonnie)"
    echo "iolab1 $(iolab 1)"
    echo "iolabd $(iolab 1 --fsync-dir)"
    echo "iolab2 $(iolab 2)"
  done
} | python3 -c '
import json, statistics, sys
# bonnie++ 2.x CSV: fields 26..36 are seq create, seq read, seq delete, random create, random read (stat), random delete (each + cpu%).
pairs = [("create", 26), ("read_file", 28), ("delete", 30), ("rand_create", 32), ("rand_stat", 34), ("rand_delete", 36)]
rows = {"bonnie": [], "iolab1": [], "iolabd": [], "iolab2": []}
for line in sys.stdin:
    tag, rest = line.split(" ", 1)
    if tag == "bonnie":
        f = rest.strip().split(",")
        rows[tag].append({k: (None if "+" in f[i] or not f[i] else float(f[i])) for k, i in pairs})
    else:
        rows[tag].append(json.loads(rest))
def med(tag, k):
    v = [r[k] for r in rows[tag] if r.get(k) is not None]
    return statistics.median(v) if v else None
print("%-12s %10s %10s %7s %12s %7s %10s %6s" % ("phase", "bonnie++", "iolab t1", "ratio", "+fsync-dir", "ratio", "iolab t2", "t2/t1"))
for k, _ in pairs:
    b, a, ad, a2 = med("bonnie", k), med("iolab1", k), med("iolabd", k), med("iolab2", k)
    bs = f"{b:10.0f}" if b else "     (+++)"
    r = f"{a/b:7.2f}" if b else "      -"
    rd = f"{ad/b:7.2f}" if b else "      -"
    print(f"{k:12} {bs} {a:10.0f} {r} {ad:12.0f} {rd} {a2:10.0f} {a2/a:6.2f}")
print("(%d pairs; bonnie++ shows +++ when a phase takes under half a second)" % len(rows["bonnie"]))
'
