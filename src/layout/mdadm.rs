//! md arrays through mdadm: create (level, chunk, bitmap, bitmap chunk, spares), fail/remove/add
//! a member, stop, and waiting for resync or recovery by reading /proc/mdstat.
//!
//! Arrays are created as `/dev/mdN` with N from 100 up and `--name` carrying the lab id, so a
//! cleanup can tell our arrays from anyone else's before stopping one.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::LayoutError;
use super::cmd::Runner;
use crate::stack::MdOptions;

/// The md RAID layer.
pub struct Md;

fn kib(bytes: u64) -> String {
    format!("{}K", bytes / 1024)
}

/// `mdadm --create` for an array of `members` raid devices plus `spares`.
pub fn create_argv(
    dev: &Path,
    name: &str,
    o: &MdOptions,
    members: &[PathBuf],
    spares: &[PathBuf],
) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "mdadm".into(),
        "--create".into(),
        dev.to_string_lossy().into_owned(),
        "--run".into(),
        "--metadata=1.2".into(),
        format!("--name={name}"),
        format!("--level={}", o.level.number()),
        format!("--raid-devices={}", members.len()),
    ];
    // A write journal is the last device after the spares (`Stack::journal_disks`);
    // `--write-journal` implies the journal consistency policy.
    let (spares, journal) = if o.journal() {
        spares.split_at(spares.len().saturating_sub(1))
    } else {
        (spares, &[][..])
    };
    if !spares.is_empty() {
        a.push(format!("--spare-devices={}", spares.len()));
    }
    if let Some(j) = journal.first() {
        a.push(format!("--write-journal={}", j.to_string_lossy()));
    }
    if let Some(c) = o.chunk {
        a.push(format!("--chunk={}", kib(c)));
    }
    if let Some(b) = &o.bitmap {
        a.push(format!("--bitmap={b}"));
    }
    if let Some(bc) = o.bitmap_chunk {
        a.push(format!("--bitmap-chunk={}", kib(bc)));
    }
    if let Some(p) = o.consistency_policy.as_ref().filter(|_| !o.journal()) {
        a.push(format!("--consistency-policy={p}"));
    }
    if o.assume_clean {
        a.push("--assume-clean".into());
    }
    a.extend(
        members
            .iter()
            .chain(spares)
            .map(|d| d.to_string_lossy().into_owned()),
    );
    a
}

/// `mdadm MD --fail DEV --remove DEV`: the member is marked faulty and taken out.
pub fn fail_remove_argv(md: &Path, member: &Path) -> Vec<String> {
    let m = member.to_string_lossy().into_owned();
    vec![
        "mdadm".into(),
        md.to_string_lossy().into_owned(),
        "--fail".into(),
        m.clone(),
        "--remove".into(),
        m,
    ]
}

/// `mdadm MD --add DEV`: a new member; md starts recovery onto it.
pub fn add_argv(md: &Path, dev: &Path) -> Vec<String> {
    vec![
        "mdadm".into(),
        md.to_string_lossy().into_owned(),
        "--add".into(),
        dev.to_string_lossy().into_owned(),
    ]
}

/// `mdadm --stop MD`.
pub fn stop_argv(md: &Path) -> Vec<String> {
    vec![
        "mdadm".into(),
        "--stop".into(),
        md.to_string_lossy().into_owned(),
    ]
}

/// `mdadm --zero-superblock DEV`: the member no longer looks like part of an array.
pub fn zero_argv(dev: &Path) -> Vec<String> {
    vec![
        "mdadm".into(),
        "--zero-superblock".into(),
        dev.to_string_lossy().into_owned(),
    ]
}

/// `blkdiscard --zeroout DEV`: the device reads as zeros afterwards, so an array created with
/// `--assume-clean` on it has consistent parity and mirrors (unmapped where the device can,
/// written otherwise).
pub fn zeroout_argv(dev: &Path) -> Vec<String> {
    vec![
        "blkdiscard".into(),
        "--zeroout".into(),
        dev.to_string_lossy().into_owned(),
    ]
}

/// The first `/dev/mdN` (N >= 100) that does not exist.
pub fn free_device() -> PathBuf {
    (100..10_000)
        .map(|n| format!("md{n}"))
        .find(|n| !Path::new("/sys/block").join(n).exists() && !Path::new("/dev").join(n).exists())
        .map_or_else(
            || PathBuf::from("/dev/md9999"),
            |n| Path::new("/dev").join(n),
        )
}

/// One array's state in /proc/mdstat.
#[derive(Debug, Clone, PartialEq)]
pub struct MdStat {
    /// `md100`.
    pub name: String,
    /// `active` (or `inactive`).
    pub active: bool,
    /// Running sync action (`resync`, `recovery`, `reshape`, `check`), when any.
    pub action: Option<String>,
    /// Its progress in percent (None while DELAYED/PENDING).
    pub percent: Option<f64>,
    /// `[UUU_]`: which members are up.
    pub health: Option<String>,
    /// The sync waits for the array to be written (`resync=PENDING`).
    pub pending: bool,
}

