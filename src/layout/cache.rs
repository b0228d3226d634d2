//! The SSD cache layer: its command lines, its build step, its teardown entry and
//! what a machine or VM needs for it. Three kinds:
//!
//! - **lvmcache**: the lab VG is extended onto the cache disks' PVs, a cache volume `cache` is
//!   made there only, and `lvconvert --type cache --cachevol cache --cachemode MODE` puts it in
//!   front of the data LV (which stays on the RAID's PV alone). Teardown is the VG's.
//! - **writecache**: the same through LVM with the cache volume deactivated and
//!   `lvconvert --type writecache --cachevol cache`
//!   (dm-writecache, write-back only). LVM rather than a bare `dmsetup` table because the VG
//!   then activates it again on its own after a power cut (`vgchange -ay`) and tears it down
//!   with the VG, as lvmcache.
//! - **bcache**: `make-bcache -B <array or LV> -C <cache disk>`, both registered through
//!   `/sys/fs/bcache/register` (no udev needed), `cache_mode` set in sysfs, the filesystem made
//!   on `/dev/bcacheN`. A `size` smaller than the cache disk puts a dm linear device of that
//!   size over it first. Teardown stops the bcache device and unregisters the cache set.
//!
//! With `fail = true` the cache disks sit under dm `linear` devices from the build on, and the
//! degrade step swaps an `error` table in under them ([`error_table`]) before it fails the
//! array member; what the cache did is read back and kept as a
//! [`CacheFailure`](crate::stack::cache::CacheFailure).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::LayoutError;
use super::cmd::Runner;
use super::layer::{self, GuestTool, VM_HINT};
use super::{fault, lvm};
use crate::stack::cache::{CacheKind, CacheMode, CacheOptions};

/// The cache volume's name in the lab VG (lvmcache).
pub const CACHE_LV: &str = "cache";

/// lvmcache: dm-cache through LVM.
pub struct Lvmcache;

/// bcache.
pub struct Bcache;

/// dm-writecache through LVM.
pub struct Writecache;

/// Whether the kernel has `kind`'s module (loaded, or loadable) and its tools are here.
pub(crate) fn detect(
    kind: CacheKind,
    loaded: &str,
    module: &str,
    tools: &[GuestTool],
) -> Result<(), String> {
    if !Path::new(loaded).exists() && !layer::kernel_module(module) {
        return Err(format!(
            "the kernel has no {} module ({}); {VM_HINT}",
            kind.name(),
            module.trim_start_matches('/')
        ));
    }
    for t in tools {
        layer::tools(&[t.name], t.package)?;
    }
    Ok(())
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_string()).collect()
}

/// The commands that put a cache volume on `pvs` in front of the lab LV of `vg`: PV labels,
/// `vgextend`, the cache volume on those PVs only (`size` bytes, or all their space), then
/// `lvconvert` to `kind` (lvmcache: `--type cache` in `mode`; writecache: `--type writecache`,
/// which has no mode to give).
pub fn lvm_cache_argvs(
    kind: CacheKind,
    vg: &str,
    pvs: &[PathBuf],
    size: Option<u64>,
    mode: CacheMode,
) -> Vec<Vec<String>> {
    let pvs: Vec<String> = pvs
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let mut out = Vec::new();
    for p in &pvs {
        out.push(strings(&["pvcreate", "--yes", "--force", "--force", p]));
    }
    let mut extend = strings(&["vgextend", "--yes", vg]);
    extend.extend(pvs.iter().cloned());
    out.push(extend);
    let mut create = strings(&[
        "lvcreate",
        "--yes",
        "--wipesignatures",
        "y",
        "--type",
        "linear",
    ]);
    match size {
        Some(b) => create.extend(["--size".to_string(), format!("{b}b")]),
        None => create.extend(strings(&["--extents", "100%FREE"])),
    }
    create.extend(strings(&["--name", CACHE_LV, vg]));
    create.extend(pvs.iter().cloned());
    out.push(create);
    if kind == CacheKind::Writecache {
        // lvm attaches a writecache only from an inactive cache volume (`LV VG/cache must be
        // inactive to attach`, lvm2 2.03.16 in the VM); lvcreate activated it to wipe it.
        out.push(strings(&[
            "lvchange",
            "--yes",
            "--activate",
            "n",
            &format!("{vg}/{CACHE_LV}"),
        ]));
    }
    let mut convert = strings(&["lvconvert", "--yes", "--type"]);
    if kind == CacheKind::Writecache {
        convert.extend(strings(&["writecache", "--cachevol", CACHE_LV]));
    } else {
        convert.extend(strings(&[
            "cache",
            "--cachevol",
            CACHE_LV,
            "--cachemode",
            mode.name(),
        ]));
    }
    convert.push(format!("{vg}/{}", lvm::LV_NAME));
    out.push(convert);
    out
}

