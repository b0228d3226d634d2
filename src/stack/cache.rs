//! An SSD cache in front of the RAID: `lvmcache` (dm-cache under an LVM layer, the
//! cache LV on the cache disks' PVs), `writecache` (dm-writecache through LVM the same way: a
//! write-back cache only, which caches no reads) or `bcache` (between the RAID, or its LV, and
//! the filesystem). Plain data: the spec parser makes it, `layout::cache` builds it, the record,
//! planner and reports read it. The cache disks come after the members, spares and md's write
//! journal in the lab's disk list.

use serde::{Deserialize, Serialize};

/// Which cache the stack has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    /// dm-cache through LVM: the data LV on the RAID's PV, a cache volume on the cache disks'
    /// PVs, joined by `lvconvert --type cache --cachevol`.
    Lvmcache,
    /// bcache: the RAID (or its LV) as backing device, the cache disk as cache set.
    Bcache,
    /// dm-writecache through LVM: the data LV on the RAID's PV, a cache volume on the cache
    /// disks' PVs, joined by `lvconvert --type writecache --cachevol`. Write-back only: it
    /// holds writes until it writes them back, and reads come from it only while it holds them.
    Writecache,
}

impl CacheKind {
    /// Every kind, for error messages.
    pub const ALL: [CacheKind; 3] = [
        CacheKind::Lvmcache,
        CacheKind::Bcache,
        CacheKind::Writecache,
    ];

    /// Parses `lvmcache`, `bcache`, `writecache`.
    pub fn parse(s: &str) -> Option<CacheKind> {
        Self::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s.trim()))
    }

    /// The name the spec and the reports use.
    pub fn name(self) -> &'static str {
        match self {
            CacheKind::Lvmcache => "lvmcache",
            CacheKind::Bcache => "bcache",
            CacheKind::Writecache => "writecache",
        }
    }

    /// Whether the kind is an LVM layer (its cache volume lives in the lab VG, so the stack
    /// has `lvm = true`).
    pub fn is_lvm(self) -> bool {
        matches!(self, CacheKind::Lvmcache | CacheKind::Writecache)
    }

    /// The modes the kind has: dm-writecache writes back only.
    pub fn modes(self) -> &'static [CacheMode] {
        match self {
            CacheKind::Writecache => &[CacheMode::Writeback],
            CacheKind::Lvmcache | CacheKind::Bcache => &CacheMode::ALL,
        }
    }

    /// The mode a spec without `mode` gets: writethrough (nothing to lose) where the kind has
    /// it, writeback for dm-writecache.
    pub fn default_mode(self) -> CacheMode {
        self.modes()[0]
    }
}

/// When a write reaches the RAID under the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    /// Every write goes to the cache and the RAID before it completes: losing the cache device
    /// loses nothing.
    Writethrough,
    /// Writes complete once in the cache and reach the RAID later: losing the cache device
    /// loses what was not written back yet.
    Writeback,
}

impl CacheMode {
    /// Every mode, for error messages.
    pub const ALL: [CacheMode; 2] = [CacheMode::Writethrough, CacheMode::Writeback];

    /// Parses `writethrough`, `writeback`.
    pub fn parse(s: &str) -> Option<CacheMode> {
        Self::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s.trim()))
    }

    /// The word lvconvert's `--cachemode` and bcache's `cache_mode` take.
    pub fn name(self) -> &'static str {
        match self {
            CacheMode::Writethrough => "writethrough",
            CacheMode::Writeback => "writeback",
        }
    }

    /// Whether losing the cache device may lose acknowledged writes.
    pub fn may_lose_data(self) -> bool {
        self == CacheMode::Writeback
    }
}

/// The cache layer of a stack: `cache = { kind, disks, mode, size }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheOptions {
    /// lvmcache, bcache or writecache.
    pub kind: CacheKind,
    /// writethrough or writeback.
    pub mode: CacheMode,
    /// Disks holding the cache, taken after the members, spares and journal disk.
    pub disks: usize,
    /// The cache's size in bytes (lvmcache: the cache LV; bcache: a dm linear device of this
    /// size over the cache disk); `None`: all of the cache disks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// `fail = true`: the lab's degrade step fails the cache device (a dm `error` table swapped
    /// in under it) before the array member, and observes what the cache does. Left out of
    /// the stored record when false, so records without it read and write unchanged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fail: bool,
}

impl CacheOptions {
    /// Bytes the cache holds on cache disks of `disk_size` bytes.
    pub fn bytes(&self, disk_size: u64) -> u64 {
        let all = disk_size.saturating_mul(self.disks as u64);
        self.size.map_or(all, |s| s.min(all))
    }

    /// `lvmcache writethrough 256MiB (1 disk)`; `(1 disk, failed)` when the lab fails it.
    pub fn describe(&self) -> String {
        let mut s = format!("{} {}", self.kind.name(), self.mode.name());
        if let Some(b) = self.size {
            s.push(' ');
            s.push_str(&crate::units::format_bytes(b));
        }
        s.push_str(&format!(
            " ({} disk{}{})",
            self.disks,
            if self.disks == 1 { "" } else { "s" },
            if self.fail { ", failed" } else { "" }
        ));
        s
    }
}

