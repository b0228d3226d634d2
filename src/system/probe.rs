//! What a block device holds and who is using it, as libblkid and the kernel see it.
//!
//! Signatures come from libblkid's own knowledge through its two command-line front ends:
//! `wipefs --no-act` (every signature libblkid finds, partition tables and superblocks, with
//! offsets at both ends of the device) and `blkid -p` (low-level probing, bypassing the cache).
//! Both are asked about the device and about each of its partitions. There is deliberately no
//! magic table here: libblkid knows more formats than we could keep up with. The one format
//! decoded here is md's superblock ([`super::md_super`]), because libblkid's name for it,
//! `linux_raid_member`, says neither that the device belongs to an md array nor to which: the
//! refusal names the array (UUID, name, level) and the device's role in it.
//!
//! "In use" is what the kernel says: mounted (also a partition or a bind mount), active swap, a
//! loop device whose backing file lives on it, holders, or an exclusive open refused with
//! `EBUSY` (which catches a lazily unmounted filesystem and anything else holding it).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::BlockDevice;

/// One signature found on a device or one of its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The node it was found on (the device itself or a partition).
    pub device: PathBuf,
    /// libblkid's name for it: `xfs`, `gpt`, `dos`, `linux_raid_member`, `zfs_member`...
    pub kind: String,
    /// Byte offset as wipefs prints it (`0x438`); `None` when only `blkid -p` saw it.
    pub offset: Option<String>,
    /// What the signature says in words, when iolab decodes it (an md member's array).
    pub detail: Option<String>,
}

impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.kind)?;
        if let Some(o) = &self.offset {
            write!(f, " at offset {o}")?;
        }
        write!(f, " on {}", self.device.display())?;
        if let Some(d) = &self.detail {
            write!(f, " ({d})")?;
        }
        Ok(())
    }
}

/// Why a device could not be probed: then we cannot say it is empty, so callers refuse.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The probing tool could not be run or failed.
    #[error(
        "cannot probe {dev} for signatures with {tool}: {msg}; install util-linux (wipefs, blkid) or check the device"
    )]
    Tool {
        /// The device.
        dev: PathBuf,
        /// `wipefs` or `blkid`.
        tool: &'static str,
        /// What went wrong.
        msg: String,
    },
}

/// Parses `wipefs --noheadings --output TYPE,OFFSET` output.
pub fn parse_wipefs(dev: &Path, text: &str) -> Vec<Signature> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let kind = it.next()?.to_string();
            let offset = it.next().map(str::to_string);
            Some(Signature {
                device: dev.to_path_buf(),
                kind,
                offset,
                detail: None,
            })
        })
        .collect()
}

/// Parses `blkid -p -o export` output: the `TYPE`, `PTTYPE` and `PART_ENTRY_SCHEME` values.
pub fn parse_blkid_export(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| matches!(*k, "TYPE" | "PTTYPE"))
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect()
}

fn wipefs(dev: &Path) -> Result<Vec<Signature>, ProbeError> {
    let o = Command::new("wipefs")
        .args(["--no-act", "--noheadings", "--output", "TYPE,OFFSET"])
        .arg(dev)
        .output()
        .map_err(|e| ProbeError::Tool {
            dev: dev.to_path_buf(),
            tool: "wipefs",
            msg: e.to_string(),
        })?;
    if !o.status.success() {
        return Err(ProbeError::Tool {
            dev: dev.to_path_buf(),
            tool: "wipefs",
            msg: String::from_utf8_lossy(&o.stderr).trim().to_string(),
        });
    }
    Ok(parse_wipefs(dev, &String::from_utf8_lossy(&o.stdout)))
}

/// `blkid -p`: exit 0 found, 2 nothing, 8 ambivalent (several signatures: itself a finding).
fn blkid(dev: &Path) -> Result<Vec<Signature>, ProbeError> {
    let o = Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(dev)
        .output()
        .map_err(|e| ProbeError::Tool {
            dev: dev.to_path_buf(),
            tool: "blkid",
            msg: e.to_string(),
        })?;
    let sig = |kind: String| Signature {
        device: dev.to_path_buf(),
        kind,
        offset: None,
        detail: None,
    };
    match o.status.code() {
        Some(0) => Ok(parse_blkid_export(&String::from_utf8_lossy(&o.stdout))
            .into_iter()
            .map(sig)
            .collect()),
        Some(2) => Ok(Vec::new()),
        Some(8) => Ok(vec![sig("ambivalent (several signatures)".into())]),
        _ => Err(ProbeError::Tool {
            dev: dev.to_path_buf(),
            tool: "blkid",
            msg: String::from_utf8_lossy(&o.stderr).trim().to_string(),
        }),
    }
}