/// What dm-writecache's status line says (`0 N writecache ERROR TOTAL FREE WRITEBACK ...`):
/// the error flag (non-zero once the cache met an IO error), the cache's blocks, the free
/// ones and those under writeback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WritecacheStatus {
    /// Non-zero: the cache met an IO error and fails every IO from then on.
    pub error: i64,
    /// Blocks of the cache.
    pub blocks: u64,
    /// Free blocks.
    pub free: u64,
    /// Blocks being written back.
    pub writeback: u64,
}

impl WritecacheStatus {
    /// Parses one `dmsetup status` line of a writecache target; `None` for another target.
    pub fn parse(line: &str) -> Option<WritecacheStatus> {
        let f: Vec<&str> = line.split_whitespace().collect();
        let at = f.iter().position(|w| *w == "writecache")?;
        let n = |k: usize| f.get(at + k)?.parse::<u64>().ok();
        Some(WritecacheStatus {
            error: f.get(at + 1)?.parse().ok()?,
            blocks: n(2)?,
            free: n(3)?,
            writeback: n(4)?,
        })
    }

    /// Blocks holding data the array may not have yet (in use: not free).
    pub fn used(&self) -> u64 {
        self.blocks.saturating_sub(self.free)
    }
}

/// dm-writecache's block size in bytes from its `dmsetup table` line (`0 N writecache s
/// ORIGIN CACHE BLOCK_SIZE ...`); `None` for another target.
pub fn writecache_block_size(table: &str) -> Option<u64> {
    let f: Vec<&str> = table.split_whitespace().collect();
    let at = f.iter().position(|w| *w == "writecache")?;
    f.get(at + 4)?.parse().ok()
}

/// The dm name of cache disk `k` of layout `index` in lab `lab`, when it is put under dm
/// (bcache's `size`, or `fail`).
pub fn dm_name(lab: &str, index: usize, k: usize) -> String {
    if k == 0 {
        format!("iolab-{lab}-{index}-cache")
    } else {
        format!("iolab-{lab}-{index}-cache{k}")
    }
}

/// Whether the cache disks go under dm `linear` devices at build: bcache with a `size` (the
/// device is that size), and every cache that the lab fails (the degrade step swaps the table).
pub fn dm_wrapped(c: &CacheOptions) -> bool {
    c.fail || (c.kind == CacheKind::Bcache && c.size.is_some())
}

/// Where lvmcache's dm device starts on its cache disk, in sectors (1MiB): a PV label at the
/// start of both the dm device and the disk under it would be the same PV twice to LVM
/// (`Cannot use device ... with duplicates`, measured in the VM); past the disk's first
/// sectors LVM finds no label on the disk itself.
pub const LVM_DM_OFFSET: u64 = 2048;

/// Sectors of the dm device over a cache disk of `disk_bytes` bytes: bcache's `size` when
/// given, else the whole disk (lvmcache: past [`LVM_DM_OFFSET`]).
pub fn dm_sectors(c: &CacheOptions, disk_bytes: u64) -> u64 {
    match (c.kind, c.size) {
        (CacheKind::Bcache, Some(s)) => s / 512,
        (CacheKind::Bcache, None) => disk_bytes / 512,
        (CacheKind::Lvmcache | CacheKind::Writecache, _) => {
            (disk_bytes / 512).saturating_sub(LVM_DM_OFFSET)
        }
    }
}

/// The `linear` table of the dm device over cache disk `dev` of `disk_bytes` bytes.
pub fn dm_table(c: &CacheOptions, dev: &Path, disk_bytes: u64) -> String {
    let at = if c.kind.is_lvm() { LVM_DM_OFFSET } else { 0 };
    format!(
        "0 {} linear {} {at}",
        dm_sectors(c, disk_bytes),
        dev.display()
    )
}

/// The table that fails every IO to a cache device of `sectors` sectors: the dead SSD.
pub fn error_table(sectors: u64) -> String {
    format!("0 {sectors} error")
}

