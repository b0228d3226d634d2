//! The guest's initramfs, assembled from the host's own files: busybox-static as the shell, the
//! storage tools with the libraries `ldd` lists and the loader, the kernel modules md, dm, xfs,
//! btrfs and 9p need (in `modules.dep` order, so `/init` can `insmod` them), an `lvm.conf` for a
//! system without udev, and this iolab binary as the agent.
//!
//! The archive is cached per kernel under a key hashed from every input file's path, size and
//! modification time: a package upgrade or a new iolab build makes a new one, otherwise a boot
//! reuses it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::VmError;
use super::cpio::Cpio;
use super::kernel::Kernel;
use super::prereq::HostTools;

/// Modules every guest loads (with their dependencies) besides the storage layers' own: virtio
/// disks and 9p, the crc32c implementations that filesystems ask for by name (there is no
/// modprobe-on-demand to find them), and the device-mapper targets faults use.
pub const MODULES: &[&str] = &[
    "virtio_pci",
    "virtio_blk",
    "9pnet_virtio",
    "9p",
    "crc32c_generic",
    "crc32c_intel",
    // Faults and emulated latency (device-mapper targets over the lab's disks).
    "dm_mod",
    "dm_delay",
    "dm_flakey",
];

/// Every module the guest loads: [`MODULES`], then each registered storage layer's own
/// (`layout::registry::LAYERS`), each once.
pub fn modules() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = MODULES.to_vec();
    for m in crate::layout::registry::LAYERS
        .iter()
        .flat_map(|l| l.vm_modules())
    {
        if !out.contains(m) {
            out.push(m);
        }
    }
    out
}

/// lvm.conf for a guest without udev: LVM makes its own device nodes and does not wait for
/// udev to confirm them.
pub const LVM_CONF: &str = "devices {\n  obtain_device_list_from_udev = 0\n  external_device_info_source = \"none\"\n}\nactivation {\n  udev_sync = 0\n  udev_rules = 0\n  monitoring = 0\n}\nglobal {\n  use_lvmetad = 0\n}\n";

/// Names under which `lvm` is called (it looks at `argv[0]`).
const LVM_NAMES: &[&str] = &[
    "pvcreate",
    "pvremove",
    "pvs",
    "vgcreate",
    "vgremove",
    "vgs",
    "lvcreate",
    "lvremove",
    "lvs",
    "vgchange",
    "lvchange",
    "vgextend",
    "lvconvert",
];

/// The guest's `/init`: mount the pseudo filesystems, load the modules (a level of
/// [`module_levels`] at a time, its modules side by side: btrfs and xfs took 1.4 s each under
/// TCG, one after the other), mount the share, run the host's script from it, power off. Markers on the console tell the host how far it got.
pub fn init_script() -> String {
    r#"#!/bin/sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm /run/lock /run/lvm /run/mdadm /tmp /var/tmp /share
echo "iolab-guest: kernel up"
lvl=
while read -r l m; do
  [ "$l" = "$lvl" ] || { wait; lvl=$l; }
  { insmod "/lib/modules/$(uname -r)/$m" 2>/dev/null || echo "iolab-guest: insmod $m failed"; } &
done < /etc/iolab-modules
wait
echo 1000000 > /proc/sys/dev/raid/speed_limit_min 2>/dev/null
echo 10000000 > /proc/sys/dev/raid/speed_limit_max 2>/dev/null
[ -x /sbin/iolab-udev ] && /sbin/iolab-udev &
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 share /share; then
  echo "iolab-guest: ready"
  sh /share/run.sh
  echo "iolab-guest: done rc=$?"
else
  echo "iolab-guest: cannot mount the 9p share"
fi
sync
poweroff -f
"#
    .to_string()
}

/// One thing in the archive.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Item {
    /// A file copied from the host (symlinks followed).
    Copy { src: PathBuf, mode: u32 },
    /// A file with these bytes.
    Data { bytes: Vec<u8>, mode: u32 },
    /// A symbolic link to this target.
    Link(String),
}

/// The archive's contents before writing: destination path -> item.
#[derive(Debug, Default)]
pub struct Contents {
    items: BTreeMap<String, Item>,
}

impl Contents {
    fn copy(&mut self, dst: &str, src: &Path, mode: u32) {
        self.items.insert(
            dst.to_string(),
            Item::Copy {
                src: src.to_path_buf(),
                mode,
            },
        );
    }

