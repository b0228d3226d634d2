//! What `iolab capture TARGET` traces: the block device itself, or the device under a
//! directory, file or mount point — and how to find its IOs among the kernel's events.

use std::path::Path;

use super::CaptureError;
use super::pair::DeviceFilter;
use crate::system::blockdev::BlockDevice;

/// The device a capture records, and how.
#[derive(Debug, Clone)]
pub struct Traced {
    /// The device (a partition when the filesystem is on one).
    pub device: BlockDevice,
    /// Which events carry its IOs, and which of them are its own.
    pub filter: DeviceFilter,
    /// Request-based (blk-mq: disks, NVMe, virtio, loop) — traced at `block_rq_issue` /
    /// `block_rq_complete`, what the device itself was sent; otherwise (md, dm, LVM, zram)
    /// at `block_bio_queue` / `block_bio_complete`, what was sent to the virtual device.
    pub request_based: bool,
    /// The filesystem on it, when the target was a path on one.
    pub filesystem: Option<String>,
    /// Its mount point.
    pub mount_point: Option<String>,
    /// What is traced, in words, for the user (`/dev/sda1 (xfs mounted on /srv)`).
    pub said: String,
}

impl Traced {
    /// The issue and completion events used.
    pub fn events(&self) -> (&'static str, &'static str) {
        if self.request_based {
            ("block_rq_issue", "block_rq_complete")
        } else {
            ("block_bio_queue", "block_bio_complete")
        }
    }
}

fn kernel_dev(devnum: &str) -> Option<u32> {
    let (ma, mi) = devnum.split_once(':')?;
    Some((ma.trim().parse::<u32>().ok()? << 20) | mi.trim().parse::<u32>().ok()?)
}

/// Finds the device of `target`: a block device node, or the device holding a path.
pub fn resolve(target: &Path) -> Result<Traced, CaptureError> {
    let meta = std::fs::metadata(target).map_err(|e| {
        CaptureError::Target(format!(
            "{}: {e}; give a block device (/dev/sdb) or a directory on the filesystem to trace",
            target.display()
        ))
    })?;
    use std::os::unix::fs::FileTypeExt;
    let (device, fs, mount) = if meta.file_type().is_block_device() {
        let d = BlockDevice::from_path(target).ok_or_else(|| {
            CaptureError::Target(format!(
                "{}: not a block device /sys knows",
                target.display()
            ))
        })?;
        (d, None, None)
    } else {
        let mi = crate::system::mounts::mount_of(target);
        let under = crate::system::blockdev::devices_under(target);
        // The first device found is the filesystem's own (the rest are what it sits on).
        let Some(d) = under.into_iter().next() else {
            let fs = mi
                .as_ref()
                .map_or("an unknown filesystem", |m| m.fs_type.as_str());
            return Err(CaptureError::Target(format!(
                "{} is on {fs}, which has no block device to trace; give a path on a disk filesystem or a block device",
                target.display()
            )));
        };
        if mi.as_ref().is_some_and(|m| m.fs_type == "btrfs")
            && crate::system::blockdev::devices_under(target)
                .iter()
                .filter(|x| x.slaves.is_empty() && x.holders.is_empty())
                .count()
                > 1
        {
            return Err(CaptureError::Target(format!(
                "{} is on a btrfs filesystem over several devices; capture one of them (iolab capture /dev/X)",
                target.display()
            )));
        }
        (
            d,
            mi.as_ref().map(|m| m.fs_type.clone()),
            mi.as_ref().map(|m| m.mount_point.display().to_string()),
        )
    };
    let whole = device.whole_disk();
    let whole_dev = BlockDevice::read(&whole).unwrap_or_else(|| device.clone());
    let request_based = Path::new("/sys/block").join(&whole).join("mq").is_dir();
    let own = kernel_dev(&device.devnum).ok_or_else(|| {
        CaptureError::Target(format!(
            "{}: unreadable device number",
            device.path.display()
        ))
    })?;
    let start = if device.parent.is_some() {
        crate::system::read_trim(format!("/sys/class/block/{}/start", device.name))
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0)
    } else {
        0
    };
    let sectors = if device.parent.is_some() {
        device.size_bytes / 512
    } else {
        u64::MAX
    };
    let dev = if request_based {
        kernel_dev(&whole_dev.devnum).unwrap_or(own)
    } else {
        own
    };
    let mut said = device.path.display().to_string();
    if let (Some(f), Some(m)) = (&fs, &mount) {
        said.push_str(&format!(" ({f} mounted on {m}"));
        if Path::new(m) != target {
            said.push_str(&format!(", holding {}", target.display()));
        }
        said.push(')');
    }
    if !request_based {
        said.push_str(" (a bio-based device: the IOs sent to it, before it maps them)");
    }
    Ok(Traced {
        device,
        filter: DeviceFilter {
            dev,
            start,
            sectors,
        },
        request_based,
        filesystem: fs,
        mount_point: mount,
        said,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers_become_kernel_dev_t() {
        assert_eq!(kernel_dev("7:3"), Some((7 << 20) | 3));
        assert_eq!(kernel_dev("259:0"), Some(259 << 20));
        assert_eq!(kernel_dev("x"), None);
    }

    #[test]
    fn a_path_without_a_device_is_refused_by_name() {
        let e = resolve(Path::new("/nonexistent/x")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/x"), "{e}");
        if std::fs::metadata("/proc/self").is_ok() {
            let e = resolve(Path::new("/proc/self")).unwrap_err();
            assert!(e.to_string().contains("no block device"), "{e}");
        }
    }
}
