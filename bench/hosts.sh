#!/usr/bin/env bash
# Many hosts on one machine: three network namespaces, each with its own sshd on a veth pair,
# each host a 4k random read at QD 32 on its own file (O_DIRECT, /var/tmp). Per round:
#   - each host alone (iolab run --hosts hN, same transport), then all three at once;
#   - the aggregate IOPS against the sum of the three single-host runs (ratio: 1.0 would mean
#     the hosts do not share anything; here they share one disk and two cores);
#   - the start skew (median and max over hosts, from the agents' own start instants);
#   - the controller's CPU (iolab plus its ssh clients) per host, per second of run.
# Medians over the rounds are printed at the end.
#
#   bench/hosts.sh [ROUNDS] [TIME]      (default 3 rounds of 5s runs)
#   IOLAB=/path/to/iolab bench/hosts.sh
#
# Needs root, sshd (openssh-server), ssh, ip (iproute2). Everything made is removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
TIME=${2:-5s}
[ "$(id -u)" = 0 ] || { echo "bench/hosts.sh: needs root (network namespaces, sshd)" >&2; exit 2; }
for t in /usr/sbin/sshd ssh ip python3; do
  command -v "$t" >/dev/null || { echo "bench/hosts.sh: missing $t (apt-get install openssh-server openssh-client iproute2)" >&2; exit 2; }
done
if [ -z "${IOLAB:-}" ]; then cargo build --release -q; IOLAB=$PWD/target/release/iolab; fi
W=$(mktemp -d /var/tmp/iolab-bench-hosts.XXXXXX)
NS=()
cleanup() {
  for ns in "${NS[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$W"
}
trap cleanup EXIT INT TERM
mkdir -p /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$W/key"
ssh-keygen -q -t ed25519 -N '' -f "$W/hostkey"
cp "$W/key.pub" "$W/authorized_keys"
: > "$W/ssh_config"; : > "$W/known_hosts"
for i in 0 1 2; do
  ns=iolab-bench-$$-$i; link=ib$(( $$ % 10000 ))x$i; net=10.199.$(( $$ % 200 + i ))
  NS+=("$ns")
  ip netns add "$ns"
  ip link add "$link" type veth peer name eth0 netns "$ns"
  ip addr add "$net.1/30" dev "$link"; ip link set "$link" up
  ip -n "$ns" addr add "$net.2/30" dev eth0; ip -n "$ns" link set eth0 up; ip -n "$ns" link set lo up
  ip netns exec "$ns" /usr/sbin/sshd -f /dev/null -h "$W/hostkey" -p 22 -o ListenAddress="$net.2" \
    -o PidFile="$W/sshd$i.pid" -o AuthorizedKeysFile="$W/authorized_keys" -o StrictModes=no \
    -o PermitRootLogin=prohibit-password -o PasswordAuthentication=no -o UsePAM=no -E "$W/sshd$i.log"
  printf 'Host h%s\n  HostName %s.2\n' "$i" "$net" >> "$W/ssh_config"
  echo "$net.2 $(cat "$W/hostkey.pub")" >> "$W/known_hosts"
  mkdir "$W/t$i"
done
printf 'Host *\n  User root\n  IdentityFile %s/key\n  IdentitiesOnly yes\n  UserKnownHostsFile %s/known_hosts\n  StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n' "$W" "$W" >> "$W/ssh_config"
sleep 0.5
LAUNCH="ssh -F $W/ssh_config -o BatchMode=yes -o ControlMaster=auto -o ControlPath={control}/%C -o ControlPersist=60 {host} $IOLAB agent --stdio"
run() { # hosts -> JSON on stdout
  "$IOLAB" run --hosts "$1" --launch "$LAUNCH" --pattern randread --bs 4k --qd 32 --size 256M \
    --time "$TIME" --json --no-save 2>>"$W/stderr.log"
}
echo "iolab run --hosts: 3 namespace hosts over ssh, 4k randread QD32, $TIME each, $ROUNDS rounds"
printf '%-6s %9s %9s %9s %9s %11s %7s %10s %10s %14s %12s\n' round h0 h1 h2 sum aggregate ratio "skew med" "skew max" "ctl CPU/host" "true spread"
for r in $(seq 1 "$ROUNDS"); do
  singles=()
  for i in 0 1 2; do
    singles+=("$(run "h$i:$W/t$i" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["trials"][0]["aggregate"]["figures"][0]["ops_per_sec"])')")
  done
  run "h0:$W/t0,h1:$W/t1,h2:$W/t2" > "$W/all.json"
  python3 - "$r" "${singles[@]}" "$W/all.json" >> "$W/rows" <<'PY'
import json, sys
r, s = sys.argv[1], [float(x) for x in sys.argv[2:5]]
d = json.load(open(sys.argv[5]))
t = d["trials"][0]
agg = t["aggregate"]["figures"][0]["ops_per_sec"]
wall = (d["ended_unix_ms"] - d["started_unix_ms"]) / 1e3
cpu = d["controller_cpu_ns"] / 1e9 / 3 / wall * 100
# One machine, one clock: the agents' own start instants compare directly (true spread).
starts = [h["agent_start_unix_ns"] for h in t["hosts"]]
spread = (max(starts) - min(starts)) / 1e6
print(r, *s, sum(s), agg, agg / sum(s), t["skew_median_ns"] / 1e6, t["skew_max_ns"] / 1e6, cpu, spread)
PY
  tail -1 "$W/rows" | awk '{printf "%-6s %9.0f %9.0f %9.0f %9.0f %11.0f %7.3f %7.3f ms %7.3f ms %12.2f %% %9.3f ms\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11}'
done
python3 - "$W/rows" <<'PY'
import statistics as st, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
col = lambda i: st.median(r[i] for r in rows)
print(f"median: sum of singles {col(4):.0f} IOPS, aggregate {col(5):.0f} IOPS, ratio {col(6):.3f}; "
      f"start skew median {col(7):.3f} ms, max {col(8):.3f} ms (worst round {max(r[8] for r in rows):.3f} ms); "
      f"controller CPU {col(9):.2f}% of a core per host; true start spread (one clock) median {col(10):.3f} ms, "
      f"max {max(r[10] for r in rows):.3f} ms")
PY
