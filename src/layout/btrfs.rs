//! btrfs as RAID layer and filesystem: mkfs with data/metadata profiles, multi-device mounts,
//! usable space, and the replace that rebuilds a lost member.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::LayoutError;
use super::cmd::Runner;
use crate::stack::BtrfsProfile;

/// btrfs: the RAID layer and the filesystem at once, or a filesystem over another layer.
pub struct Btrfs;

/// `mkfs.btrfs -f -d DATA -m META [OPTS] DEV...`.
pub fn mkfs_argv(
    data: BtrfsProfile,
    metadata: BtrfsProfile,
    options: &[String],
    devices: &[PathBuf],
) -> Vec<String> {
    let mut a: Vec<String> = ["mkfs.btrfs", "-f", "-d", data.name(), "-m", metadata.name()]
        .map(String::from)
        .to_vec();
    a.extend(options.iter().cloned());
    a.extend(devices.iter().map(|d| d.to_string_lossy().into_owned()));
    a
}

/// `btrfs replace start -B -f DEVID NEWDEV MNT`: rebuilds the missing device `devid` onto `new`
/// from the other members' redundancy, in the foreground so it can be timed.
pub fn replace_argv(devid: u64, new: &Path, mnt: &Path) -> Vec<String> {
    vec![
        "btrfs".into(),
        "replace".into(),
        "start".into(),
        "-B".into(),
        "-f".into(),
        devid.to_string(),
        new.to_string_lossy().into_owned(),
        mnt.to_string_lossy().into_owned(),
    ]
}

/// One device as `btrfs filesystem show --raw` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShowDevice {
    /// Device id inside the filesystem.
    pub devid: u64,
    /// Size, bytes.
    pub size: u64,
    /// Allocated (chunks), bytes.
    pub used: u64,
    /// Path, `None` when the device is missing.
    pub path: Option<PathBuf>,
}

/// Parses `btrfs filesystem show --raw` output.
pub fn parse_show(text: &str) -> Vec<ShowDevice> {
    let mut out = Vec::new();
    for l in text.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.first() != Some(&"devid") {
            continue;
        }
        let field = |k: &str| {
            w.iter()
                .position(|x| *x == k)
                .and_then(|i| w.get(i + 1))
                .copied()
        };
        let Some(devid) = w.get(1).and_then(|s| s.parse().ok()) else {
            continue;
        };
        let num = |k: &str| field(k).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        let path = if l.contains("MISSING") {
            None
        } else {
            field("path").map(PathBuf::from)
        };
        out.push(ShowDevice {
            devid,
            size: num("size"),
            used: num("used"),
            path,
        });
    }
    out
}

/// The devices of the filesystem mounted at `mnt`.
pub fn show(runner: &Runner, mnt: &Path) -> Result<Vec<ShowDevice>, LayoutError> {
    let out = runner.run(&[
        "btrfs",
        "filesystem",
        "show",
        "--raw",
        &mnt.to_string_lossy(),
    ])?;
    Ok(parse_show(&out.stdout))
}

/// Parses `Free (estimated):` from `btrfs filesystem usage -b`: the space the data profile
/// leaves for files, counting parity and copies (unlike statfs on raid5/6).
pub fn parse_free_estimated(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.trim_start().starts_with("Free (estimated):"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Parses the bytes used by data (`Data,RAID5: Size:..., Used:N`).
pub fn parse_data_used(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.starts_with("Data,"))
        .filter_map(|l| l.split("Used:").nth(1))
        .filter_map(|v| {
            v.trim()
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse::<u64>().ok())
        })
        .sum()
}

/// One line of `btrfs filesystem df -b`: block groups of one kind and profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DfLine {
    /// `Data`, `Metadata` or `System` (`GlobalReserve` is left out).
    pub kind: String,
    /// Profile as printed, lower case (`single`, `raid1c3`).
    pub profile: String,
    /// Allocated bytes.
    pub total: u64,
    /// Used bytes.
    pub used: u64,
}