/// What failing the cache device did: what the cache held at that moment, what the
/// kernel did on its own, what the lab did to get the filesystem back, and whether it came
/// back. The data set's verdict that follows says whether anything was lost. Plain data here
/// because `layout::cache` observes it and the lab's report and the stored layout record
/// (`sample::layout_record`) keep it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheFailure {
    /// lvmcache, bcache or writecache.
    pub kind: CacheKind,
    /// writethrough or writeback.
    pub mode: CacheMode,
    /// The dm devices whose table became `error`.
    pub devices: Vec<String>,
    /// bcache: `dirty_data` at the moment of the failure, bytes (what writeback had not yet
    /// written to the array); writecache: the blocks in use (total less free, from its dm
    /// status) times its block size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty_bytes: Option<u64>,
    /// The cache's state just before: bcache's `state` (`clean`, `dirty`), dm-cache's status.
    pub state_before: String,
    /// What the kernel did on its own after the failure, in words.
    pub kernel: String,
    /// What the lab did, one line each (`lvconvert --uncache --force: ok`).
    pub actions: Vec<String>,
    /// The state after the lab's actions (bcache's `state`, `no cache`...).
    pub state_after: String,
    /// Whether the filesystem was mounted and usable afterwards, as probed (a file written,
    /// flushed and removed); `None` when nothing was observed: a dry run builds nothing, so
    /// it must not claim the filesystem came back (nor that it did not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usable: Option<bool>,
}

impl CacheFailure {
    /// One line for the reports: `bcache writeback cache device failed (2.1MiB dirty): ...`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} {} cache device failed",
            self.kind.name(),
            self.mode.name()
        );
        if let Some(d) = self.dirty_bytes {
            s.push_str(&format!(" ({} dirty)", crate::units::format_bytes(d)));
        }
        s.push_str(&format!(
            ": {}; then {}; {}",
            self.kernel,
            if self.actions.is_empty() {
                "nothing to do".to_string()
            } else {
                self.actions.join(", ")
            },
            match self.usable {
                Some(true) => "filesystem usable",
                Some(false) => "filesystem NOT usable",
                None => "filesystem not observed",
            }
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_describes() {
        assert_eq!(CacheKind::parse("LVMcache"), Some(CacheKind::Lvmcache));
        assert_eq!(CacheKind::parse("dm-cache"), None);
        assert_eq!(CacheKind::parse("writecache"), Some(CacheKind::Writecache));
        assert!(CacheKind::Writecache.is_lvm() && !CacheKind::Bcache.is_lvm());
        assert_eq!(CacheKind::Writecache.default_mode(), CacheMode::Writeback);
        assert_eq!(CacheKind::Lvmcache.default_mode(), CacheMode::Writethrough);
        assert_eq!(CacheMode::parse("writeback"), Some(CacheMode::Writeback));
        let c = CacheOptions {
            kind: CacheKind::Bcache,
            mode: CacheMode::Writeback,
            disks: 1,
            size: None,
            fail: false,
        };
        assert_eq!(c.describe(), "bcache writeback (1 disk)");
        assert_eq!(c.bytes(1 << 30), 1 << 30);
        assert!(c.mode.may_lose_data());
        let json = serde_json::to_string(&c).unwrap();
        assert!(!json.contains("fail"), "{json}");
        let failing = CacheOptions { fail: true, ..c };
        assert_eq!(failing.describe(), "bcache writeback (1 disk, failed)");
        let back: CacheOptions =
            serde_json::from_str(&serde_json::to_string(&failing).unwrap()).unwrap();
        assert_eq!(back, failing);
    }

    #[test]
    fn a_failure_describes_itself() {
        let f = CacheFailure {
            kind: CacheKind::Bcache,
            mode: CacheMode::Writeback,
            devices: vec!["iolab-ab-0-cache".into()],
            dirty_bytes: Some(2 << 20),
            state_before: "dirty".into(),
            kernel: "cache set unregistered".into(),
            actions: vec![],
            state_after: "no cache".into(),
            usable: Some(true),
        };
        assert_eq!(
            f.describe(),
            "bcache writeback cache device failed (2MiB dirty): cache set unregistered; then nothing to do; filesystem usable"
        );
        let lost = CacheFailure {
            usable: Some(false),
            ..f.clone()
        };
        assert!(lost.describe().ends_with("; filesystem NOT usable"));
        // A dry run observed nothing: it says so, and its JSON has no `usable` to misread.
        let dry = CacheFailure {
            usable: None,
            ..f.clone()
        };
        assert!(
            dry.describe().ends_with("; filesystem not observed"),
            "{}",
            dry.describe()
        );
        let json = serde_json::to_value(&dry).unwrap();
        assert!(json.get("usable").is_none(), "{json}");
        // Records stored before `usable` could be unobserved read back as they were.
        let mut old = serde_json::to_value(&f).unwrap();
        assert_eq!(old["usable"], true);
        old["usable"] = serde_json::Value::Bool(false);
        let back: CacheFailure = serde_json::from_value(old).unwrap();
        assert_eq!(back.usable, Some(false));
    }
}
