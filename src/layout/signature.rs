//! Real devices: what is on them (filesystem, partition table, RAID signatures) and whether the
//! lab may use them at all.
//!
//! The rules: a device that is mounted, holds the root filesystem or is in use by an array or
//! mapping we did not create is refused always; a device with any signature is refused unless
//! the user passed `--destroy` naming it. Each refusal names the device and what was found.

use std::path::Path;

use super::LayoutError;
use super::cmd::Runner;
use crate::system::{self, BlockDevice};

/// One signature found on a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// What it is: `xfs`, `gpt`, `dos`, `linux_raid_member`, `LVM2_member`, `btrfs`...
    pub kind: String,
    /// Where, as wipefs prints it (`0x438`).
    pub offset: String,
}

/// Parses `wipefs --noheadings --output TYPE,OFFSET` output.
pub fn parse_wipefs(text: &str) -> Vec<Signature> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let kind = it.next()?.to_string();
            let offset = it.next().unwrap_or("").to_string();
            Some(Signature { kind, offset })
        })
        .collect()
}

/// The signatures on a device (`wipefs` lists them without erasing anything).
pub fn signatures(runner: &Runner, dev: &Path) -> Result<Vec<Signature>, LayoutError> {
    let out = runner.run(&[
        "wipefs",
        "--noheadings",
        "--output",
        "TYPE,OFFSET",
        &dev.to_string_lossy(),
    ])?;
    Ok(parse_wipefs(&out.stdout))
}

/// Erases every signature on a device we own (members before building on them).
pub fn wipe(runner: &Runner, dev: &Path) -> Result<(), LayoutError> {
    runner.run(&["wipefs", "--all", "--quiet", &dev.to_string_lossy()])?;
    Ok(())
}

/// Checks a real device against the safety rules before anything touches it.
pub fn check_device(runner: &Runner, dev: &Path, destroy: bool) -> Result<(), LayoutError> {
    let shown = dev.display();
    let bd = BlockDevice::from_path(dev)
        .ok_or_else(|| LayoutError::Refused(format!("{shown} is not a block device")))?;
    if let Some(m) = system::mounts::mounts_of_device(&bd.name)
        .into_iter()
        .next()
    {
        return Err(LayoutError::Refused(format!(
            "refusing {shown}: {} is mounted on {}; unmount it first",
            m.source,
            m.mount_point.display()
        )));
    }
    let root_disks: Vec<String> = system::blockdev::devices_under(Path::new("/"))
        .into_iter()
        .map(|d| d.whole_disk())
        .collect();
    if root_disks
        .iter()
        .any(|r| *r == bd.name || *r == bd.whole_disk())
    {
        return Err(LayoutError::Refused(format!(
            "refusing {shown}: it holds the root filesystem"
        )));
    }
    let mut holders = bd.holders.clone();
    for p in system::blockdev::partitions(&bd.name) {
        if let Some(pd) = BlockDevice::read(&p) {
            holders.extend(pd.holders);
        }
    }
    if !holders.is_empty() {
        return Err(LayoutError::Refused(format!(
            "refusing {shown}: it is in use by {}, which this lab did not create; stop that first",
            holders.join(", ")
        )));
    }
    if !destroy {
        let sigs = signatures(runner, dev)?;
        if let Some(s) = sigs.first() {
            let kinds: Vec<&str> = sigs.iter().map(|s| s.kind.as_str()).collect();
            return Err(LayoutError::Refused(format!(
                "refusing {shown}: it holds data ({} signature at offset {}{}); pass --destroy {shown} if it may be destroyed",
                s.kind,
                s.offset,
                if kinds.len() > 1 {
                    format!(", also {}", kinds[1..].join(", "))
                } else {
                    String::new()
                }
            )));
        }
        let parts = system::blockdev::partitions(&bd.name);
        if !parts.is_empty() {
            return Err(LayoutError::Refused(format!(
                "refusing {shown}: it has partitions ({}); pass --destroy {shown} if they may be destroyed",
                parts.join(", ")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_wipefs_listing() {
        let s = parse_wipefs("xfs  0x0\ngpt 0x200\nPMBR 0x1fe\n");
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].kind, "xfs");
        assert_eq!(s[1].offset, "0x200");
        assert!(parse_wipefs("").is_empty());
    }

    #[test]
    fn the_root_disk_is_refused_even_with_destroy() {
        let root = system::blockdev::devices_under(Path::new("/"));
        let Some(d) = root.iter().find(|d| d.path.exists()) else {
            eprintln!("skipped: no block device under / (container overlay)");
            return;
        };
        let e = check_device(&Runner::real(), &d.path, true).unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("refusing") && s.contains(&d.path.display().to_string()),
            "{s}"
        );
    }
}