/// Every signature libblkid finds on `dev` and on each of its partitions. Empty means libblkid
/// recognised nothing anywhere on it.
pub fn signatures(dev: &Path) -> Result<Vec<Signature>, ProbeError> {
    let mut nodes = vec![dev.to_path_buf()];
    if let Some(bd) = BlockDevice::from_path(dev) {
        nodes.extend(
            super::blockdev::partitions(&bd.name)
                .into_iter()
                .map(|p| Path::new("/dev").join(p)),
        );
    }
    let mut out: Vec<Signature> = Vec::new();
    for n in &nodes {
        if n != dev && !n.exists() {
            continue;
        }
        let listed = wipefs(n)?;
        let probed = blkid(n)?;
        for s in listed.into_iter().chain(probed) {
            if !out.iter().any(|o| o.device == s.device && o.kind == s.kind) {
                out.push(s);
            }
        }
        add_md_detail(n, &mut out);
    }
    Ok(out)
}

/// libblkid's name for an md superblock.
pub const MD_KIND: &str = "linux_raid_member";

/// Names the md array of an md member found on `node`, or adds the member libblkid missed (it
/// skips superblocks whose checksum is wrong in newer versions): writing it would still break
/// that array.
fn add_md_detail(node: &Path, out: &mut Vec<Signature>) {
    let Some(md) = super::md_super::read(node) else {
        return;
    };
    let detail = md.to_string();
    if let Some(s) = out
        .iter_mut()
        .find(|s| s.device == node && s.kind == MD_KIND)
    {
        s.detail = Some(detail);
        s.offset.get_or_insert_with(|| format!("{:#x}", md.offset));
    } else {
        out.push(Signature {
            device: node.to_path_buf(),
            kind: MD_KIND.into(),
            offset: Some(format!("{:#x}", md.offset)),
            detail: Some(detail),
        });
    }
}

/// A one-line summary of signatures for a refusal: the first with its offset, then the others.
pub fn describe(sigs: &[Signature]) -> String {
    let Some(first) = sigs.first() else {
        return "no signature".into();
    };
    let mut s = format!("{} signature", first.kind);
    if let Some(o) = &first.offset {
        s.push_str(&format!(" at offset {o}"));
    }
    s.push_str(&format!(" on {}", first.device.display()));
    if let Some(d) = &first.detail {
        s.push_str(&format!(" ({d})"));
    }
    let mut rest: Vec<String> = Vec::new();
    for x in &sigs[1..] {
        let mut k = if x.device == first.device {
            x.kind.clone()
        } else {
            format!("{} on {}", x.kind, x.device.display())
        };
        if let Some(d) = &x.detail {
            k.push_str(&format!(" ({d})"));
        }
        if x.kind != first.kind && !rest.contains(&k) {
            rest.push(k);
        }
    }
    if !rest.is_empty() {
        s.push_str(&format!(", also {}", rest.join(", ")));
    }
    s
}

