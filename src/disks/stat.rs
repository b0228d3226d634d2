//! A block device's own counters (`/sys/class/block/NAME/stat`), read before and after some
//! IO: how many IOs and bytes it completed and for how long it was busy.
//!
//! Busy time (`io_ticks`, the milliseconds with at least one IO in flight) is what the
//! slow-disk finder judges a device by ([`super::outliers::slow_by_busy`]): a device's IOs and
//! bytes per second of its own busy time do not grow with a queue it was handed, while its
//! milliseconds per IO (`read ticks + write ticks` over IOs, iostat's `await`) do. The kernel
//! counts `io_ticks` in jiffies (4 ms at Debian's HZ=250): over a few hundred milliseconds of
//! busy time the figure is good to some percent.

use std::path::Path;

/// The counters of one device at one moment, or the difference between two moments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DiskStat {
    /// Reads completed.
    pub reads: u64,
    /// 512-byte sectors read.
    pub read_sectors: u64,
    /// Milliseconds the reads took, each from its start to its end (queue included).
    pub read_ms: u64,
    /// Writes completed.
    pub writes: u64,
    /// 512-byte sectors written.
    pub write_sectors: u64,
    /// Milliseconds the writes took (queue included).
    pub write_ms: u64,
    /// Milliseconds with at least one IO in flight (`io_ticks`).
    pub busy_ms: u64,
    /// Discards completed (kernels from 4.18; 0 before).
    pub discards: u64,
    /// Flushes completed (kernels from 5.5; 0 before).
    pub flushes: u64,
}

impl DiskStat {
    /// Reads and writes completed.
    pub fn ios(&self) -> u64 {
        self.reads + self.writes
    }

    /// Every request that kept the device busy: reads, writes, discards and flushes.
    pub fn requests(&self) -> u64 {
        self.reads + self.writes + self.discards + self.flushes
    }

    /// Bytes read and written.
    pub fn bytes(&self) -> u64 {
        (self.read_sectors + self.write_sectors) * 512
    }

    /// Mean milliseconds per read or write, its queue included (0 without IO).
    pub fn ms_per_io(&self) -> f64 {
        let n = self.ios();
        if n == 0 {
            0.0
        } else {
            (self.read_ms + self.write_ms) as f64 / n as f64
        }
    }

    /// What happened between `before` and `self` (counters that went backwards, as after a
    /// device was re-created, count as 0).
    #[must_use]
    pub fn since(&self, before: &DiskStat) -> DiskStat {
        DiskStat {
            reads: self.reads.saturating_sub(before.reads),
            read_sectors: self.read_sectors.saturating_sub(before.read_sectors),
            read_ms: self.read_ms.saturating_sub(before.read_ms),
            writes: self.writes.saturating_sub(before.writes),
            write_sectors: self.write_sectors.saturating_sub(before.write_sectors),
            write_ms: self.write_ms.saturating_sub(before.write_ms),
            busy_ms: self.busy_ms.saturating_sub(before.busy_ms),
            discards: self.discards.saturating_sub(before.discards),
            flushes: self.flushes.saturating_sub(before.flushes),
        }
    }
}

/// Parses the text of a `stat` file: 11 fields (kernels before 4.18), 15 (with discards) or
/// 17 (with flushes). `None` with fewer than 11 numbers.
pub fn parse(text: &str) -> Option<DiskStat> {
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|w| w.parse().ok())
        .collect::<Option<Vec<u64>>>()?;
    if v.len() < 11 {
        return None;
    }
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    Some(DiskStat {
        reads: at(0),
        read_sectors: at(2),
        read_ms: at(3),
        writes: at(4),
        write_sectors: at(6),
        write_ms: at(7),
        busy_ms: at(9),
        discards: at(11),
        flushes: at(15),
    })
}

/// The counters of the device with kernel name `name` (`sdb`, `vdc`, `dm-2`, `sda1`) now, or
/// `None` when /sys has no such device.
pub fn read(name: &str) -> Option<DiskStat> {
    read_at(Path::new("/sys"), name)
}

/// [`read`] under another /sys (tests).
pub fn read_at(sys: &Path, name: &str) -> Option<DiskStat> {
    let p = sys.join("class/block").join(name).join("stat");
    parse(&std::fs::read_to_string(p).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_layout_of_the_stat_file_parses() {
        // 6.1 (17 fields), as a virtio disk in the lab VM shows it.
        let s = parse(
            "    1520        0    24320     9120      310       12     4960      870        0     5230     9990       2        0   524288        4       7        1\n",
        )
        .unwrap();
        assert_eq!((s.reads, s.read_sectors, s.read_ms), (1520, 24320, 9120));
        assert_eq!((s.writes, s.write_sectors, s.write_ms), (310, 4960, 870));
        assert_eq!((s.busy_ms, s.discards, s.flushes), (5230, 2, 7));
        assert_eq!(s.ios(), 1830);
        assert_eq!(s.requests(), 1839);
        assert_eq!(s.bytes(), (24320 + 4960) * 512);
        assert!((s.ms_per_io() - 9990.0 / 1830.0).abs() < 1e-9);
        // 4.x (11 fields): no discards or flushes.
        let old = parse("10 0 80 5 0 0 0 0 0 6 5").unwrap();
        assert_eq!(
            (old.reads, old.busy_ms, old.discards, old.flushes),
            (10, 6, 0, 0)
        );
        assert!(parse("10 0 80 5").is_none());
        assert!(parse("10 0 80 5 0 0 0 0 0 x 5").is_none());
        assert_eq!(DiskStat::default().ms_per_io(), 0.0);
    }

    #[test]
    fn since_subtracts_and_never_goes_negative() {
        let a = parse("100 0 800 50 10 0 80 5 0 60 55").unwrap();
        let b = parse("160 0 1280 90 12 0 96 7 1 100 97").unwrap();
        let d = b.since(&a);
        assert_eq!(
            (d.reads, d.read_sectors, d.writes, d.busy_ms),
            (60, 480, 2, 40)
        );
        assert_eq!(a.since(&b), DiskStat::default());
    }

    #[test]
    fn reads_a_device_under_a_sys_tree() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("class/block/vdc");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("stat"), "3 0 24 1 0 0 0 0 0 2 1\n").unwrap();
        assert_eq!(read_at(dir.path(), "vdc").unwrap().reads, 3);
        assert!(read_at(dir.path(), "vdd").is_none());
    }
}