/// Parses `btrfs filesystem df -b` output.
pub fn parse_df(text: &str) -> Vec<DfLine> {
    let mut out = Vec::new();
    for l in text.lines() {
        let Some((head, rest)) = l.split_once(':') else {
            continue;
        };
        let Some((kind, profile)) = head.split_once(',') else {
            continue;
        };
        let kind = kind.trim();
        if kind == "GlobalReserve" {
            continue;
        }
        let num = |k: &str| {
            rest.split(',')
                .find_map(|p| p.trim().strip_prefix(k))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        out.push(DfLine {
            kind: kind.to_string(),
            profile: profile.trim().to_ascii_lowercase(),
            total: num("total="),
            used: num("used="),
        });
    }
    out
}

/// Block groups not in the layout's profiles (data in `data`, metadata and system in
/// `metadata`): what btrfs allocated while mounted degraded (it writes new chunks as `single`
/// when a profile's copies cannot all be placed) and a replace does not convert back.
pub fn stray_profiles(df: &[DfLine], data: BtrfsProfile, metadata: BtrfsProfile) -> Vec<DfLine> {
    df.iter()
        .filter(|d| {
            let want = if d.kind == "Data" { data } else { metadata };
            d.profile != want.name() && d.total > 0
        })
        .cloned()
        .collect()
}

/// `btrfs balance start -f -dconvert=DATA,soft -mconvert=META,soft -sconvert=META,soft MNT`:
/// converts block groups not in the layout's profiles back (`soft` leaves the others alone;
/// `-f` is what btrfs asks for to touch system chunks).
pub fn balance_convert_argv(data: BtrfsProfile, metadata: BtrfsProfile, mnt: &Path) -> Vec<String> {
    vec![
        "btrfs".into(),
        "balance".into(),
        "start".into(),
        "-f".into(),
        format!("-dconvert={},soft", data.name()),
        format!("-mconvert={},soft", metadata.name()),
        format!("-sconvert={},soft", metadata.name()),
        mnt.to_string_lossy().into_owned(),
    ]
}

/// `btrfs balance start -dusage=50 MNT`: packs data block groups at most half full into the
/// others, giving their space back as unallocated. A replace has to set every block group
/// read-only in turn, and for the one metadata block group of a small filesystem that takes a
/// new metadata chunk: without unallocated space (the workloads' files, deleted since, left
/// data block groups allocated and mostly empty) it fails with ENOSPC.
pub fn reclaim_argv(mnt: &Path) -> Vec<String> {
    [
        "btrfs",
        "balance",
        "start",
        "-dusage=50",
        &mnt.to_string_lossy(),
    ]
    .map(String::from)
    .to_vec()
}

/// Usable bytes of the btrfs mounted at `mnt`: estimated free space plus data already stored.
pub fn usable_bytes(runner: &Runner, mnt: &Path) -> Result<u64, LayoutError> {
    let out = runner.run(&["btrfs", "filesystem", "usage", "-b", &mnt.to_string_lossy()])?;
    let free = parse_free_estimated(&out.stdout).ok_or_else(|| {
        LayoutError::Unexpected("btrfs filesystem usage printed no 'Free (estimated)'".into())
    })?;
    Ok(free + parse_data_used(&out.stdout))
}

/// One device's error counters as `btrfs device stats` keeps them: what btrfs noticed —
/// `corruption_errs` counts blocks whose checksum did not match (silent corruption caught).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevStats {
    /// The device as btrfs names it (`/dev/loop3`).
    pub device: String,
    /// Writes that failed.
    pub write_io_errs: u64,
    /// Reads that failed.
    pub read_io_errs: u64,
    /// Flushes that failed.
    pub flush_io_errs: u64,
    /// Blocks read whose checksum did not match.
    pub corruption_errs: u64,
    /// Blocks of the wrong generation (lost writes).
    pub generation_errs: u64,
}