/// Why the kernel says `bd` (or a partition of it) is in use, if it is: mounted, active swap,
/// backing a loop device, held by an array or mapping, or refusing an exclusive open.
pub fn in_use(bd: &BlockDevice) -> Option<String> {
    if let Some(m) = super::blockdev::mounts_of_device(&bd.name)
        .into_iter()
        .next()
    {
        return Some(format!(
            "{} is mounted on {}",
            m.source,
            m.mount_point.display()
        ));
    }
    let mut names = vec![bd.name.clone()];
    names.extend(super::blockdev::partitions(&bd.name));
    if let Some(n) = active_swap(&names) {
        return Some(format!("/dev/{n} is in use as swap (swapoff it first)"));
    }
    let devnums: Vec<String> = names
        .iter()
        .filter_map(|n| super::blockdev::devnum(n))
        .collect();
    if let Some((lo, file)) = loops_backed_on(&devnums) {
        return Some(format!(
            "{lo} has its backing file {file} on a filesystem on it (detach {lo} first)"
        ));
    }
    let mut holders = bd.holders.clone();
    for p in &names[1..] {
        if let Some(pd) = BlockDevice::read(p) {
            holders.extend(pd.holders);
        }
    }
    if !holders.is_empty() {
        return Some(format!("it is in use by {}", holders.join(", ")));
    }
    for n in &names {
        if exclusive_open_busy(&Path::new("/dev").join(n)) {
            return Some(format!(
                "the kernel refuses an exclusive open of /dev/{n} (busy: a filesystem, possibly lazily unmounted, or another user holds it)"
            ));
        }
    }
    None
}

/// The first of `names` listed in /proc/swaps (compared by device number, so any alias counts).
fn active_swap(names: &[String]) -> Option<String> {
    let text = std::fs::read_to_string("/proc/swaps").ok()?;
    for l in text.lines().skip(1) {
        let Some(src) = l.split_whitespace().next() else {
            continue;
        };
        let src = src.replace("\\040", " ");
        let Some(b) = BlockDevice::from_path(Path::new(&src)) else {
            continue;
        };
        if names.contains(&b.name) {
            return Some(b.name);
        }
    }
    None
}

/// A loop device whose backing file sits on one of `devnums` (from `losetup --list`'s
/// BACK-MAJ:MIN, which stays right after the filesystem was lazily unmounted).
fn loops_backed_on(devnums: &[String]) -> Option<(String, String)> {
    let o = Command::new("losetup")
        .args([
            "--list",
            "--noheadings",
            "--raw",
            "--output",
            "NAME,BACK-MAJ:MIN,BACK-FILE",
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&o.stdout);
    for l in text.lines() {
        let mut it = l.splitn(3, ' ');
        let (Some(name), Some(mm), file) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        // `--raw` escapes the padding of the column as `\x20`.
        let mm = mm.replace("\\x20", "");
        if devnums.iter().any(|d| *d == mm.trim()) {
            return Some((name.to_string(), file.unwrap_or("?").replace("\\x20", " ")));
        }
    }
    None
}

/// True when the kernel refuses an exclusive open (`O_EXCL` on a block device) with `EBUSY`.
fn exclusive_open_busy(dev: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(dev)
    {
        Ok(_) => false,
        Err(e) => e.raw_os_error() == Some(libc::EBUSY),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_wipefs_listing() {
        let d = Path::new("/dev/x");
        let s = parse_wipefs(d, "xfs  0x0\ngpt 0x200\nPMBR 0x1fe\n");
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].kind, "xfs");
        assert_eq!(s[1].offset.as_deref(), Some("0x200"));
        assert!(parse_wipefs(d, "").is_empty());
    }

    #[test]
    fn parses_blkid_export() {
        let k = parse_blkid_export("DEVNAME=/dev/loop0\nPTUUID=ab\nPTTYPE=gpt\n");
        assert_eq!(k, vec!["gpt".to_string()]);
        let k = parse_blkid_export("DEVNAME=/dev/loop0\nUUID=1\nTYPE=xfs\nUSAGE=filesystem\n");
        assert_eq!(k, vec!["xfs".to_string()]);
    }

    #[test]
    fn describes_the_first_signature_then_the_others() {
        let d = PathBuf::from("/dev/loop3");
        let sig = |k: &str, o: Option<&str>, dev: &PathBuf| Signature {
            device: dev.clone(),
            kind: k.into(),
            offset: o.map(str::to_string),
            detail: None,
        };
        let s = describe(&[
            sig("gpt", Some("0x200"), &d),
            sig("PMBR", Some("0x1fe"), &d),
            sig("gpt", None, &d),
            sig("xfs", Some("0x0"), &PathBuf::from("/dev/loop3p1")),
        ]);
        assert_eq!(
            s,
            "gpt signature at offset 0x200 on /dev/loop3, also PMBR, xfs on /dev/loop3p1"
        );
    }
}