    fn data(&mut self, dst: &str, bytes: impl Into<Vec<u8>>, mode: u32) {
        self.items.insert(
            dst.to_string(),
            Item::Data {
                bytes: bytes.into(),
                mode,
            },
        );
    }

    fn link(&mut self, dst: &str, target: &str) {
        self.items
            .entry(dst.to_string())
            .or_insert_with(|| Item::Link(target.to_string()));
    }

    /// A hash of every input (paths, sizes, modification times, inline bytes): the cache key.
    pub fn key(&self) -> String {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for (dst, item) in &self.items {
            h.update(dst.as_bytes());
            match item {
                Item::Copy { src, mode } => {
                    h.update(src.to_string_lossy().as_bytes());
                    h.update(&mode.to_le_bytes());
                    if let Ok(m) = std::fs::metadata(src) {
                        hash_identity(&mut h, &m);
                    }
                }
                Item::Data { bytes, mode } => {
                    h.update(bytes);
                    h.update(&mode.to_le_bytes());
                }
                Item::Link(t) => h.update(t.as_bytes()),
            }
        }
        format!("{:016x}", h.digest())
    }

    /// Writes the archive (directories first, each parent before its children).
    pub fn write(&self, path: &Path) -> Result<(), VmError> {
        let f = std::fs::File::create(path).map_err(|e| VmError::io("cannot create", path, e))?;
        let err = |e| VmError::io("cannot write", path, e);
        let mut c = Cpio::new(std::io::BufWriter::new(f));
        let mut dirs: BTreeSet<String> = [
            "dev", "proc", "sys", "run", "tmp", "etc", "share", "root", "var",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
        for dst in self.items.keys() {
            let mut p = Path::new(dst).parent();
            while let Some(d) = p.filter(|d| !d.as_os_str().is_empty() && *d != Path::new("/")) {
                dirs.insert(d.to_string_lossy().trim_start_matches('/').to_string());
                p = d.parent();
            }
        }
        // Sorted paths put every parent before its children.
        for d in &dirs {
            c.dir(d).map_err(err)?;
        }
        c.char_dev("dev/console", 5, 1).map_err(err)?;
        c.char_dev("dev/null", 1, 3).map_err(err)?;
        for (dst, item) in &self.items {
            match item {
                Item::Copy { src, mode } => {
                    let data =
                        std::fs::read(src).map_err(|e| VmError::io("cannot read", src, e))?;
                    c.file(dst, *mode, &data).map_err(err)?;
                }
                Item::Data { bytes, mode } => c.file(dst, *mode, bytes).map_err(err)?,
                Item::Link(t) => c.symlink(dst, t).map_err(err)?,
            }
        }
        c.finish().map_err(err)?;
        Ok(())
    }
}

/// Parses `ldd` output into the libraries' paths and the loader's.
pub fn parse_ldd(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, rest)) => rest.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

fn libraries(bin: &Path) -> Result<Vec<PathBuf>, VmError> {
    let out = Command::new("ldd")
        .arg(bin)
        .output()
        .map_err(|e| VmError::Tool(format!("cannot run ldd: {e}")))?;
    // `ldd` on a static binary exits 1 with "not a dynamic executable": no libraries.
    Ok(parse_ldd(&String::from_utf8_lossy(&out.stdout)))
}

/// Modules in `order` (a dependency order from [`module_order`]) with their load level: 0
/// for one that needs none of the others, else one above the highest it needs (`dep`:
/// `modules.dep`, which lists every module a module needs). Modules of a level may load side
/// by side once the level below is in. Sorted by level, in `order` within one.
pub fn module_levels(dep: &str, order: &[String]) -> Vec<(usize, String)> {
    let needs: BTreeMap<&str, Vec<&str>> = dep
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(m, rest)| (m.trim(), rest.split_whitespace().collect()))
        .collect();
    let mut level: BTreeMap<&str, usize> = BTreeMap::new();
    for m in order {
        let l = needs
            .get(m.as_str())
            .into_iter()
            .flatten()
            .filter_map(|d| level.get(d))
            .map(|l| l + 1)
            .max()
            .unwrap_or(0);
        level.insert(m, l);
    }
    let mut out: Vec<(usize, String)> = order
        .iter()
        .map(|m| (level[m.as_str()], m.clone()))
        .collect();
    out.sort_by_key(|(l, _)| *l);
    out
}

