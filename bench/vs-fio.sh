#!/usr/bin/env bash
# iolab vs fio, alternately, same settings, same targets; prints medians and iolab/fio ratios.
#   (1) 4k randread QD128 io_uring O_DIRECT 1 thread on a loop device backed by /dev/shm
#   (5) the latency path on the same loop device: 4k randread and randwrite at QD 1, 4, 16, 32,
#       64 (QDS="..." to choose; and randwrite at 128), io_uring, 1 thread: iolab ahead of fio
#       at every depth
#   (2) the same on a file on the root disk
#   (3) 1 MiB sequential read and write, O_DIRECT, QD 32, on the root disk
#   (4) null engines, 4k QD128, latency recording on: IOs per CPU-second (pure tool overhead)
#   (3h) when root: (3) again with fio's buffers in hugetlbfs pages (--iomem=mmaphuge), since
#        iolab's buffers are transparent huge pages and a 1 MiB IO in 4 KiB pages gets split
#        by the disk's segment limit (virtio: ~500 KiB requests): the like-for-like comparison.
# Bars (PRODUCT.md): (1) IOPS ratio >= 0.95 and CPU/IO ratio <= 1.10; (3) MB/s within 5%;
# (4) ratio >= 1.0; (5) ratio >= 1.0 at every depth. Usage: bench/vs-fio.sh [PAIRS] [SECONDS]   (defaults 5 and 5)
# CASES="1 4" runs only those cases (by their number above; 3h goes with 3).
# PEER_IOLAB=/path/to/other/iolab: the peer is that iolab build instead of fio (A/B of two
# builds on the same targets, alternately; the ratio is this build / the other).
# BUSY=1: one core kept busy by a spinning shell loop for the whole bench (the scheduler places
# it), so both tools meet a machine where a CPU is taken: the wait strategy must hold up there too.
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${1:-5}
SECS=${2:-5}
command -v fio >/dev/null || { [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y fio >/dev/null; }
cargo build --release -q
IOLAB=$PWD/target/release/iolab
M=bench/lib/measure.py
WORK=$(mktemp -d /var/tmp/iolab-bench.XXXXXX)
LOOP=""
HUGE=""
OLD_NR=""
BUSY_PID=""
cleanup() {
  [ -n "$BUSY_PID" ] && kill "$BUSY_PID" 2>/dev/null
  [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
  if [ -n "$HUGE" ]; then rm -f "$HUGE"/*; umount "$HUGE"; echo "$OLD_NR" > /proc/sys/vm/nr_hugepages; fi
  rm -rf "$WORK" /dev/shm/iolab-bench-loop.img
}
trap cleanup EXIT INT TERM
if [ "${BUSY:-0}" = 1 ]; then
  bash -c 'while :; do :; done' &
  BUSY_PID=$!
  echo "one core busy (pid $BUSY_PID)" >&2
fi

truncate -s 2G /dev/shm/iolab-bench-loop.img
dd if=/dev/urandom of=/dev/shm/iolab-bench-loop.img bs=1M count=2048 conv=notrunc status=none
LOOP=$(losetup --find --show /dev/shm/iolab-bench-loop.img)
FILE=$WORK/target.dat
dd if=/dev/urandom of="$FILE" bs=1M count=1024 status=none; sync

fio_cmd() { # target rw bs qd [engine [extra]]
  echo fio --name=b --filename="$1" --rw="$2" --bs="$3" --iodepth="$4" --ioengine="${5:-io_uring}" \
    --direct=1 --numjobs=1 --time_based --runtime="$SECS" --size=1g --output-format=json --group_reporting ${6:-}
}
HUGECASES=()
if [ "$(id -u)" = 0 ] && grep -qw hugetlbfs /proc/filesystems; then
  OLD_NR=$(cat /proc/sys/vm/nr_hugepages)
  mkdir -p "$WORK/huge" && mount -t hugetlbfs none "$WORK/huge" && HUGE=$WORK/huge
  [ "$OLD_NR" -lt 64 ] && echo 64 > /proc/sys/vm/nr_hugepages
  HUGECASES=("seq read 1m qd32 (root disk, fio huge pages)|$FILE read 1m 32 io_uring --iomem=mmaphuge:$HUGE/buf|$FILE read 1m 32"
             "seq write 1m qd32 (root disk, fio huge pages)|$FILE write 1m 32 io_uring --iomem=mmaphuge:$HUGE/buf|$FILE write 1m 32")
fi
iolab_cmd() { # target pattern bs qd [engine]
  local destroy=""
  # The bench's own loop device: writing it is the point.
  [[ "$1" == /dev/loop* && "$2" == *write* ]] && destroy="--destroy $1"
  echo "$IOLAB" run "$1" --pattern "$2" --bs "$3" --qd "$4" --engine "${5:-io_uring}" --threads 1 \
    --time "${SECS}s" --size 1GiB --repeat 1 --json --no-save $destroy
}
peer() { # fio args, iolab args: run the peer (fio, or PEER_IOLAB)
  # shellcheck disable=SC2046
  if [ -n "${PEER_IOLAB:-}" ]; then
    python3 $M iolab-peer x -- $(IOLAB=$PEER_IOLAB iolab_cmd $2) || true
  else
    python3 $M fio x -- $(fio_cmd $1) || true
  fi
}
want_case() { [ -z "${CASES:-}" ] || [[ " $CASES " == *" $1 "* ]]; }
ALL=()
want_case 1 && ALL+=("loop randread 4k qd128|$LOOP randread 4k 128|$LOOP randread 4k 128")
want_case 2 && ALL+=("file randread 4k qd128 (root disk)|$FILE randread 4k 128|$FILE randread 4k 128")
want_case 3 && ALL+=("seq read 1m qd32 (root disk)|$FILE read 1m 32|$FILE read 1m 32"
                     "seq write 1m qd32 (root disk)|$FILE write 1m 32|$FILE write 1m 32"
                     "${HUGECASES[@]}")
if want_case 5; then
  for rw in randread randwrite; do
    for qd in ${QDS:-1 4 16 32 64}; do ALL+=("loop $rw 4k qd$qd|$LOOP $rw 4k $qd|$LOOP $rw 4k $qd"); done
  done
  ALL+=("loop randwrite 4k qd128|$LOOP randwrite 4k 128|$LOOP randwrite 4k 128")
fi
want_case 4 && ALL+=("null 4k qd128|$FILE randread 4k 128 null|$FILE randread 4k 128 null")
{
  for c in "${ALL[@]}"; do
    IFS='|' read -r name fargs iargs <<<"$c"
    echo "case $name"
    for i in $(seq "$PAIRS"); do
      # shellcheck disable=SC2046
      if [ $((i % 2)) = 1 ]; then
        peer "$fargs" "$iargs"
        python3 $M iolab x -- $(iolab_cmd $iargs) || true
      else
        python3 $M iolab x -- $(iolab_cmd $iargs) || true
        peer "$fargs" "$iargs"
      fi
    done
  done
} | tee "$WORK/raw.jsonl" | python3 bench/lib/ratios.py
