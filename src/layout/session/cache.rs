//! The session's steps for the cache layer: what [`super::super::cache`] builds,
//! each object recorded in the state file before it exists, and failing the cache device in
//! the degrade step (`cache.fail`): the dm `error` table swapped in under it, what the kernel
//! did read back, and the filesystem brought back over the array alone where it can be.

use super::super::cache::{Bcache, Lvmcache, Writecache, detect};
use super::super::layer::{self, GuestTool, VM_HINT};
use crate::stack::Layer;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::super::LayoutError;
use super::super::cache;
use super::super::state::{Owned, is_mount_point};
use super::super::{fault, fs, lvm};
use super::steps::{LayerSteps, LayoutDisks, StorageLayer, Volume};
use super::{Built, OnDisk, Session};
use crate::stack::cache::{CacheFailure, CacheKind, CacheOptions};

/// How long the lab gives bcache to give up a failed cache set on its own before it
/// unregisters the set itself (what an administrator would do with a dead SSD).
const BCACHE_NOTICE: Duration = Duration::from_secs(20);

/// An SSD cache with these options (its failure, `cache.fail`, is the degrade's first step:
/// [`Session::fail_cache`]).
pub(super) struct CacheSteps<'a>(pub &'a CacheOptions);

impl LayerSteps for CacheSteps<'_> {
    fn name(&self) -> &'static str {
        self.0.kind.name()
    }

    fn fail_first(
        &self,
        s: &mut Session,
        b: &mut Built,
    ) -> Result<Option<CacheFailure>, LayoutError> {
        s.fail_cache(b)
    }

    fn build(
        &self,
        s: &mut Session,
        on: &LayoutDisks<'_>,
        vol: &mut Volume,
    ) -> Result<(), LayoutError> {
        // `alignment = "stripe"`: bcache's data starts on a whole stripe, not at its own 8KiB
        // (lvmcache and writecache map the LV onto its origin 1:1 and move nothing).
        let data_offset = match crate::stack::align::Geometry::of(on.stack) {
            Some(g) if on.stack.alignment == crate::stack::Alignment::Stripe => {
                Some(super::super::align::bcache_data_offset(&g))
            }
            _ => None,
        };
        vol.base = s.cache_layer(
            on.index,
            self.0,
            &vol.base,
            super::lvm::volume_group(vol),
            (on.layer_disks, on.member_size),
            data_offset,
        )?;
        Ok(())
    }

    /// writecache: the LVM layer's `vgchange -ay` activated the cached LV with its cache
    /// volume (dm-writecache replays its own metadata); the cache disks' PVs join the recorded
    /// VG so teardown removes their labels too. The other kinds not yet: the spec refuses a
    /// power cut under them (`layout[NAME].powercut`).
    fn assemble(
        &self,
        s: &mut Session,
        d: &OnDisk<'_>,
        vol: &mut Volume,
    ) -> Result<(), LayoutError> {
        if self.0.kind != CacheKind::Writecache {
            return Err(LayoutError::Refused(format!(
                "{}: a {} cache cannot be assembled after a power cut yet",
                d.name,
                self.0.kind.name()
            )));
        }
        let vg = super::lvm::volume_group(vol)
            .map(str::to_string)
            .ok_or_else(|| {
                LayoutError::Unexpected(format!("{}: writecache without its volume group", d.name))
            })?;
        let mut argv: Vec<String> = ["pvs", "--noheadings", "-o", "pv_name,vg_name"]
            .iter()
            .map(|a| (*a).to_string())
            .collect();
        argv.splice(1..1, lvm::no_udev_args(&s.runner));
        let listed = s.runner.run(&argv)?.stdout;
        let pvs: Vec<PathBuf> = listed
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let (pv, in_vg) = (w.next()?, w.next()?);
                (in_vg == vg).then(|| PathBuf::from(pv))
            })
            .collect();
        s.edit_vg_pvs(&vg, |all| {
            for p in pvs {
                if !all.contains(&p) {
                    all.push(p);
                }
            }
        })
    }
}