/// Parses /proc/mdstat.
pub fn parse_mdstat(text: &str) -> Vec<MdStat> {
    let mut out: Vec<MdStat> = Vec::new();
    for line in text.lines() {
        if let Some((name, rest)) = line.split_once(" : ") {
            if name.starts_with("md") && !name.contains(' ') {
                out.push(MdStat {
                    name: name.to_string(),
                    active: rest.trim_start().starts_with("active"),
                    action: None,
                    percent: None,
                    health: None,
                    pending: false,
                });
                continue;
            }
        }
        let Some(cur) = out.last_mut() else { continue };
        if !line.starts_with(char::is_whitespace) {
            continue;
        }
        if cur.health.is_none() {
            cur.health = line
                .split_whitespace()
                .rev()
                .find(|w| w.starts_with('[') && w.ends_with(']') && w.contains('U'))
                .map(str::to_string);
        }
        for action in ["resync", "recovery", "reshape", "check", "repair"] {
            let Some(i) = line.find(action) else { continue };
            let after = line[i + action.len()..].trim_start();
            let Some(v) = after.strip_prefix('=') else {
                continue;
            };
            cur.action = Some(action.to_string());
            cur.pending = v.trim_start().starts_with("PENDING");
            cur.percent = v
                .trim_start()
                .split('%')
                .next()
                .and_then(|p| p.trim().parse().ok())
                .filter(|_| v.contains('%'));
            break;
        }
    }
    out
}

/// How long a degraded array must stay idle before a rebuild counts as over (md restarts an
/// interrupted recovery within milliseconds; this leaves room on a loaded emulated machine).
const RESTART_GRACE: Duration = Duration::from_secs(3);

