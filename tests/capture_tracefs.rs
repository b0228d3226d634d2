//! `iolab capture` with tracefs not mounted: it mounts it at /sys/kernel/tracing, records, and
//! unmounts what it mounted — after Ctrl-C, after an error, after the last of two captures
//! that overlap; a capture killed with SIGKILL leaves the mount, which `iolab capture
//! --cleanup` removes; a tracefs someone else mounted stays mounted.
//!
//! Each case runs in a private mount namespace (`unshare -m`): tracefs is unmounted there
//! first without touching the machine's own mount, which other programs and tests may be
//! using.

mod common;

use std::path::Path;
use std::process::Command;

use common::{LoopDev, disk_tmpdir, require_root, require_tool, require_tracefs};
use iolab::trace::{Op, read_trace};

/// Sourced by every case: tracefs (and debugfs, where it would be found too) unmounted in
/// this namespace; `mi` prints the mounts at /sys/kernel/tracing (`FSTYPE SOURCE`, one a
/// line); `started PID` waits (20 s at most) until capture PID has both its events on (the
/// completion event is enabled second).
const PRELUDE: &str = r#"
set -u
IOLAB=$1 DEV=$2 OUT=$3
while grep -q ' /sys/kernel/tracing ' /proc/self/mountinfo; do umount /sys/kernel/tracing || exit 3; done
while grep -q ' /sys/kernel/debug ' /proc/self/mountinfo; do umount -l /sys/kernel/debug || exit 3; done
mi() { awk '$5 == "/sys/kernel/tracing" { sub(/.* - /, ""); print $1, $2 }' /proc/self/mountinfo; }
started() {
  i=0
  while [ "$(cat /sys/kernel/tracing/instances/iolab-$1/events/block/block_rq_complete/enable 2>/dev/null)" != 1 ]; do
    kill -0 "$1" 2>/dev/null || { echo "capture $1 ended before recording" >&2; exit 4; }
    i=$((i + 1)); [ $i -le 400 ] || { echo "capture $1 never started" >&2; exit 4; }
    sleep 0.05
  done
}
reads() { dd if="$DEV" of=/dev/null bs=4k count="$1" skip="$2" iflag=direct status=none; }
mi > "$OUT/before"
"#;

/// Runs `case` (after [`PRELUDE`]) in a private mount namespace with the iolab binary, the
/// loop device and the output directory as $IOLAB, $DEV and $OUT; returns its stderr.
fn in_namespace(case: &str, dev: &LoopDev, out: &Path) -> String {
    let script = format!("{PRELUDE}\n{case}");
    let o = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script, "sh"])
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .arg(dev.path())
        .arg(out)
        .env("IOLAB_DB", out.join("iolab.db"))
        .output()
        .expect("unshare runs");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "the case failed ({}): {err}", o.status);
    err
}