impl Session {
    /// The cache layer over `base` (the array, its LV, or the one disk) on `disks` (of
    /// `disk_bytes` each, for a dry run): returns the device the filesystem goes on. lvmcache
    /// converts the lab LV of `vg` in place; bcache's data starts `data_offset` sectors into
    /// `base` when given.
    fn cache_layer(
        &mut self,
        index: usize,
        c: &CacheOptions,
        base: &Path,
        vg: Option<&str>,
        (disks, disk_bytes): (&[PathBuf], u64),
        data_offset: Option<u64>,
    ) -> Result<PathBuf, LayoutError> {
        let disks = self.wrap_cache_disks(index, c, disks, disk_bytes)?;
        match c.kind {
            CacheKind::Lvmcache | CacheKind::Writecache => {
                let vg = vg.ok_or_else(|| {
                    LayoutError::Unexpected(format!(
                        "{} needs the LVM layer under it",
                        c.kind.name()
                    ))
                })?;
                self.extend_vg(vg, &disks)?;
                let extra = lvm::no_udev_args(&self.runner);
                for mut argv in cache::lvm_cache_argvs(c.kind, vg, &disks, c.size, c.mode) {
                    argv.splice(1..1, extra.iter().cloned());
                    self.runner.run(&argv)?;
                }
                Ok(base.to_path_buf())
            }
            CacheKind::Bcache => {
                let cache = disks
                    .first()
                    .cloned()
                    .ok_or_else(|| LayoutError::Unexpected("bcache needs a cache disk".into()))?;
                let cset = cache::new_uuid(&self.runner);
                self.push(Owned::Bcache {
                    backing: base.to_path_buf(),
                    caches: vec![cache.clone()],
                    cset: cset.clone(),
                })?;
                cache::create_bcache(&self.runner, base, &cache, &cset, c.mode, data_offset)
            }
        }
    }

    /// Puts the cache disks under dm `linear` devices where [`cache::dm_wrapped`] says so
    /// (bcache's `size`, a cache the lab fails), each recorded before it is made; returns
    /// the devices the cache goes on.
    fn wrap_cache_disks(
        &mut self,
        index: usize,
        c: &CacheOptions,
        disks: &[PathBuf],
        disk_bytes: u64,
    ) -> Result<Vec<PathBuf>, LayoutError> {
        if !cache::dm_wrapped(c) {
            return Ok(disks.to_vec());
        }
        let mut out = Vec::new();
        for (k, d) in disks.iter().enumerate() {
            let name = cache::dm_name(&self.lab_id, index, k);
            self.push(Owned::Dm { name: name.clone() })?;
            let table = cache::dm_table(c, d, self.bytes_of(d, disk_bytes));
            out.push(fault::create(&self.runner, &name, &table)?);
        }
        Ok(out)
    }

    /// The size of `dev` in bytes; `fallback` on a dry run or when it cannot be read.
    fn bytes_of(&self, dev: &Path, fallback: u64) -> u64 {
        if self.runner.is_dry_run() {
            return fallback;
        }
        crate::system::BlockDevice::from_path(dev).map_or(fallback, |b| b.size_bytes)
    }

    /// Adds `pvs` to the recorded VG `vg` before they become its PVs, so teardown and
    /// `--cleanup` remove their labels too.
    fn extend_vg(&mut self, vg: &str, pvs: &[PathBuf]) -> Result<(), LayoutError> {
        self.edit_vg_pvs(vg, |all| all.extend(pvs.iter().cloned()))
    }

    /// Changes the PVs recorded for VG `vg`.
    fn edit_vg_pvs(
        &mut self,
        vg: &str,
        edit: impl FnOnce(&mut Vec<PathBuf>),
    ) -> Result<(), LayoutError> {
        let found = self
            .objects
            .iter()
            .position(|o| matches!(o, Owned::Vg { name, .. } if name == vg));
        let i = found
            .ok_or_else(|| LayoutError::Unexpected(format!("volume group {vg} is not recorded")))?;
        if let Owned::Vg { name, pvs: old } = &self.objects[i] {
            let mut all = old.clone();
            edit(&mut all);
            let o = Owned::Vg {
                name: name.clone(),
                pvs: all,
            };
            self.set(i, o)?;
        }
        Ok(())
    }