/// Waits until the array `md` has no resync or recovery running; returns how long that took.
/// Ctrl-C stops the wait.
pub fn wait_idle(runner: &Runner, md: &Path) -> Result<Duration, LayoutError> {
    let t = Instant::now();
    if runner.is_dry_run() {
        return Ok(Duration::ZERO);
    }
    let name = md
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Recovery may take a moment to start after --add; a short grace avoids reading "idle" early.
    std::thread::sleep(Duration::from_millis(200));
    let mut kicked = false;
    // When a member fails during a recovery, md interrupts it and, a moment later, starts it
    // again onto the spare from the members left: an array still missing members must stay
    // idle for a while before the rebuild counts as over (when it first went idle).
    let degraded = format!("/sys/block/{name}/md/degraded");
    let mut idle_at: Option<Duration> = None;
    loop {
        if crate::signals::stop_requested() {
            return Err(LayoutError::Interrupted);
        }
        let text = std::fs::read_to_string("/proc/mdstat")
            .map_err(|e| LayoutError::io("cannot read", "/proc/mdstat", e))?;
        let st = parse_mdstat(&text);
        let Some(a) = st.iter().find(|s| s.name == name) else {
            return Err(LayoutError::Unexpected(format!(
                "{} is not in /proc/mdstat",
                md.display()
            )));
        };
        if a.action.is_none() {
            let whole = crate::system::read_trim(&degraded).is_none_or(|d| d == "0");
            let since = *idle_at.get_or_insert_with(|| t.elapsed());
            if whole || t.elapsed().saturating_sub(since) >= RESTART_GRACE {
                return Ok(since);
            }
        } else {
            idle_at = None;
        }
        // An array that starts read-auto keeps its resync PENDING until written: start it.
        if a.pending && !kicked {
            kicked = true;
            let _ = runner.run(&["mdadm", "--readwrite", &md.to_string_lossy()]);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Bytes md copies to rebuild one member: the component size (md rebuilds the whole device).
pub fn component_bytes(md: &Path) -> Option<u64> {
    let name = md.file_name()?.to_string_lossy().into_owned();
    crate::system::read_trim(format!("/sys/block/{name}/md/component_size"))
        .and_then(|s| s.parse::<u64>().ok())
        .map(|k| k * 1024)
}

/// Stops an array this lab created — after checking its name carries ours — and, when `zero`,
/// zeroes the members' superblocks.
pub fn stop_owned(
    runner: &Runner,
    dev: &Path,
    name: &str,
    members: &[PathBuf],
    zero: bool,
) -> Result<(), LayoutError> {
    if !runner.is_dry_run() {
        let Some(kname) = dev.file_name().map(|f| f.to_string_lossy().into_owned()) else {
            return Ok(());
        };
        if !Path::new("/sys/block").join(&kname).exists() {
            return Ok(());
        }
        let detail = runner.run(&["mdadm", "--detail", "--export", &dev.to_string_lossy()])?;
        let md_name = detail
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("MD_NAME="))
            .unwrap_or("");
        // mdadm stores "host:name".
        if md_name.rsplit(':').next() != Some(name) {
            return Err(LayoutError::Refused(format!(
                "{} is named '{md_name}', not '{name}': not ours, left running",
                dev.display()
            )));
        }
    }
    // Right after an unmount or lvremove the array can still be busy for a moment.
    let mut tries = 0;
    while let Err(e) = runner.run(&stop_argv(dev)) {
        tries += 1;
        if tries >= 10 || runner.is_dry_run() {
            return Err(e);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    if zero {
        for m in members {
            let _ = runner.run(&zero_argv(m));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::MdLevel;

    const MDSTAT: &str = "Personalities : [raid6] [raid5] [raid4]\n\
md100 : active raid5 loop3[4] loop2[2] loop1[1] loop0[0]\n      \
3142656 blocks super 1.2 level 5, 512k chunk, algorithm 2 [4/3] [UUU_]\n      \
[==>..................]  recovery = 12.6% (132480/1047552) finish=0.1min speed=132480K/sec\n      \
bitmap: 0/1 pages [0KB], 65536KB chunk\n\n\
md101 : active raid1 loop5[1] loop4[0]\n      1047552 blocks super 1.2 [2/2] [UU]\n      \
\tresync=DELAYED\n\n\
md102 : active raid0 loop6[1] loop7[0]\n      2095104 blocks super 1.2 512k chunks\n\n\
unused devices: <none>\n";

    #[test]
    fn parses_mdstat() {
        let s = parse_mdstat(MDSTAT);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].name, "md100");
        assert_eq!(s[0].action.as_deref(), Some("recovery"));
        assert_eq!(s[0].percent, Some(12.6));
        assert_eq!(s[0].health.as_deref(), Some("[UUU_]"));
        assert_eq!(s[1].action.as_deref(), Some("resync"));
        assert_eq!(s[1].percent, None);
        assert!(!s[1].pending);
        let p = parse_mdstat(
            "md5 : active (auto-read-only) raid1 sdb[1] sda[0]\n      100 blocks [2/2] [UU]\n      \tresync=PENDING\n",
        );
        assert!(p[0].pending);
        assert_eq!(s[2].action, None);
        assert!(s[2].active);
    }

    fn opts(level: MdLevel) -> MdOptions {
        MdOptions::new(level)
    }

    #[test]
    fn create_command_lines() {
        let m: Vec<PathBuf> = (0..5)
            .map(|i| format!("/dev/sd{}", (b'b' + i) as char).into())
            .collect();
        let mut o = opts(MdLevel::Raid6);
        o.chunk = Some(512 << 10);
        o.bitmap = Some("internal".into());
        o.bitmap_chunk = Some(64 << 20);
        assert_eq!(
            create_argv(
                Path::new("/dev/md100"),
                "iolab-ab12-0",
                &o,
                &m[..4],
                &m[4..]
            )
            .join(" "),
            "mdadm --create /dev/md100 --run --metadata=1.2 --name=iolab-ab12-0 --level=6 \
             --raid-devices=4 --spare-devices=1 --chunk=512K --bitmap=internal \
             --bitmap-chunk=65536K /dev/sdb /dev/sdc /dev/sdd /dev/sde /dev/sdf"
        );
        // A write journal: the device after the spares, named by --write-journal (which sets
        // the policy), not among the array's devices.
        let mut o = opts(MdLevel::Raid5);
        o.consistency_policy = Some("journal".into());
        assert_eq!(
            create_argv(
                Path::new("/dev/md100"),
                "iolab-ab12-0",
                &o,
                &m[..3],
                &m[3..]
            )
            .join(" "),
            "mdadm --create /dev/md100 --run --metadata=1.2 --name=iolab-ab12-0 --level=5 \
             --raid-devices=3 --spare-devices=1 --write-journal=/dev/sdf /dev/sdb /dev/sdc \
             /dev/sdd /dev/sde"
        );
        let mut o = opts(MdLevel::Raid1);
        o.assume_clean = true;
        o.bitmap = Some("none".into());
        assert_eq!(
            create_argv(Path::new("/dev/md101"), "n", &o, &m[..2], &[]).join(" "),
            "mdadm --create /dev/md101 --run --metadata=1.2 --name=n --level=1 \
             --raid-devices=2 --bitmap=none --assume-clean /dev/sdb /dev/sdc"
        );
        assert_eq!(
            fail_remove_argv(Path::new("/dev/md100"), Path::new("/dev/sdc")).join(" "),
            "mdadm /dev/md100 --fail /dev/sdc --remove /dev/sdc"
        );
        assert_eq!(
            add_argv(Path::new("/dev/md100"), Path::new("/dev/sdg")).join(" "),
            "mdadm /dev/md100 --add /dev/sdg"
        );
    }
}