/// Module paths (relative to the modules directory) for `wanted` and their dependencies, each
/// after the modules it depends on. Built-in modules are skipped; an unknown one is an error.
pub fn module_order(dep: &str, builtin: &str, wanted: &[&str]) -> Result<Vec<String>, VmError> {
    let norm = |s: &str| s.replace('-', "_");
    let name_of = |p: &str| {
        let f = p.rsplit('/').next().unwrap_or(p);
        norm(f.split(".ko").next().unwrap_or(f))
    };
    let mut deps: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for line in dep.lines() {
        let Some((m, rest)) = line.split_once(':') else {
            continue;
        };
        deps.insert(
            name_of(m),
            (
                m.to_string(),
                rest.split_whitespace().map(str::to_string).collect(),
            ),
        );
    }
    let builtins: BTreeSet<String> = builtin.lines().map(name_of).collect();
    let mut out: Vec<String> = Vec::new();
    fn visit(
        name: &str,
        deps: &BTreeMap<String, (String, Vec<String>)>,
        out: &mut Vec<String>,
        name_of: &dyn Fn(&str) -> String,
    ) {
        let Some((path, ds)) = deps.get(name) else {
            return;
        };
        if out.contains(path) {
            return;
        }
        for d in ds {
            visit(&name_of(d), deps, out, name_of);
        }
        out.push(path.clone());
    }
    for w in wanted {
        let n = norm(w);
        if !deps.contains_key(&n) {
            if builtins.contains(&n) {
                continue;
            }
            return Err(VmError::Missing(format!(
                "the guest kernel has no module {w} (not in modules.dep or modules.builtin)"
            )));
        }
        visit(&n, &deps, &mut out, &name_of);
    }
    if let Some(bad) = out.iter().find(|p| !p.ends_with(".ko")) {
        return Err(VmError::Tool(format!(
            "compressed kernel module {bad}: only plain .ko modules are supported"
        )));
    }
    Ok(out)
}

/// What the guest needs for ZFS layouts: the cached modules and the host's tools.
#[derive(Debug, Clone)]
pub struct GuestZfs {
    /// spl.ko and zfs.ko built for the guest's kernel.
    pub modules: super::zfs::ZfsModules,
    /// `(name, host path)` of zpool and zfs.
    pub tools: Vec<(String, PathBuf)>,
}

/// Everything the guest needs, as archive contents (`zfs`: when a layout is a ZFS pool).
pub fn contents(
    tools: &HostTools,
    k: &Kernel,
    iolab: &Path,
    zfs: Option<&GuestZfs>,
) -> Result<Contents, VmError> {
    contents_with(tools, k, iolab, zfs, &[])
}