    /// Fails the cache device of `b` when its spec says `fail = true` (the degrade step's first
    /// act): swaps an `error` table in under every cache disk, watches what the cache does,
    /// and gets the filesystem going over the array alone where it can. `None` without it.
    pub(super) fn fail_cache(
        &mut self,
        b: &mut Built,
    ) -> Result<Option<CacheFailure>, LayoutError> {
        let Some(c) = b.stack.cache().filter(|c| c.fail).cloned() else {
            return Ok(None);
        };
        let devices: Vec<String> = (0..b.layer_disks.len())
            .map(|k| cache::dm_name(&self.lab_id, b.index, k))
            .collect();
        let mut f = CacheFailure {
            kind: c.kind,
            mode: c.mode,
            devices: devices.clone(),
            dirty_bytes: None,
            state_before: String::new(),
            kernel: String::new(),
            actions: Vec::new(),
            state_after: String::new(),
            usable: None,
        };
        let tables: Vec<(String, String)> = devices
            .iter()
            .zip(&b.layer_disks)
            .map(|(name, d)| {
                let sectors = cache::dm_sectors(&c, self.bytes_of(d, b.member_size));
                (name.clone(), cache::error_table(sectors))
            })
            .collect();
        let fail_all = |s: &Session| -> Result<(), LayoutError> {
            for (name, table) in &tables {
                fault::reload(&s.runner, name, table)?;
            }
            Ok(())
        };
        match c.kind {
            CacheKind::Lvmcache | CacheKind::Writecache => {
                self.fail_lvmcache(b, &mut f, fail_all)?;
            }
            CacheKind::Bcache => self.fail_bcache(b, &mut f, fail_all)?,
        }
        // A dry run built nothing: what the filesystem did is not observed, not `usable`.
        f.usable = (!self.runner.is_dry_run())
            .then(|| is_mount_point(&b.mount_point) && probe_writable(&b.mount_point));
        Ok(Some(f))
    }

    /// lvmcache and writecache: the cache volume (data and metadata) goes; the lab takes it
    /// off the LV (`lvconvert --uncache --force`, else `--splitcache --force`) and drops the
    /// missing PVs, so the LV is the array's alone. writecache's status says what it held
    /// (`dirty_bytes`: its blocks in use) and whether it met the error.
    fn fail_lvmcache(
        &mut self,
        b: &Built,
        f: &mut CacheFailure,
        fail_all: impl Fn(&Session) -> Result<(), LayoutError>,
    ) -> Result<(), LayoutError> {
        let vg = b
            .volume_group()
            .map(str::to_string)
            .ok_or_else(|| LayoutError::Unexpected(format!("{} has no VG", b.name)))?;
        let dm = format!("{}-{}", vg.replace('-', "--"), lvm::LV_NAME);
        let status = |s: &Session| {
            s.runner.run(&["dmsetup", "status", &dm]).map_or_else(
                |e| format!("unreadable: {e}"),
                |o| o.stdout.trim().to_string(),
            )
        };
        let dry = self.runner.is_dry_run();
        f.state_before = status(self);
        if f.kind == CacheKind::Writecache {
            f.dirty_bytes = self.writecache_used_bytes(&dm, &f.state_before);
        }
        fail_all(self)?;
        let _ = self.runner.run(&["sync"]);
        if f.kind == CacheKind::Writecache && !dry {
            // dm-writecache meets the dead device on its next IO to it: a read of what it
            // holds, a write, or its writeback; read through the LV so it does.
            read_through(&b.fs_device);
        }
        let target = if f.kind == CacheKind::Writecache {
            "dm-writecache"
        } else {
            "dm-cache"
        };
        f.kernel = if dry {
            "not observed (dry run)".into()
        } else {
            format!("{target} status {}", status(self))
        };
        // A dry run printed the command: it did not see it succeed.
        let ok = if dry { "printed (dry run)" } else { "ok" };
        let extra = lvm::no_udev_args(&self.runner);
        let [uncache, split, reduce] = cache::lvmcache_drop_argvs(&vg);
        let mut dropped = false;
        for argv in [uncache, split] {
            let line = format!("{} {}", argv[0], argv[2]);
            match self.runner.run(&with_extra(argv, &extra, 1)) {
                Ok(_) => {
                    f.actions.push(format!("{line}: {ok}"));
                    dropped = true;
                    break;
                }
                Err(e) => f
                    .actions
                    .push(format!("{line}: failed ({})", first_line(&e))),
            }
        }
        if dropped {
            let line = format!("{} {}", reduce[1], reduce[3]);
            match self.runner.run(&with_extra(reduce, &extra, 2)) {
                Ok(_) => f.actions.push(format!("{line}: {ok}")),
                Err(e) => f
                    .actions
                    .push(format!("{line}: failed ({})", first_line(&e))),
            }
            // The cache PVs are gone from the VG: teardown no longer asks for their labels.
            let gone: Vec<PathBuf> = f
                .devices
                .iter()
                .map(|n| Path::new("/dev/mapper").join(n))
                .collect();
            self.edit_vg_pvs(&vg, |all| all.retain(|p| !gone.contains(p)))?;
            if !self.remount_if_shut_down(b, f) {
                stand_in(self, b, f);
            }
        }
        f.state_after = status(self);
        Ok(())
    }