impl DevStats {
    /// `loop3: 16 checksum errors, 1 read error`, or `None` when every counter is 0.
    pub fn describe(&self) -> Option<String> {
        let name = self.device.rsplit('/').next().unwrap_or(&self.device);
        let parts: Vec<String> = [
            (self.corruption_errs, "checksum error"),
            (self.read_io_errs, "read error"),
            (self.write_io_errs, "write error"),
            (self.flush_io_errs, "flush error"),
            (self.generation_errs, "generation error"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n} {w}{}", if *n == 1 { "" } else { "s" }))
        .collect();
        (!parts.is_empty()).then(|| format!("{name}: {}", parts.join(", ")))
    }
}

/// Parses `btrfs device stats MNT` (`[/dev/loop0].corruption_errs  16` lines).
pub fn parse_device_stats(text: &str) -> Vec<DevStats> {
    let mut out: Vec<DevStats> = Vec::new();
    for l in text.lines() {
        let Some((dev, rest)) = l.trim().strip_prefix('[').and_then(|x| x.split_once("].")) else {
            continue;
        };
        let mut w = rest.split_whitespace();
        let (Some(key), Some(n)) = (w.next(), w.next().and_then(|n| n.parse::<u64>().ok())) else {
            continue;
        };
        if out.last().is_none_or(|d| d.device != dev) {
            out.push(DevStats {
                device: dev.to_string(),
                ..DevStats::default()
            });
        }
        let Some(d) = out.last_mut() else { continue };
        match key {
            "write_io_errs" => d.write_io_errs = n,
            "read_io_errs" => d.read_io_errs = n,
            "flush_io_errs" => d.flush_io_errs = n,
            "corruption_errs" => d.corruption_errs = n,
            "generation_errs" => d.generation_errs = n,
            _ => {}
        }
    }
    out
}

/// The error counters of every device of the filesystem mounted at `mnt`.
pub fn device_stats(runner: &Runner, mnt: &Path) -> Result<Vec<DevStats>, LayoutError> {
    let out = runner.run(&["btrfs", "device", "stats", &mnt.to_string_lossy()])?;
    Ok(parse_device_stats(&out.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    const USAGE: &str = "Overall:\n    Device size:\t\t        4294967296\n    Free (estimated):\t\t        2805989376\t(min: 1978007552)\n    Data ratio:\t\t\t      1.33\n\nData,RAID5: Size:322043904, Used:1048576 (0.33%)\n   /dev/loop0\t 107347968\n\nMetadata,RAID1: Size:268435456, Used:131072 (0.05%)\n";

    const SHOW: &str = "Label: none  uuid: f3c5e1fb\n\tTotal devices 4 FS bytes used 210092032\n\tdevid    1 size 1073741824 used 107347968 path /dev/loop0\n\tdevid    2 size 0 used 0 path  MISSING\n\tdevid    3 size 1073741824 used 384172032 path /dev/loop2\n";

    #[test]
    fn parses_usage() {
        assert_eq!(parse_free_estimated(USAGE), Some(2805989376));
        assert_eq!(parse_data_used(USAGE), 1048576);
    }

    #[test]
    fn parses_show_with_a_missing_device() {
        let d = parse_show(SHOW);
        assert_eq!(d.len(), 3);
        assert_eq!(d[0].path, Some(PathBuf::from("/dev/loop0")));
        assert_eq!(d[1].devid, 2);
        assert_eq!(d[1].path, None);
        assert_eq!(d[2].used, 384172032);
    }

    /// `btrfs filesystem df -b` after a raid1c3 layout was written to while degraded and its
    /// missing member replaced (btrfs-progs 6.2, kernel 6.18).
    const DF: &str = "Data, single: total=654311424, used=314572800\nData, RAID1C3: total=107347968, used=104857600\nSystem, single: total=33554432, used=16384\nSystem, RAID1C3: total=8388608, used=0\nMetadata, single: total=218103808, used=0\nMetadata, RAID1C3: total=268435456, used=573440\nGlobalReserve, single: total=5767168, used=0\n";

    #[test]
    fn finds_block_groups_a_degraded_mount_wrote() {
        let df = parse_df(DF);
        assert_eq!(df.len(), 6);
        assert_eq!(df[0].profile, "single");
        assert_eq!(df[0].used, 314572800);
        let stray = stray_profiles(&df, BtrfsProfile::Raid1c3, BtrfsProfile::Raid1c3);
        let kinds: Vec<&str> = stray.iter().map(|d| d.kind.as_str()).collect();
        assert_eq!(kinds, vec!["Data", "System", "Metadata"]);
        assert!(stray_profiles(&df[1..2], BtrfsProfile::Raid1c3, BtrfsProfile::Raid1).is_empty());
        assert_eq!(
            balance_convert_argv(BtrfsProfile::Raid6, BtrfsProfile::Raid1c3, Path::new("/m"))
                .join(" "),
            "btrfs balance start -f -dconvert=raid6,soft -mconvert=raid1c3,soft -sconvert=raid1c3,soft /m"
        );
    }

    #[test]
    fn command_lines() {
        let devs: Vec<PathBuf> = vec!["/dev/loop1".into(), "/dev/loop2".into()];
        assert_eq!(
            mkfs_argv(
                BtrfsProfile::Raid1,
                BtrfsProfile::Raid1,
                &["--nodesize".into(), "16k".into()],
                &devs
            )
            .join(" "),
            "mkfs.btrfs -f -d raid1 -m raid1 --nodesize 16k /dev/loop1 /dev/loop2"
        );
        assert_eq!(
            replace_argv(2, Path::new("/dev/loop9"), Path::new("/tmp/m")).join(" "),
            "btrfs replace start -B -f 2 /dev/loop9 /tmp/m"
        );
    }

    #[test]
    fn device_stats_are_read_per_device() {
        let t = "[/dev/loop0].write_io_errs    0\n[/dev/loop0].read_io_errs     0\n[/dev/loop0].flush_io_errs    0\n[/dev/loop0].corruption_errs  16\n[/dev/loop0].generation_errs  0\n[/dev/mapper/x-1].write_io_errs 0\n[/dev/mapper/x-1].read_io_errs 1\n[/dev/mapper/x-1].corruption_errs 0\n";
        let d = parse_device_stats(t);
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].corruption_errs, d[1].read_io_errs), (16, 1));
        assert_eq!(
            d[0].describe().as_deref(),
            Some("loop0: 16 checksum errors")
        );
        assert_eq!(d[1].describe().as_deref(), Some("x-1: 1 read error"));
        assert_eq!(DevStats::default().describe(), None);
    }
}
