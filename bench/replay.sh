#!/usr/bin/env bash
# Replay fidelity: iolab's replay against fio's read_iolog replay of the same trace on the same
# target, alternately, ROUNDS rounds (issue 29; fio #1537 says fio's replays run long).
#
# The trace is captured here: `iolab capture` records TIME of a known workload (iolab's own
# 70/30 random 8k mix at 2000 IOPS, Poisson arrivals, on a loop device), then written as a fio
# iolog v3 (`iolab capture --show --to-iolog`). Each round replays it with
#   iolab run LOOP --replay T --destroy LOOP      (its own fidelity note: issue-time error
#                                                  p50/p99/max, duration against the recording)
#   fio --read_iolog=T.iolog --filename=LOOP     (its duration from its JSON; its issue times
#                                                  from a capture of its replay, diffed against
#                                                  the recorded schedule by `iolab capture`)
# and prints, per tool, the median over rounds of: duration error (% against the recording),
# issue-time error p50 / p99 (us).
#
#   bench/replay.sh [ROUNDS] [TIME]      (default 5 rounds of a 30s trace)
#   IOLAB=/path/to/iolab bench/replay.sh
#   TRACE=mail.trace bench/replay.sh     (replay an existing trace instead of capturing one;
#                                          its device size decides the loop device's)
#
# Needs root (loop devices, tracefs), fio, python3. Everything made is removed on exit. Run it
# on a quiet machine: both replays are open loops whose issue times the load disturbs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
TIME=${2:-30s}
[ "$(id -u)" = 0 ] || { echo "bench/replay.sh: needs root (loop devices, tracefs)" >&2; exit 2; }
for t in fio losetup python3; do
  command -v "$t" >/dev/null || { echo "bench/replay.sh: missing $t (apt-get install fio util-linux python3)" >&2; exit 2; }
done
if [ -z "${IOLAB:-}" ]; then cargo build --release -q; IOLAB=$PWD/target/release/iolab; fi
W=$(mktemp -d /var/tmp/iolab-bench-replay.XXXXXX)
LOOP=
cleanup() {
  [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT INT TERM
truncate -s 2G "$W/disk.img"
LOOP=$(losetup --find --show --direct-io=on "$W/disk.img")
export IOLAB_DB=$W/bench.db

if [ -n "${TRACE:-}" ]; then
  cp "$TRACE" "$W/t.trace"
else
  "$IOLAB" capture "$LOOP" --time "$TIME" -o "$W/t.trace" --json >"$W/capture.json" &
  cap=$!
  sleep 1
  "$IOLAB" run "$LOOP" --destroy "$LOOP" --pattern randrw --read-pct 70 --bs 8k --qd 16 \
    --rate 2000 --arrivals poisson --time "$(( ${TIME%s} - 2 ))s" --repeat 1 --no-save \
    --json >/dev/null
  wait "$cap"
fi
"$IOLAB" capture --show "$W/t.trace" --to-iolog "$W/t.iolog" --iolog-target "$LOOP" >"$W/model.txt"
head -3 "$W/model.txt"

# The recorded schedule's span (first issue to last completion), for fio's duration error.
span_ns=$("$IOLAB" capture --show "$W/t.trace" --json | python3 -c '
import json,sys; m=json.load(sys.stdin)["model"]; print(int(m["duration_s"]*1e9))')

for r in $(seq 1 "$ROUNDS"); do
  "$IOLAB" run "$LOOP" --destroy "$LOOP" --replay "$W/t.trace" --repeat 1 --no-save --json \
    >"$W/iolab-$r.json" 2>/dev/null
  # fio's replay, captured, so its issue times can be set against the schedule.
  "$IOLAB" capture "$LOOP" -o "$W/fio-$r.trace" --json >/dev/null &
  cap=$!
  sleep 1
  fio --name=replay --filename="$LOOP" --read_iolog="$W/t.iolog" --ioengine=libaio \
    --direct=1 --iodepth=64 --output-format=json --output="$W/fio-$r.json" >/dev/null
  kill -INT "$cap"; wait "$cap" || true
done

python3 - "$W" "$ROUNDS" "$span_ns" <<'PY'
import json, statistics, struct, sys, pathlib
w, rounds, span = pathlib.Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])

def trace(p):
    b = p.read_bytes()
    hlen = struct.unpack_from("<I", b, 12)[0]
    h = json.loads(b[16:16 + hlen])
    recs = b[16 + hlen:]
    return h, [struct.unpack_from("<QQQIBBH", recs, 32 * i) for i in range(h["ios"])]

_, rec = trace(w / "t.trace")
sched = [(r[0], r[1]) for r in rec if r[4] in (0, 1)]
rows = {"iolab": [], "fio": []}
for r in range(1, rounds + 1):
    j = json.loads((w / f"iolab-{r}.json").read_text())
    t = j["run"]["workloads"][0]["trials"][0]
    ol = t["open_loop"]; rp = ol["replay"]
    derr = 100 * (rp["replayed_ns"] - rp["recorded_ns"]) / rp["recorded_ns"]
    note = next(n for n in t["notes"] if n.startswith("replay"))
    rows["iolab"].append((derr, note))
    f = json.loads((w / f"fio-{r}.json").read_text())
    fdur = f["jobs"][0]["job_runtime"] * 1e6
    # fio's issue times: its captured IOs matched to the schedule in order (same offsets).
    _, got = trace(w / f"fio-{r}.trace")
    issued = [(g[0], g[1]) for g in got if g[4] in (0, 1)]
    n = min(len(issued), len(sched))
    base = issued[0][0] - sched[0][0] if n else 0
    errs = sorted(abs((issued[i][0] - base) - sched[i][0]) for i in range(n))
    p = lambda q: errs[min(len(errs) - 1, int(q * len(errs)))] / 1e3 if errs else float("nan")
    rows["fio"].append((100 * (fdur - span) / span, f"issue-time error p50 {p(0.5):.0f}us p99 {p(0.99):.0f}us ({n} IOs matched)"))
for tool, v in rows.items():
    d = statistics.median(x[0] for x in v)
    print(f"{tool:6} duration error median {d:+.2f}% over {len(v)} rounds; last round: {v[-1][1]}")
PY