    /// writecache's blocks in use times its block size, from its status line `status` and
    /// `dmsetup table` of `dm`; `None` when either cannot be read (a dry run).
    fn writecache_used_bytes(&self, dm: &str, status: &str) -> Option<u64> {
        let used = cache::WritecacheStatus::parse(status)?.used();
        let table = self.runner.run(&["dmsetup", "table", dm]).ok()?;
        Some(used * cache::writecache_block_size(&table.stdout)?)
    }

    /// A filesystem that met the cache's IO errors before the cache came off (XFS shuts
    /// itself down on one, measured in the VM) is mounted again over the LV, now the array's
    /// alone: its log brings it back, and writethrough left nothing only in the cache.
    /// Whether the filesystem is mounted afterwards (a dry run: as it was).
    fn remount_if_shut_down(&mut self, b: &Built, f: &mut CacheFailure) -> bool {
        if self.runner.is_dry_run() || probe_writable(&b.mount_point) {
            return true;
        }
        let mnt = b.mount_point.to_string_lossy().into_owned();
        let _ = self.runner.run(&["umount", &mnt]);
        let mount = fs::mount_argv(
            b.stack.fs(),
            &b.fs_device,
            &[],
            &b.mount_point,
            b.stack.mount_options(),
            false,
        );
        match self.runner.run(&mount) {
            Ok(_) => {
                f.actions
                    .push("the filesystem had met the IO errors: mounted again".into());
                true
            }
            Err(e) => {
                f.actions.push(format!(
                    "the filesystem had met the IO errors and would not mount again ({})",
                    first_line(&e)
                ));
                false
            }
        }
    }

    /// bcache: reads what the cache holds (`dirty_data`, `state`), fails the device, gives
    /// bcache [`BCACHE_NOTICE`] to give the cache set up on its own (reading through it meanwhile
    /// so it meets the errors), unregisters it otherwise; a bcache device the kernel stopped
    /// (dirty data) is brought back over the array alone (`running`) and mounted again.
    fn fail_bcache(
        &mut self,
        b: &mut Built,
        f: &mut CacheFailure,
        fail_all: impl Fn(&Session) -> Result<(), LayoutError>,
    ) -> Result<(), LayoutError> {
        let Some((backing, cset)) = self.objects[b.mark..].iter().find_map(|o| match o {
            Owned::Bcache { backing, cset, .. } => Some((backing.clone(), cset.clone())),
            _ => None,
        }) else {
            return Err(LayoutError::Unexpected(format!(
                "{}: no bcache recorded",
                b.name
            )));
        };
        let dry = self.runner.is_dry_run();
        let name = cache::bcache_of(&self.runner, &backing).unwrap_or_default();
        let sys = cache::sysfs(&name);
        let read = |s: &Session, p: &Path| s.runner.read_file(p).map(|t| t.trim().to_string());
        f.dirty_bytes = read(self, &sys.join("dirty_data"))
            .ok()
            .and_then(|t| cache::parse_bcache_size(&t));
        f.state_before = read(self, &sys.join("state")).unwrap_or_default();
        fail_all(self)?;
        let set = Path::new("/sys/fs/bcache").join(&cset);
        let dev = Path::new("/dev").join(&name);
        let t = Instant::now();
        let _ = self.runner.run(&["sync"]);
        while !dry && set.exists() && t.elapsed() < BCACHE_NOTICE {
            // Reads of cached blocks go to the dead device: bcache counts the errors.
            read_through(&dev);
            std::thread::sleep(Duration::from_millis(500));
        }
        if dry || set.exists() {
            f.kernel = if dry {
                "not observed (dry run)".into()
            } else {
                format!(
                    "cache set still registered after {}s",
                    BCACHE_NOTICE.as_secs()
                )
            };
            let _ = self.runner.write_file(&set.join("unregister"), "1");
            f.actions.push(if dry {
                "unregister the cache set: printed (dry run)".into()
            } else {
                "unregistered the cache set".into()
            });
            cache::wait_until(Duration::from_secs(15), || dry || !set.exists());
        } else {
            f.kernel = format!(
                "cache set unregistered after {:.1}s",
                t.elapsed().as_secs_f64()
            );
        }
        // With dirty data the kernel stops the bcache device (stop_when_cache_set_failed
        // "auto": IO to it fails from then on); clean, it detaches and goes on over the backing
        // device alone.
        if dry {
            return Ok(());
        }
        let stopped = cache::wait_until(Duration::from_secs(10), || {
            !sys.exists() || std::fs::read_to_string(sys.join("state")).is_err() || !reads_ok(&dev)
        });
        f.state_after = read(self, &sys.join("state"))
            .unwrap_or_else(|e| format!("unreadable ({})", first_line(&e)));
        if !stopped {
            f.kernel
                .push_str(&format!("; {name} kept running over the array"));
            return Ok(());
        }
        f.kernel
            .push_str(&format!("; {name} stopped: its IO fails"));
        self.restart_bcache(b, f, &backing, &name)
    }