/// Parses bcache's human-readable sizes (`dirty_data`: `0.0k`, `1.5M`, `12k`, `3G`) to bytes.
pub fn parse_bcache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, unit) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&s[..i], c.to_ascii_lowercase()),
        _ => (s, ' '),
    };
    let mult: f64 = match unit {
        ' ' => 1.0,
        'k' => 1024.0,
        'm' => 1024.0 * 1024.0,
        'g' => 1024.0 * 1024.0 * 1024.0,
        't' => 1024.0f64.powi(4),
        _ => return None,
    };
    let n: f64 = num.trim().parse().ok()?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Some((n * mult).round() as u64)
}

/// lvm's command lines that take a failed cache volume off the lab LV of `vg` and drop its
/// missing PVs, in the order tried: `--uncache --force` (removes the cache LV), else
/// `--splitcache --force` (keeps it aside), then `vgreduce --removemissing --force` (through
/// `lvm`, which the guest has under no other name for it).
pub fn lvmcache_drop_argvs(vg: &str) -> [Vec<String>; 3] {
    let lv = format!("{vg}/{}", lvm::LV_NAME);
    [
        strings(&["lvconvert", "--yes", "--uncache", "--force", &lv]),
        strings(&["lvconvert", "--yes", "--splitcache", "--force", &lv]),
        strings(&["lvm", "vgreduce", "--yes", "--removemissing", "--force", vg]),
    ]
}

/// The bucket size for a bcache cache of `bytes` (0: unknown): make-bcache's 512KiB default,
/// smaller on small caches so there are at least 2048 buckets (the kernel refuses a cache set
/// with fewer than about 1024: `cache_alloc(): cache device is too small`, measured in the VM on
/// 256MiB), and never under 8KiB.
pub fn bucket_bytes(bytes: u64) -> u64 {
    const MAX: u64 = 512 << 10;
    if bytes == 0 {
        return MAX;
    }
    let fit = (bytes / 2048).max(1);
    let pow = 1u64 << fit.ilog2();
    pow.clamp(8 << 10, MAX)
}

/// `make-bcache` formatting `backing` and `cache` (`bucket` bytes per bucket) as one set with
/// the cache set UUID `cset`; the backing device's data starts `data_offset` sectors in when
/// given (`alignment = "stripe"`: a multiple of the array's stripe), else at make-bcache's 8KiB.
pub fn make_bcache_argv(
    backing: &Path,
    cache: &Path,
    bucket: u64,
    cset: &str,
    data_offset: Option<u64>,
) -> Vec<String> {
    let mut argv: Vec<String> = vec![
        "make-bcache".into(),
        "--bucket".into(),
        format!("{}k", bucket >> 10),
    ];
    if let Some(o) = data_offset {
        argv.extend(["--data-offset".into(), o.to_string()]);
    }
    argv.extend([
        "-B".into(),
        backing.to_string_lossy().into_owned(),
        "-C".into(),
        cache.to_string_lossy().into_owned(),
        "--cset-uuid".into(),
        cset.into(),
    ]);
    argv
}

/// bcache's control file that registers a formatted device with the kernel.
pub const REGISTER: &str = "/sys/fs/bcache/register";

/// The sysfs directory of a bcache device (`bcache0`): `stop`, `cache_mode`, `state`...
pub fn sysfs(dev_name: &str) -> PathBuf {
    Path::new("/sys/block").join(dev_name).join("bcache")
}

/// The bcache device stacked on `backing` (`bcache0`), found through the backing device's
/// holders in sysfs (a dry run says `bcache0`).
pub fn bcache_of(runner: &Runner, backing: &Path) -> Option<String> {
    if runner.is_dry_run() {
        return Some("bcache0".into());
    }
    let k = fault::kernel_name(backing)?;
    let holders = std::fs::read_dir(Path::new("/sys/class/block").join(&k).join("holders")).ok()?;
    holders
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("bcache"))
}

/// A fresh cache set UUID from the kernel (a dry run shows a fixed one).
pub fn new_uuid(runner: &Runner) -> String {
    const FIXED: &str = "00000000-0000-4000-8000-000000000000";
    if runner.is_dry_run() {
        return FIXED.into();
    }
    crate::system::read_trim("/proc/sys/kernel/random/uuid").unwrap_or_else(|| FIXED.into())
}

