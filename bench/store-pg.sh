#!/usr/bin/env bash
# The shared store's cost: time to save a run and to read a comparison back, PostgreSQL on
# loopback vs the SQLite file, as the CLI does it (process start and connection included).
# Needs root and Debian's postgresql (the cluster is started if down and stopped again, a
# scratch role and database are made and dropped). Usage: bench/store-pg.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-7}
cargo build --release -q
IOLAB=$PWD/target/release/iolab
read -r VER NAME PORT STATUS _ < <(pg_lsclusters -h | head -1)
started=0
if [[ $STATUS != online* ]]; then pg_ctlcluster "$VER" "$NAME" start; started=1; fi
PW=bench$$
DB=iolab_bench_$$
psql_admin() { runuser -u postgres -- psql -X -q -At -p "$PORT" -d postgres -c "$1" >/dev/null; }
psql_admin "CREATE ROLE iolab_bench LOGIN PASSWORD '$PW'"
psql_admin "CREATE DATABASE $DB OWNER iolab_bench"
WORK=$(mktemp -d /var/tmp/iolab-bench-store.XXXXXX)
cleanup() {
  psql_admin "DROP DATABASE IF EXISTS $DB WITH (FORCE)" || true
  psql_admin "DROP ROLE IF EXISTS iolab_bench" || true
  [ "$started" = 1 ] && pg_ctlcluster "$VER" "$NAME" stop || true
  rm -rf "$WORK"
}
trap cleanup EXIT
URL="postgres://iolab_bench:$PW@127.0.0.1:$PORT/$DB"
SRC=$WORK/src.db

# Two real runs (the quick suite's workloads, cut short) to save and compare.
mkdir -p "$WORK/t"
for l in a b; do
  "$IOLAB" --db "$SRC" run "$WORK/t" --quick --time 300ms --size 16MiB --label "$l" >/dev/null
done
trials=$("$IOLAB" --db "$SRC" list --json | python3 -c 'import json,sys; print(sum(r["trials"] for r in json.load(sys.stdin)))')

t() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }
{
  # Warm: the schema is made on first use.
  "$IOLAB" --db "$SRC" store push --to "$URL" >/dev/null
  "$IOLAB" --db "$SRC" store push --to "$WORK/dst.db" >/dev/null
  for i in $(seq "$RUNS"); do
    for backend in sqlite postgres; do
      dst=$URL; [ $backend = sqlite ] && dst=$WORK/dst.db
      "$IOLAB" --db "$dst" rm a b >/dev/null
      echo "push-2-runs $backend $(t "$IOLAB" --db "$SRC" store push --to "$dst")"
      echo "compare $backend $(t "$IOLAB" --db "$dst" compare a b)"
      echo "list $backend $(t "$IOLAB" --db "$dst" list)"
    done
  done
} | python3 -c '
import statistics, sys
t = {}
for line in sys.stdin:
    op, backend, v = line.split()
    t.setdefault(op, {}).setdefault(backend, []).append(float(v) * 1000)
for op, b in t.items():
    s, p = statistics.median(b["sqlite"]), statistics.median(b["postgres"])
    print("%-12s sqlite %7.1f ms  postgres %7.1f ms  ratio %.2fx  (median of %d)" % (op, s, p, p / s, len(b["sqlite"])))
'
echo "(the two runs hold $trials trials; pushing includes reading them from the local file)"
# Same figures on both: the compare table.
diff <("$IOLAB" --db "$SRC" compare a b) <("$IOLAB" --db "$URL" compare a b) && echo "compare tables identical"