    /// Brings a bcache device the kernel stopped back over `backing` alone: unmounts the dead
    /// filesystem, waits for the device to let go of the array, registers the array again and
    /// forces it `running` without its cache (a backing device whose cache held dirty data
    /// does not start by itself), and mounts it. Where that fails, an empty read-only tmpfs
    /// stands in at the mount point, so the steps after write nothing into the bare directory
    /// and the data set reads back as lost.
    fn restart_bcache(
        &mut self,
        b: &mut Built,
        f: &mut CacheFailure,
        backing: &Path,
        old: &str,
    ) -> Result<(), LayoutError> {
        let mnt = b.mount_point.to_string_lossy().into_owned();
        if self.runner.run(&["umount", &mnt]).is_err() {
            let _ = self.runner.run(&["umount", "-l", &mnt]);
            f.actions.push("unmounted (lazily)".into());
        } else {
            f.actions.push("unmounted".into());
        }
        match self.bcache_without_cache(f, backing, old) {
            Some(dev) => {
                b.fs_device = dev.clone();
                let mount = fs::mount_argv(
                    b.stack.fs(),
                    &dev,
                    &[],
                    &b.mount_point,
                    b.stack.mount_options(),
                    false,
                );
                // The guest has no fsck: the filesystem's own log brings it back or nothing.
                match self.runner.run(&mount) {
                    Ok(_) => {
                        f.actions.push("mounted again".into());
                        return Ok(());
                    }
                    Err(e) => f.actions.push(format!(
                        "the filesystem would not mount ({})",
                        first_line(&e)
                    )),
                }
            }
            None => f.actions.push("the filesystem is gone".into()),
        }
        stand_in(self, b, f);
        Ok(())
    }