/// Waits up to `limit` for `ok`, checking every 50 ms; whether it came.
pub(super) fn wait_until(limit: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while !ok() {
        if t.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// Formats and registers a bcache device on `backing` with `cache` as its cache set (the
/// backing device's data `data_offset` sectors in, when given: [`make_bcache_argv`]), sets the
/// cache mode; returns `/dev/bcacheN`. The caller recorded it in the state file first
/// (`Owned::Bcache`).
pub fn create_bcache(
    runner: &Runner,
    backing: &Path,
    cache: &Path,
    cset: &str,
    mode: CacheMode,
    data_offset: Option<u64>,
) -> Result<PathBuf, LayoutError> {
    let bytes = if runner.is_dry_run() {
        0
    } else {
        crate::system::BlockDevice::from_path(cache).map_or(0, |b| b.size_bytes)
    };
    runner.run(&make_bcache_argv(
        backing,
        cache,
        bucket_bytes(bytes),
        cset,
        data_offset,
    ))?;
    for d in [backing, cache] {
        runner.write_file(Path::new(REGISTER), &d.to_string_lossy())?;
    }
    let dry = runner.is_dry_run();
    let mut name = None;
    if !wait_until(Duration::from_secs(10), || {
        name = bcache_of(runner, backing);
        name.is_some()
    }) {
        return Err(LayoutError::Unexpected(format!(
            "bcache made no device over {} after registering it",
            backing.display()
        )));
    }
    let name = name.unwrap_or_default();
    let sys = sysfs(&name);
    // make-bcache -B -C with one set attaches them on registration; say so if it did not.
    if !dry && !sys.join("cache").exists() {
        runner.write_file(&sys.join("attach"), cset)?;
    }
    runner.write_file(&sys.join("cache_mode"), mode.name())?;
    let dev = Path::new("/dev").join(&name);
    // devtmpfs makes the node without udev; give it a moment.
    if !dry && !wait_until(Duration::from_secs(5), || dev.exists()) {
        return Err(LayoutError::Unexpected(format!(
            "{} did not appear after bcache registered it",
            dev.display()
        )));
    }
    Ok(dev)
}

/// Stops the bcache device over `backing` and unregisters cache set `cset`, waiting for both
/// to go; unless `stale`, wipes the bcache superblocks off `backing` and `caches`.
pub fn remove_bcache(
    runner: &Runner,
    backing: &Path,
    caches: &[PathBuf],
    cset: &str,
    stale: bool,
) -> Result<(), LayoutError> {
    let dry = runner.is_dry_run();
    if let Some(name) = bcache_of(runner, backing) {
        runner.write_file(&sysfs(&name).join("stop"), "1")?;
        let gone = dry
            || wait_until(Duration::from_secs(15), || {
                !Path::new("/sys/block").join(&name).exists()
            });
        if !gone {
            return Err(LayoutError::Unexpected(format!(
                "bcache device {name} did not stop"
            )));
        }
    }
    let set = Path::new("/sys/fs/bcache").join(cset);
    if dry || set.exists() {
        runner.write_file(&set.join("unregister"), "1")?;
        if !dry && !wait_until(Duration::from_secs(15), || !set.exists()) {
            return Err(LayoutError::Unexpected(format!(
                "bcache cache set {cset} did not unregister"
            )));
        }
    }
    if !stale {
        for d in std::iter::once(&backing.to_path_buf()).chain(caches) {
            if dry || d.exists() {
                // The superblock is what a later scan would register again; a device gone
                // already has none to wipe.
                let _ = runner.run(&["wipefs", "--all", "--quiet", &d.to_string_lossy()]);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lvmcache_command_lines() {
        let a = lvm_cache_argvs(
            CacheKind::Lvmcache,
            "iolab_ab_0",
            &[PathBuf::from("/dev/vde")],
            Some(256 << 20),
            CacheMode::Writethrough,
        );
        let lines: Vec<String> = a.iter().map(|v| v.join(" ")).collect();
        assert_eq!(
            lines,
            vec![
                "pvcreate --yes --force --force /dev/vde",
                "vgextend --yes iolab_ab_0 /dev/vde",
                "lvcreate --yes --wipesignatures y --type linear --size 268435456b --name cache iolab_ab_0 /dev/vde",
                "lvconvert --yes --type cache --cachevol cache --cachemode writethrough iolab_ab_0/lab",
            ]
        );
    }

    /// dm-writecache goes on through LVM like lvmcache, with its own type and no mode.
    #[test]
    fn writecache_command_lines_and_status() {
        let a = lvm_cache_argvs(
            CacheKind::Writecache,
            "iolab_ab_0",
            &[PathBuf::from("/dev/vde")],
            Some(64 << 20),
            CacheMode::Writeback,
        );
        assert_eq!(
            a.last().unwrap().join(" "),
            "lvconvert --yes --type writecache --cachevol cache iolab_ab_0/lab"
        );
        assert_eq!(a.len(), 5);
        assert_eq!(
            a[3].join(" "),
            "lvchange --yes --activate n iolab_ab_0/cache"
        );
        // Measured in the VM (kernel 6.1): error, blocks, free, under writeback, statistics.
        let s =
            WritecacheStatus::parse("0 1040384 writecache 0 15864 3108 0 10 0 12754 0 0 0 0 0 0 0")
                .unwrap();
        assert_eq!(
            (s.error, s.blocks, s.free, s.writeback),
            (0, 15864, 3108, 0)
        );
        assert_eq!(s.used(), 12756);
        assert_eq!(WritecacheStatus::parse("0 2048 linear 7:1 0"), None);
        let failed = WritecacheStatus::parse("0 1040384 writecache -5 15864 3108 0").unwrap();
        assert_eq!(failed.error, -5);
        assert_eq!(
            writecache_block_size("0 1040384 writecache s 9:100 253:1 4096 0"),
            Some(4096)
        );
        assert_eq!(writecache_block_size("0 2048 linear 7:1 0"), None);
    }

    /// A 256MiB bcache cache with make-bcache's default buckets was refused by the
    /// kernel (too few buckets); small caches get smaller buckets.
    #[test]
    fn small_caches_get_enough_buckets() {
        assert_eq!(bucket_bytes(256 << 20), 128 << 10);
        assert_eq!(bucket_bytes(32 << 20), 16 << 10);
        assert_eq!(bucket_bytes(64 << 30), 512 << 10);
        assert_eq!(bucket_bytes(0), 512 << 10);
        assert!((256u64 << 20) / bucket_bytes(256 << 20) >= 2048);
    }

    #[test]
    fn cache_failure_helpers() {
        assert_eq!(parse_bcache_size("0.0k"), Some(0));
        assert_eq!(parse_bcache_size("1.5M"), Some(1_572_864));
        assert_eq!(parse_bcache_size("512"), Some(512));
        assert_eq!(parse_bcache_size("x"), None);
        assert_eq!(error_table(2048), "0 2048 error");
        assert_eq!(dm_name("ab", 0, 0), "iolab-ab-0-cache");
        assert_eq!(dm_name("ab", 0, 2), "iolab-ab-0-cache2");
        let mut c = CacheOptions {
            kind: CacheKind::Lvmcache,
            mode: CacheMode::Writethrough,
            disks: 1,
            size: Some(64 << 20),
            fail: false,
        };
        assert!(!dm_wrapped(&c), "lvmcache sizes its LV, not a dm device");
        assert_eq!(dm_sectors(&c, 256 << 20), (255 << 20) / 512);
        assert_eq!(
            dm_table(&c, Path::new("/dev/vde"), 256 << 20),
            "0 522240 linear /dev/vde 2048"
        );
        c.fail = true;
        assert!(dm_wrapped(&c));
        c.kind = CacheKind::Bcache;
        assert_eq!(dm_sectors(&c, 256 << 20), (64 << 20) / 512);
        assert_eq!(
            dm_table(&c, Path::new("/dev/vde"), 256 << 20),
            "0 131072 linear /dev/vde 0"
        );
    }

    #[test]
    fn bcache_command_lines() {
        let r = Runner::recording();
        let dev = create_bcache(
            &r,
            Path::new("/dev/md100"),
            Path::new("/dev/vde"),
            "u-1",
            CacheMode::Writeback,
            None,
        )
        .unwrap();
        assert_eq!(dev, PathBuf::from("/dev/bcache0"));
        remove_bcache(
            &r,
            Path::new("/dev/md100"),
            &["/dev/vde".into()],
            "u-1",
            false,
        )
        .unwrap();
        assert_eq!(
            r.log(),
            vec![
                "make-bcache --bucket 512k -B /dev/md100 -C /dev/vde --cset-uuid u-1",
                "echo /dev/md100 > /sys/fs/bcache/register",
                "echo /dev/vde > /sys/fs/bcache/register",
                "echo writeback > /sys/block/bcache0/bcache/cache_mode",
                "echo 1 > /sys/block/bcache0/bcache/stop",
                "echo 1 > /sys/fs/bcache/u-1/unregister",
                "wipefs --all --quiet /dev/md100",
                "wipefs --all --quiet /dev/vde",
            ]
        );
    }
}