/// [`contents`] plus `extra` host programs `(name, path)` in the guest's `/sbin`, with their
/// libraries: tools only some guests need (blktrace for `vm::script`'s capture check).
pub fn contents_with(
    tools: &HostTools,
    k: &Kernel,
    iolab: &Path,
    zfs: Option<&GuestZfs>,
    extra: &[(String, PathBuf)],
) -> Result<Contents, VmError> {
    let mut c = Contents::default();
    c.copy("bin/busybox", &tools.busybox, 0o755);
    let mut bins: Vec<(String, PathBuf)> = vec![("bin/iolab".into(), iolab.to_path_buf())];
    for (t, p) in tools.found.iter().filter(|(t, _)| t.guest) {
        bins.push((format!("sbin/{}", t.name), p.clone()));
    }
    for (name, p) in extra {
        bins.push((format!("sbin/{name}"), p.clone()));
    }
    if let Some(z) = zfs {
        for (name, p) in &z.tools {
            bins.push((format!("sbin/{name}"), p.clone()));
        }
        // glibc loads it when a thread is cancelled; zpool's worker pools may need it.
        let gcc = Path::new("/lib/x86_64-linux-gnu/libgcc_s.so.1");
        if gcc.is_file() {
            c.copy(&gcc.to_string_lossy(), gcc, 0o755);
        }
        c.data(super::zfs::UDEV_PATH, super::zfs::UDEV_SCRIPT, 0o755);
    }
    let mut libs: BTreeSet<PathBuf> = BTreeSet::new();
    for (dst, src) in &bins {
        c.copy(dst, src, 0o755);
        libs.extend(libraries(src)?);
    }
    for l in &libs {
        c.copy(&l.to_string_lossy(), l, 0o755);
    }
    for n in LVM_NAMES {
        c.link(&format!("sbin/{n}"), "lvm");
    }
    c.link("sbin/modprobe", "/bin/busybox");
    let applets = Command::new(&tools.busybox)
        .arg("--list")
        .output()
        .map_err(|e| VmError::Tool(format!("cannot run busybox --list: {e}")))?;
    for a in String::from_utf8_lossy(&applets.stdout).lines() {
        if !a.is_empty() && !c.items.contains_key(&format!("sbin/{a}")) {
            c.link(&format!("bin/{a}"), "busybox");
        }
    }
    let read = |f: &str| std::fs::read_to_string(k.modules.join(f)).unwrap_or_default();
    let dep = read("modules.dep");
    let order = module_order(&dep, &read("modules.builtin"), &modules())?;
    let mdir = format!("lib/modules/{}", k.version);
    for m in &order {
        c.copy(&format!("{mdir}/{m}"), &k.modules.join(m), 0o644);
    }
    for f in [
        "modules.dep",
        "modules.builtin",
        "modules.alias",
        "modules.order",
    ] {
        if k.modules.join(f).is_file() {
            c.copy(&format!("{mdir}/{f}"), &k.modules.join(f), 0o644);
        }
    }
    let levels = module_levels(&dep, &order);
    let mut list = String::new();
    for (l, m) in &levels {
        list.push_str(&format!("{l} {m}\n"));
    }
    if let Some(z) = zfs {
        // Built outside the kernel tree: spl first (zfs depends on it and nothing else), each
        // after everything the kernel tree gave.
        let top = levels.last().map_or(0, |(l, _)| l + 1);
        for (i, (name, src)) in [("spl", &z.modules.spl), ("zfs", &z.modules.zfs)]
            .into_iter()
            .enumerate()
        {
            let rel = format!("extra/{name}.ko");
            c.copy(&format!("{mdir}/{rel}"), src, 0o644);
            list.push_str(&format!("{} {rel}\n", top + i));
        }
    }
    c.data("etc/iolab-modules", list, 0o644);
    c.data("etc/lvm/lvm.conf", LVM_CONF, 0o644);
    c.data("etc/mdadm/mdadm.conf", "AUTO -all\n", 0o644);
    c.data("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n", 0o644);
    c.data("etc/group", "root:x:0:\n", 0o644);
    c.data("init", init_script(), 0o755);
    Ok(c)
}

/// Feeds a file's size and modification time to a cache key: a new build or package upgrade
/// changes them.
fn hash_identity(h: &mut xxhash_rust::xxh3::Xxh3, m: &std::fs::Metadata) {
    h.update(&m.len().to_le_bytes());
    let t = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    h.update(&t.to_le_bytes());
}