    /// Registers `backing` again once the stopped bcache device `old` let go of it and runs
    /// it without its cache; the new `/dev/bcacheN`, or `None` (what failed is in `f`).
    fn bcache_without_cache(
        &mut self,
        f: &mut CacheFailure,
        backing: &Path,
        old: &str,
    ) -> Option<PathBuf> {
        if !cache::wait_until(Duration::from_secs(15), || {
            !Path::new("/sys/block").join(old).exists()
        }) {
            f.actions.push(format!("{old} still holds the array"));
            return None;
        }
        f.actions.push(format!("{old} went away"));
        // The stopped device lets go of the array a moment after its node goes: the kernel
        // refuses the registration (EINVAL, measured) until then.
        let mut refused = None;
        for _ in 0..20 {
            match self
                .runner
                .write_file(Path::new(cache::REGISTER), &backing.to_string_lossy())
            {
                Ok(()) => {
                    refused = None;
                    break;
                }
                Err(e) => refused = Some(e),
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        if let Some(e) = refused {
            f.actions
                .push(format!("registering the array failed ({})", first_line(&e)));
            return None;
        }
        // Registered but not running, the backing device's `bcache` directory sits under it.
        let k = fault::kernel_name(backing).unwrap_or_default();
        let run = Path::new("/sys/class/block")
            .join(&k)
            .join("bcache/running");
        if let Err(e) = self.runner.write_file(&run, "1") {
            f.actions.push(format!(
                "running it without its cache failed ({})",
                first_line(&e)
            ));
            return None;
        }
        let mut name = None;
        cache::wait_until(Duration::from_secs(10), || {
            name = cache::bcache_of(&self.runner, backing);
            name.is_some()
        });
        let Some(name) = name else {
            f.actions
                .push("registering the array again made no bcache device".into());
            return None;
        };
        f.actions.push(format!("{name} running without its cache"));
        f.state_after = self
            .runner
            .read_file(&cache::sysfs(&name).join("state"))
            .map(|t| t.trim().to_string())
            .unwrap_or_default();
        let dev = Path::new("/dev").join(&name);
        cache::wait_until(Duration::from_secs(5), || dev.exists());
        Some(dev)
    }
}

/// Mounts an empty read-only tmpfs at `b`'s mount point where the filesystem did not come
/// back, so the steps after write nothing into the bare directory and the data set reads back
/// as lost.
fn stand_in(s: &Session, b: &Built, f: &mut CacheFailure) {
    let mnt = b.mount_point.to_string_lossy().into_owned();
    let argv = [
        "mount",
        "-t",
        "tmpfs",
        "-o",
        "ro,size=64k",
        "iolab-lost",
        &mnt,
    ];
    match s.runner.run(&argv) {
        Ok(_) => f.actions.push("an empty read-only tmpfs stands in".into()),
        Err(e) => f
            .actions
            .push(format!("no stand-in mount ({})", first_line(&e))),
    }
}

/// `argv` with lvm's no-udev arguments at `at` (after the command's name).
fn with_extra(mut argv: Vec<String>, extra: &[String], at: usize) -> Vec<String> {
    argv.splice(at..at, extra.iter().cloned());
    argv
}

/// The first line of an error, for a one-line action.
fn first_line(e: &LayoutError) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

/// Reads the first 16MiB of `dev` past the page cache, ignoring errors.
fn read_through(dev: &Path) {
    use std::io::Read;
    let _ = crate::system::drop_caches();
    if let Ok(f) = std::fs::File::open(dev) {
        let mut buf = vec![0u8; 1 << 20];
        let mut r = f.take(16 << 20);
        while matches!(r.read(&mut buf), Ok(n) if n > 0) {}
    }
}

/// Whether the first 4KiB of `dev` read, past the page cache.
fn reads_ok(dev: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(mut f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
    else {
        return false;
    };
    let mut buf = vec![0u8; 8192];
    let at = buf.as_ptr().align_offset(4096).min(4096);
    f.read(&mut buf[at..at + 4096]).is_ok()
}

/// Whether a small file can be written, flushed and removed under `mnt`.
fn probe_writable(mnt: &Path) -> bool {
    use std::io::Write;
    let p = mnt.join(".iolab-cache-probe");
    let ok = std::fs::File::create(&p)
        .and_then(|mut f| {
            f.write_all(b"iolab")?;
            f.sync_all()
        })
        .is_ok();
    let _ = std::fs::remove_file(&p);
    ok
}

/// The cache's steps when `layer` is a cache of `kind`.
fn cache_steps(layer: &Layer, kind: CacheKind) -> Option<Box<dyn LayerSteps + '_>> {
    match layer {
        Layer::Cache(c) if c.kind == kind => Some(Box::new(CacheSteps(c))),
        _ => None,
    }
}

impl StorageLayer for Lvmcache {
    fn name(&self) -> &'static str {
        CacheKind::Lvmcache.name()
    }

    fn steps<'a>(&self, layer: &'a Layer) -> Option<Box<dyn LayerSteps + 'a>> {
        cache_steps(layer, CacheKind::Lvmcache)
    }

    fn detect(&self) -> Result<(), String> {
        detect(
            CacheKind::Lvmcache,
            "/sys/module/dm_cache",
            "/dm-cache.ko",
            self.vm_tools(),
        )
    }

    fn vm_modules(&self) -> &'static [&'static str] {
        &["dm_cache", "dm_cache_smq"]
    }

    /// lvm runs `cache_check` when it activates a cached LV (LVM's own tools come with the
    /// LVM layer).
    fn vm_tools(&self) -> &'static [GuestTool] {
        &[GuestTool {
            name: "cache_check",
            package: "thin-provisioning-tools",
            required: false,
        }]
    }
}