fn read(out: &Path, name: &str) -> String {
    std::fs::read_to_string(out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The mounts at /sys/kernel/tracing recorded in `name`, as `FSTYPE SOURCE` lines.
fn mounts(out: &Path, name: &str) -> Vec<String> {
    read(out, name).lines().map(str::to_string).collect()
}

const IOLAB_MOUNT: &str = "tracefs iolab-tracefs";

/// The reads of `dd` in a trace, as (offset, size).
fn dd_reads(trace: &Path) -> Vec<(u64, u32)> {
    let t = read_trace(trace).expect("the trace reads back");
    t.ios
        .iter()
        .filter(|io| t.process_name(io) == "dd" && io.op == Op::Read)
        .map(|io| (io.offset, io.len))
        .collect()
}

fn expected_reads(count: u64, skip: u64) -> Vec<(u64, u32)> {
    (skip..skip + count).map(|i| (i * 4096, 4096)).collect()
}

/// Not mounted: the capture mounts tracefs (with iolab's source name), records every IO,
/// and after Ctrl-C unmounts it; its JSON says so.
#[test]
fn a_capture_mounts_tracefs_and_unmounts_it_after() {
    require_root!();
    require_tool!("unshare", apt = "util-linux");
    require_tracefs!();
    let dir = disk_tmpdir("iolab-tracefs");
    let ld = LoopDev::new("tracefs-mount", 16 << 20);
    let out = dir.path();
    in_namespace(
        r#"
"$IOLAB" capture "$DEV" -o "$OUT/a.trace" --json > "$OUT/a.json" 2> "$OUT/a.err" &
CAP=$!
started $CAP
mi > "$OUT/during"
reads 10 0
kill -INT $CAP
wait $CAP
echo $? > "$OUT/rc"
mi > "$OUT/after"
"#,
        &ld,
        out,
    );
    assert!(mounts(out, "before").is_empty(), "unmounted first");
    assert_eq!(
        mounts(out, "during"),
        [IOLAB_MOUNT],
        "mounted by the capture"
    );
    assert_eq!(read(out, "rc").trim(), "0", "{}", read(out, "a.err"));
    assert!(
        mounts(out, "after").is_empty(),
        "unmounted after: {:?}",
        mounts(out, "after")
    );
    let j: serde_json::Value = serde_json::from_str(&read(out, "a.json")).expect("JSON");
    assert_eq!(j["tracefs"]["mounted"], true, "{j}");
    assert_eq!(j["tracefs"]["unmounted"], true, "{j}");
    assert_eq!(dd_reads(&out.join("a.trace")), expected_reads(10, 0));
}

/// A capture that fails after mounting (its output cannot be created) unmounts too.
#[test]
fn a_capture_that_fails_unmounts_what_it_mounted() {
    require_root!();
    require_tool!("unshare", apt = "util-linux");
    require_tracefs!();
    let dir = disk_tmpdir("iolab-tracefs");
    let ld = LoopDev::new("tracefs-err", 16 << 20);
    let out = dir.path();
    let err = in_namespace(
        r#"
"$IOLAB" capture "$DEV" -o /proc/iolab-capture.trace --time 1s > "$OUT/out" 2> "$OUT/err"
echo $? > "$OUT/rc"
mi > "$OUT/after"
"#,
        &ld,
        out,
    );
    assert_ne!(read(out, "rc").trim(), "0", "{err}");
    assert!(read(out, "err").contains("/proc"), "{}", read(out, "err"));
    assert!(
        mounts(out, "after").is_empty(),
        "unmounted after the error: {:?}",
        mounts(out, "after")
    );
}

/// Two captures that overlap: the first to end leaves the mount to the other, which records
/// on and unmounts it when it ends.
#[test]
fn the_last_of_overlapping_captures_unmounts() {
    require_root!();
    require_tool!("unshare", apt = "util-linux");
    require_tracefs!();
    let dir = disk_tmpdir("iolab-tracefs");
    let ld = LoopDev::new("tracefs-two", 16 << 20);
    let out = dir.path();
    in_namespace(
        r#"
"$IOLAB" capture "$DEV" -o "$OUT/one.trace" --json > "$OUT/one.json" 2> "$OUT/one.err" &
ONE=$!
started $ONE
"$IOLAB" capture "$DEV" -o "$OUT/two.trace" --json > "$OUT/two.json" 2> "$OUT/two.err" &
TWO=$!
started $TWO
reads 4 0
kill -INT $ONE
wait $ONE
echo $? > "$OUT/one.rc"
mi > "$OUT/between"
reads 6 100
kill -INT $TWO
wait $TWO
echo $? > "$OUT/two.rc"
mi > "$OUT/after"
"#,
        &ld,
        out,
    );
    assert_eq!(read(out, "one.rc").trim(), "0", "{}", read(out, "one.err"));
    assert_eq!(read(out, "two.rc").trim(), "0", "{}", read(out, "two.err"));
    assert_eq!(
        mounts(out, "between"),
        [IOLAB_MOUNT],
        "kept for the capture still running"
    );
    let one: serde_json::Value = serde_json::from_str(&read(out, "one.json")).expect("JSON");
    assert_eq!(
        one["tracefs"]["mounted"], true,
        "the first mounted it: {one}"
    );
    assert_eq!(one["tracefs"]["unmounted"], false, "{one}");
    assert!(
        one["tracefs"]["kept_for"]
            .as_str()
            .is_some_and(|w| w.contains("is using it")),
        "{one}"
    );
    assert_eq!(dd_reads(&out.join("one.trace")), expected_reads(4, 0));
    let mut both = expected_reads(4, 0);
    both.extend(expected_reads(6, 100));
    assert_eq!(
        dd_reads(&out.join("two.trace")),
        both,
        "the second recorded on"
    );
    assert!(
        mounts(out, "after").is_empty(),
        "the last one unmounted: {:?}",
        mounts(out, "after")
    );
}

/// SIGKILL leaves the instance and the mount; `iolab capture --cleanup` removes both.
#[test]
fn cleanup_unmounts_what_a_killed_capture_mounted() {
    require_root!();
    require_tool!("unshare", apt = "util-linux");
    require_tracefs!();
    let dir = disk_tmpdir("iolab-tracefs");
    let ld = LoopDev::new("tracefs-kill", 16 << 20);
    let out = dir.path();
    in_namespace(
        r#"
"$IOLAB" capture "$DEV" -o "$OUT/k.trace" > /dev/null 2>&1 &
CAP=$!
started $CAP
kill -KILL $CAP
wait $CAP
mi > "$OUT/killed"
[ -d /sys/kernel/tracing/instances/iolab-$CAP ] && echo left > "$OUT/instance"
echo $CAP > "$OUT/pid"
"$IOLAB" capture --cleanup --json > "$OUT/cleanup.json" 2> "$OUT/cleanup.err"
echo $? > "$OUT/rc"
mi > "$OUT/after"
"#,
        &ld,
        out,
    );
    assert_eq!(
        mounts(out, "killed"),
        [IOLAB_MOUNT],
        "SIGKILL leaves the mount"
    );
    assert_eq!(read(out, "instance").trim(), "left", "and the instance");
    assert_eq!(read(out, "rc").trim(), "0", "{}", read(out, "cleanup.err"));
    let j: serde_json::Value = serde_json::from_str(&read(out, "cleanup.json")).expect("JSON");
    let pid = read(out, "pid").trim().to_string();
    assert!(
        j["removed"]
            .as_array()
            .expect("removed")
            .iter()
            .any(|p| p == &format!("/sys/kernel/tracing/instances/iolab-{pid}")),
        "{j}"
    );
    assert_eq!(j["unmounted"], "/sys/kernel/tracing", "{j}");
    assert!(
        mounts(out, "after").is_empty(),
        "unmounted by the cleanup: {:?}",
        mounts(out, "after")
    );
}

/// A tracefs mounted by someone else is used and left mounted.
#[test]
fn a_tracefs_mounted_by_someone_else_stays() {
    require_root!();
    require_tool!("unshare", apt = "util-linux");
    require_tracefs!();
    let dir = disk_tmpdir("iolab-tracefs");
    let ld = LoopDev::new("tracefs-theirs", 16 << 20);
    let out = dir.path();
    in_namespace(
        r#"
mount -t tracefs nodev /sys/kernel/tracing || exit 3
"$IOLAB" capture "$DEV" -o "$OUT/t.trace" --json > "$OUT/t.json" 2> "$OUT/t.err" &
CAP=$!
started $CAP
reads 3 0
kill -INT $CAP
wait $CAP
echo $? > "$OUT/rc"
mi > "$OUT/after"
"#,
        &ld,
        out,
    );
    assert_eq!(read(out, "rc").trim(), "0", "{}", read(out, "t.err"));
    assert_eq!(
        mounts(out, "after"),
        ["tracefs nodev"],
        "theirs stays mounted"
    );
    let j: serde_json::Value = serde_json::from_str(&read(out, "t.json")).expect("JSON");
    assert_eq!(j["tracefs"]["mounted"], false, "{j}");
    assert_eq!(j["tracefs"]["unmounted"], false, "{j}");
    assert_eq!(dd_reads(&out.join("t.trace")), expected_reads(3, 0));
}