/// Removes the files in `dir` that `stale` names, except `keep` and files still being written
/// (`.tmp`): the cache keeps one current copy of each thing.
fn remove_stale(dir: &Path, keep: &str, stale: impl Fn(&str) -> bool) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if stale(&n) && n != keep && !n.contains(".tmp") {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The iolab the guest runs: the host's binary without its debug info, which is five sixths
/// of a release build (68 of 82 MB) and which every boot unpacks for nothing (2 of a 13 s TCG
/// boot, measured). Made once per build with `objcopy --strip-debug` beside the archives of
/// kernel `k` in `cache` (older copies removed); the binary itself where objcopy is missing or
/// fails, which only costs that time.
pub fn guest_iolab(iolab: &Path, cache: &Path, k: &Kernel) -> PathBuf {
    let Ok(m) = std::fs::metadata(iolab) else {
        return iolab.to_path_buf();
    };
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(iolab.to_string_lossy().as_bytes());
    hash_identity(&mut h, &m);
    let dir = cache.join(&k.version);
    let name = format!("iolab-guest-{:016x}", h.digest());
    let path = dir.join(&name);
    if path.is_file() {
        return path;
    }
    // Labs boot side by side: each strips to its own file and renames it into place.
    let tmp = dir.join(format!(
        "{name}.tmp{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let stripped = std::fs::create_dir_all(&dir).is_ok()
        && Command::new("objcopy")
            .arg("--strip-debug")
            .arg(iolab)
            .arg(&tmp)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        && std::fs::rename(&tmp, &path).is_ok();
    if !stripped {
        let _ = std::fs::remove_file(&tmp);
        return iolab.to_path_buf();
    }
    remove_stale(&dir, &name, |n| n.starts_with("iolab-guest-"));
    path
}

/// The cached initramfs for these contents, written when missing (older ones of the same
/// flavour — `base`, `zfs`, or a script's `x-TOOLS` — for the same kernel are removed: one
/// iolab build is current at a time, and one flavour does not evict another).
pub fn build(c: &Contents, cache: &Path, k: &Kernel, flavour: &str) -> Result<PathBuf, VmError> {
    let dir = cache.join(&k.version);
    std::fs::create_dir_all(&dir).map_err(|e| VmError::io("cannot create", &dir, e))?;
    let prefix = format!("initramfs-{flavour}-");
    let name = format!("{prefix}{}.cpio", c.key());
    let path = dir.join(&name);
    if path.is_file() {
        return Ok(path);
    }
    let tmp = dir.join(format!("{name}.tmp{}", std::process::id()));
    if let Err(e) = c.write(&tmp) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, &path).map_err(|e| VmError::io("cannot write", &path, e))?;
    // Names from before flavours (`initramfs-<key>.cpio`) go too.
    remove_stale(&dir, &name, |n| n.starts_with(&prefix) || is_legacy_name(n));
    Ok(path)
}

/// Whether `name` is an initramfs from before flavours: `initramfs-<16 hex digits>.cpio`.
fn is_legacy_name(name: &str) -> bool {
    name.strip_prefix("initramfs-")
        .and_then(|r| r.strip_suffix(".cpio"))
        .is_some_and(|k| k.len() == 16 && k.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only pre-flavour names count as legacy: a script's flavour (`x-blktrace`) must not be
    /// evicted each time the lab's `base` one is built, nor the other way round.
    #[test]
    fn flavours_do_not_evict_each_other() {
        assert!(is_legacy_name("initramfs-9d8cea182daf038d.cpio"));
        for n in [
            "initramfs-base-9d8cea182daf038d.cpio",
            "initramfs-zfs-82b6a38630f3db7a.cpio",
            "initramfs-x-blktrace-82b6a38630f3db7a.cpio",
            "initramfs-9d8cea182daf038d.cpio.tmp12",
        ] {
            assert!(!is_legacy_name(n), "{n}");
        }
    }

    #[test]
    fn ldd_lines() {
        let t = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x7f)\n\t/lib64/ld-linux-x86-64.so.2 (0x7f)\n";
        assert_eq!(
            parse_ldd(t),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libm.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
    }

    #[test]
    fn modules_come_after_their_dependencies() {
        let dep = "kernel/drivers/md/raid456.ko: kernel/crypto/async_tx/async_pq.ko kernel/lib/raid6/raid6_pq.ko\n\
kernel/crypto/async_tx/async_pq.ko: kernel/lib/raid6/raid6_pq.ko\n\
kernel/lib/raid6/raid6_pq.ko:\n\
kernel/drivers/md/dm-mod.ko:\n";
        let o = module_order(
            dep,
            "kernel/drivers/virtio/virtio_pci.ko\n",
            &["raid456", "dm_mod", "virtio_pci"],
        )
        .unwrap();
        assert_eq!(
            o,
            vec![
                "kernel/lib/raid6/raid6_pq.ko",
                "kernel/crypto/async_tx/async_pq.ko",
                "kernel/drivers/md/raid456.ko",
                "kernel/drivers/md/dm-mod.ko"
            ]
        );
        assert!(module_order(dep, "", &["nope"]).is_err());
        // Levels: what needs nothing loads first, side by side (raid6_pq and dm-mod), each
        // module one level above the highest it needs.
        assert_eq!(
            module_levels(dep, &o),
            vec![
                (0, "kernel/lib/raid6/raid6_pq.ko".to_string()),
                (0, "kernel/drivers/md/dm-mod.ko".to_string()),
                (1, "kernel/crypto/async_tx/async_pq.ko".to_string()),
                (2, "kernel/drivers/md/raid456.ko".to_string()),
            ]
        );
    }
}