impl StorageLayer for Writecache {
    fn name(&self) -> &'static str {
        CacheKind::Writecache.name()
    }

    fn steps<'a>(&self, layer: &'a Layer) -> Option<Box<dyn LayerSteps + 'a>> {
        cache_steps(layer, CacheKind::Writecache)
    }

    /// The kernel's device-mapper and dm-writecache, and LVM's tools (lvconvert makes it).
    fn detect(&self) -> Result<(), String> {
        if !layer::device_mapper() {
            return Err(format!(
                "the kernel has no device-mapper, which dm-writecache needs; {VM_HINT}"
            ));
        }
        layer::tools(&["lvm"], "lvm2")?;
        detect(
            CacheKind::Writecache,
            "/sys/module/dm_writecache",
            "/dm-writecache.ko",
            &[],
        )
    }

    fn vm_modules(&self) -> &'static [&'static str] {
        &["dm_writecache"]
    }
}

impl StorageLayer for Bcache {
    fn name(&self) -> &'static str {
        CacheKind::Bcache.name()
    }

    fn steps<'a>(&self, layer: &'a Layer) -> Option<Box<dyn LayerSteps + 'a>> {
        cache_steps(layer, CacheKind::Bcache)
    }

    fn detect(&self) -> Result<(), String> {
        detect(
            CacheKind::Bcache,
            "/sys/fs/bcache",
            "/bcache.ko",
            self.vm_tools(),
        )
    }

    fn vm_modules(&self) -> &'static [&'static str] {
        &["bcache"]
    }

    /// bcache is formatted by `make-bcache`; the alignment check reads its backing device's
    /// data offset with `bcache-super-show`.
    fn vm_tools(&self) -> &'static [GuestTool] {
        &[
            GuestTool {
                name: "make-bcache",
                package: "bcache-tools",
                required: false,
            },
            GuestTool {
                name: "bcache-super-show",
                package: "bcache-tools",
                required: false,
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::super::cmd::Runner;
    use super::super::{DiskSource, Session};
    use crate::stack::cache::{CacheKind, CacheMode, CacheOptions};
    use crate::stack::{FsKind, FsLayer, MdLevel, MdOptions, RaidLayer, Stack};

    /// A dry run fails the cache device on paper only: its record says nothing was observed
    /// (no `usable`, no kernel behaviour), for both kinds of cache — it once said `usable =
    /// true`, a measured outcome no dry run has.
    #[test]
    fn a_dry_run_cache_failure_claims_no_outcome() {
        for (kind, lvm) in [
            (CacheKind::Bcache, false),
            (CacheKind::Lvmcache, true),
            (CacheKind::Writecache, true),
        ] {
            let cache = CacheOptions {
                kind,
                mode: CacheMode::Writeback,
                disks: 1,
                size: None,
                fail: true,
            };
            let stack = Stack::over(RaidLayer::Md(MdOptions::new(MdLevel::Raid6)), 4)
                .with_some(lvm.then_some(crate::stack::Layer::Lvm))
                .with(crate::stack::Layer::Cache(cache))
                .fs(FsLayer::plain(FsKind::Ext4));
            let devs: Vec<PathBuf> = (0..5)
                .map(|i| format!("/dev/sd{}", char::from(b'b' + i)).into())
                .collect();
            let src = DiskSource::Devices(devs);
            let mut s = Session::new(Runner::recording(), "t1", None, "x.toml")
                .unwrap()
                .with_mount_base("/mnt".into());
            let mut b = s.build(0, "l", &stack, &src).unwrap();
            let d = s.degrade(&mut b).unwrap();
            let f = d.cache_failure.expect("the cache failure is recorded");
            assert_eq!(f.usable, None, "{kind:?}: {f:#?}");
            assert!(f.describe().ends_with("filesystem not observed"), "{f:#?}");
            assert!(
                serde_json::to_value(&f).unwrap().get("usable").is_none(),
                "{f:#?}"
            );
            assert_eq!(f.kernel, "not observed (dry run)", "{f:#?}");
            assert!(
                !f.actions.is_empty() && f.actions.iter().all(|a| a.ends_with("printed (dry run)")),
                "{f:#?}"
            );
            assert!(s.teardown(b).is_empty());
            s.finish().unwrap();
        }
    }
}
