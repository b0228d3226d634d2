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

/// Checks a real device against the safety rules before anything touches it: refused always
/// when the kernel says it is in use (mounted, swap, backing a loop, held) or it holds the root
/// filesystem; refused without `--destroy` when libblkid finds any signature on it or on a
/// partition of it, or it has partitions.
pub fn check_device(_runner: &Runner, dev: &Path, destroy: bool) -> Result<(), LayoutError> {
    let bd = BlockDevice::from_path(dev)
        .ok_or_else(|| LayoutError::Refused(format!("{} is not a block device", dev.display())))?;
    let shown = if bd.path == dev {
        dev.display().to_string()
    } else {
        format!("{} ({})", dev.display(), bd.path.display())
    };
    if let Some(why) = system::probe::in_use(&bd) {
        return Err(LayoutError::Refused(format!(
            "refusing {shown}: {why}; this lab only uses idle devices"
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
    if !destroy {
        let sigs = system::probe::signatures(dev)
            .map_err(|e| LayoutError::Refused(format!("refusing {shown}: {e}")))?;
        if !sigs.is_empty() {
            return Err(LayoutError::Refused(format!(
                "refusing {shown}: it holds data ({}); pass --destroy {} if it may be destroyed",
                system::probe::describe(&sigs),
                dev.display()
            )));
        }
        let parts = system::blockdev::partitions(&bd.name);
        if !parts.is_empty() {
            return Err(LayoutError::Refused(format!(
                "refusing {shown}: it has partitions ({}); pass --destroy {} if they may be destroyed",
                parts.join(", "),
                dev.display()
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
