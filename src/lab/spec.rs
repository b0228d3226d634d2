//! The lab spec (TOML): which disks, which layouts, which workloads. Validated completely before
//! anything is touched; every error is one line `file:line: field: what and how to fix`, the
//! field naming the layout (`layout[md-raid6].mdadm.level`).
//!
//! ```toml
//! name = "raid-levels"
//! [disks]
//! loop = { count = 6, size = "1GiB", dir = "/var/tmp/iolab-disks" }
//! # or: devices = ["/dev/sdb", "/dev/sdc", "/dev/sdd", "/dev/sde"]
//!
//! [[layout]]
//! name = "btrfs-raid5"
//! btrfs = { data = "raid5", metadata = "raid1", members = 4 }
//! mount_options = "noatime"
//! degrade = true
//! rebuild = true
//!
//! [[layout]]
//! name = "md-raid6-lvm-xfs"
//! mdadm = { level = 6, members = 5, spares = 1, chunk = "512k", bitmap = "internal", bitmap_chunk = "64M" }
//! lvm = true
//! fs = "xfs"
//!
//! [[layout]]
//! name = "old-server"
//! dir = "/srv/data"
//!
//! [workloads]
//! profiles = ["quick"]
//! repeat = 3
//! baseline = "old-server"
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::layout::stack::{BtrfsProfile, FsKind, MdLevel, MdOptions, RaidLayer, Stack};
use crate::spec::profiles::{self, ProfileScale};
use crate::spec::{RawWorkload, SpecError, Suite};
use crate::units;

/// Where backing files go when the spec does not say.
pub const DEFAULT_DISK_DIR: &str = "/var/tmp/iolab-disks";
/// Most loop disks a lab may make.
pub const MAX_LOOP_DISKS: usize = 64;
/// Smallest loop disk (btrfs needs ~114MiB per device for its first chunks).
pub const MIN_LOOP_SIZE: u64 = 128 << 20;

/// The disks layouts are built on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Disks {
    /// Emulated disks: sparse files attached as loop devices, fresh for each layout.
    Loop {
        /// How many disks the pool has.
        count: usize,
        /// Bytes per disk.
        size: u64,
        /// Directory of the backing files.
        dir: PathBuf,
        /// `--direct-io=on` for the loop devices (`None`: when the directory takes O_DIRECT).
        direct_io: Option<bool>,
    },
    /// Real block devices (need `--destroy` naming all of them).
    Devices(Vec<PathBuf>),
    /// No disks: every layout is an existing directory.
    None,
}

impl Disks {
    /// How many disks the pool has.
    pub fn count(&self) -> usize {
        match self {
            Disks::Loop { count, .. } => *count,
            Disks::Devices(d) => d.len(),
            Disks::None => 0,
        }
    }

    /// One line: `6 x 1GiB loop disks in /var/tmp/iolab-disks`.
    pub fn describe(&self) -> String {
        match self {
            Disks::Loop {
                count, size, dir, ..
            } => format!(
                "{count} x {} loop disks in {}",
                units::format_bytes(*size),
                dir.display()
            ),
            Disks::Devices(d) => format!(
                "devices {}",
                d.iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Disks::None => "existing directories".into(),
        }
    }
}

/// What a layout is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayoutKind {
    /// A stack built on the lab's disks.
    Stack(Stack),
    /// An existing directory, used as it is (the "old server" baseline).
    Directory(PathBuf),
}

/// One validated layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayoutSpec {
    /// Unique name (labels its runs in the store).
    pub name: String,
    /// What to build, or which directory.
    pub kind: LayoutKind,
    /// Fail one member after the healthy runs and run the workloads again.
    pub degrade: bool,
    /// Replace the failed member and time the rebuild.
    pub rebuild: bool,
    /// Bytes of verified data written before degrading (`None`: an eighth of the usable space,
    /// at most 1GiB), so the degraded reads and the rebuild have something to work on.
    pub fill: Option<u64>,
}

impl LayoutSpec {
    /// One line saying what the layout is.
    pub fn describe(&self) -> String {
        match &self.kind {
            LayoutKind::Stack(s) => s.describe(),
            LayoutKind::Directory(d) => format!("existing directory {}", d.display()),
        }
    }
}

/// The workloads every layout runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabWorkloads {
    /// Profiles named in the spec (their workloads are in `suite`).
    pub profiles: Vec<String>,
    /// Every workload in order: profiles first, then inline ones.
    pub suite: Suite,
    /// Trials of each workload per layout.
    pub repeat: u32,
    /// The layout others are compared against.
    pub baseline: Option<String>,
}

/// A validated lab spec.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabSpec {
    /// Lab name (the spec's `name`, else the file stem).
    pub name: String,
    /// The spec file, for messages.
    pub file: String,
    /// The disks.
    pub disks: Disks,
    /// The layouts in order.
    pub layouts: Vec<LayoutSpec>,
    /// The workloads.
    pub workloads: LabWorkloads,
}

impl LabSpec {
    /// `--quick`: the quick profile, one trial — a smoke test of the layouts.
    pub fn quick(&mut self) {
        if let Some(s) = profiles::profile("quick", ProfileScale::default()) {
            self.workloads.profiles = vec!["quick".into()];
            self.workloads.suite = s;
            self.workloads.repeat = 1;
        }
    }

    /// Replaces the loop disks' directory (`--disk-dir`).
    pub fn set_disk_dir(&mut self, d: PathBuf) {
        if let Disks::Loop { dir, .. } = &mut self.disks {
            *dir = d;
        }
    }

    /// The layout named `name`.
    pub fn layout(&self, name: &str) -> Option<&LayoutSpec> {
        self.layouts.iter().find(|l| l.name == name)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum SizeVal {
    Bytes(i64),
    Text(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum TimeVal {
    Secs(f64),
    Text(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum IntOrStr {
    Int(i64),
    Text(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum StrList {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLab {
    name: Option<String>,
    disks: Option<Spanned<RawDisks>>,
    #[serde(default)]
    layout: Vec<Spanned<RawLayout>>,
    workloads: Option<Spanned<RawWorkloads>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDisks {
    devices: Option<Vec<String>>,
    #[serde(rename = "loop")]
    loop_disks: Option<RawLoop>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLoop {
    count: Option<i64>,
    size: Option<SizeVal>,
    dir: Option<String>,
    direct_io: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLayout {
    name: Option<String>,
    dir: Option<String>,
    btrfs: Option<RawBtrfs>,
    mdadm: Option<RawMd>,
    lvm: Option<bool>,
    fs: Option<String>,
    mkfs_options: Option<StrList>,
    mount_options: Option<StrList>,
    degrade: Option<bool>,
    rebuild: Option<bool>,
    fill: Option<SizeVal>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBtrfs {
    data: Option<String>,
    metadata: Option<String>,
    members: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMd {
    level: Option<IntOrStr>,
    members: Option<i64>,
    spares: Option<i64>,
    chunk: Option<SizeVal>,
    bitmap: Option<String>,
    bitmap_chunk: Option<SizeVal>,
    assume_clean: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkloads {
    profiles: Option<StrList>,
    repeat: Option<i64>,
    baseline: Option<String>,
    size: Option<SizeVal>,
    time: Option<TimeVal>,
    defaults: Option<RawWorkload>,
    #[serde(default)]
    workload: Vec<Spanned<RawWorkload>>,
}

/// Finds the line of `key = ` in the table starting at byte `start`: the table runs until the
/// next header that is not one of its own sub-tables (`[layout.mdadm]`).
struct Locator<'a> {
    text: &'a str,
    file: &'a str,
}

impl Locator<'_> {
    fn line_of(&self, byte: usize) -> usize {
        self.text[..byte.min(self.text.len())]
            .bytes()
            .filter(|b| *b == b'\n')
            .count()
            + 1
    }

    fn line_of_key(&self, start: usize, subtable: &str, key: &str) -> usize {
        let start = start.min(self.text.len());
        // Back up to the start of the line holding the header.
        let line_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
        let mut off = line_start;
        let mut first = true;
        for l in self.text[line_start..].split_inclusive('\n') {
            let t = l.trim_start();
            if !first && t.starts_with('[') && !t.starts_with(&format!("[{subtable}.")) {
                break;
            }
            first = false;
            if let Some(i) = find_key(t, key) {
                let _ = i;
                return self.line_of(off);
            }
            off += l.len();
        }
        self.line_of(start)
    }

    fn err(
        &self,
        line: Option<usize>,
        key: impl Into<String>,
        msg: impl Into<String>,
    ) -> SpecError {
        SpecError {
            file: Some(self.file.to_string()),
            line,
            key: key.into(),
            msg: msg.into(),
        }
    }
}

/// Where `key =` appears in a line as a key (start of line, or after `{` or `,` in an inline table).
fn find_key(line: &str, key: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = line[from..].find(key) {
        let at = from + i;
        let before = line[..at].trim_end();
        let ok_before = before.is_empty() || before.ends_with('{') || before.ends_with(',');
        let after = line[at + key.len()..].trim_start();
        if ok_before && after.starts_with('=') && !after.starts_with("==") {
            return Some(at);
        }
        from = at + key.len();
    }
    None
}

fn size_of(v: &SizeVal) -> Result<u64, String> {
    match v {
        SizeVal::Bytes(b) if *b >= 0 => Ok(*b as u64),
        SizeVal::Bytes(_) => Err("must not be negative".into()),
        SizeVal::Text(s) => units::parse_bytes(s).map_err(|e| e.to_string()),
    }
}

fn time_of(v: &TimeVal) -> Result<Duration, String> {
    match v {
        TimeVal::Secs(s) if s.is_finite() && *s > 0.0 && *s < 1e9 => {
            Ok(Duration::from_secs_f64(*s))
        }
        TimeVal::Secs(_) => Err("must be a positive number of seconds".into()),
        TimeVal::Text(s) => units::parse_duration(s).map_err(|e| e.to_string()),
    }
}

fn list_of(v: &Option<StrList>, split: fn(&str) -> Vec<String>) -> Vec<String> {
    match v {
        None => Vec::new(),
        Some(StrList::One(s)) => split(s),
        Some(StrList::Many(v)) => v.clone(),
    }
}

fn split_words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn split_commas(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 40
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && !n.starts_with('.')
}

/// Parses and validates a lab spec; `file` names it in errors.
pub fn parse_lab(text: &str, file: &str) -> Result<LabSpec, SpecError> {
    let loc = Locator { text, file };
    let raw: RawLab = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| loc.line_of(s.start));
        loc.err(line, "", e.message().trim().replace('\n', " "))
    })?;
    let disks = parse_disks(&loc, raw.disks.as_ref())?;
    if raw.layout.is_empty() {
        return Err(loc.err(
            None,
            "layout",
            "the lab has no [[layout]]; add at least one (a name and a stack, or dir = \"...\")",
        ));
    }
    let mut layouts: Vec<LayoutSpec> = Vec::new();
    for (i, l) in raw.layout.iter().enumerate() {
        let lay = parse_layout(&loc, i, l, &disks)?;
        if layouts.iter().any(|o| o.name == lay.name) {
            return Err(loc.err(
                Some(loc.line_of_key(l.span().start, "layout", "name")),
                format!("layout[{}].name", lay.name),
                format!("duplicate layout name '{}'; names must be unique", lay.name),
            ));
        }
        layouts.push(lay);
    }
    let workloads = parse_workloads(&loc, raw.workloads.as_ref(), &layouts)?;
    let name = raw.name.unwrap_or_else(|| {
        Path::new(file)
            .file_stem()
            .map_or_else(|| "lab".to_string(), |s| s.to_string_lossy().into_owned())
    });
    Ok(LabSpec {
        name,
        file: file.to_string(),
        disks,
        layouts,
        workloads,
    })
}

/// Reads and validates a lab spec file.
pub fn parse_lab_file(path: &Path) -> Result<LabSpec, SpecError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| SpecError {
        file: Some(name.clone()),
        line: None,
        key: String::new(),
        msg: format!("cannot read lab spec: {e}"),
    })?;
    parse_lab(&text, &name)
}

fn parse_disks(loc: &Locator, raw: Option<&Spanned<RawDisks>>) -> Result<Disks, SpecError> {
    let Some(sd) = raw else {
        return Ok(Disks::None);
    };
    let d = sd.get_ref();
    let start = sd.span().start;
    let at = |key: &str| Some(loc.line_of_key(start, "disks", key));
    match (&d.devices, &d.loop_disks) {
        (Some(_), Some(_)) => Err(loc.err(
            at("loop"),
            "disks",
            "give either devices = [...] or loop = {...}, not both",
        )),
        (None, None) => Err(loc.err(
            at("disks"),
            "disks",
            "give devices = [\"/dev/sdb\", ...] or loop = { count = 4, size = \"1GiB\" }",
        )),
        (Some(devs), None) => {
            if devs.is_empty() {
                return Err(loc.err(at("devices"), "disks.devices", "the list is empty"));
            }
            let mut out: Vec<PathBuf> = Vec::new();
            for (i, d) in devs.iter().enumerate() {
                let key = format!("disks.devices[{}]", i + 1);
                let p = PathBuf::from(d);
                let meta = std::fs::metadata(&p).map_err(|e| {
                    loc.err(
                        at("devices"),
                        &key,
                        format!("{d}: {e}; name an existing block device"),
                    )
                })?;
                use std::os::unix::fs::FileTypeExt;
                if !meta.file_type().is_block_device() {
                    return Err(loc.err(at("devices"), &key, format!("{d} is not a block device")));
                }
                let canon = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
                if out
                    .iter()
                    .any(|o| std::fs::canonicalize(o).unwrap_or_else(|_| o.clone()) == canon)
                {
                    return Err(loc.err(at("devices"), &key, format!("{d} is listed twice")));
                }
                out.push(p);
            }
            Ok(Disks::Devices(out))
        }
        (None, Some(l)) => {
            let count = l.count.ok_or_else(|| {
                loc.err(
                    at("count"),
                    "disks.loop.count",
                    "missing; how many disks (e.g. count = 4)",
                )
            })?;
            if count < 1 || count as usize > MAX_LOOP_DISKS {
                return Err(loc.err(
                    at("count"),
                    "disks.loop.count",
                    format!("must be between 1 and {MAX_LOOP_DISKS}"),
                ));
            }
            let size = match &l.size {
                None => 1 << 30,
                Some(v) => size_of(v).map_err(|m| loc.err(at("size"), "disks.loop.size", m))?,
            };
            if size < MIN_LOOP_SIZE {
                return Err(loc.err(
                    at("size"),
                    "disks.loop.size",
                    format!(
                        "{} is too small; loop disks need at least {}",
                        units::format_bytes(size),
                        units::format_bytes(MIN_LOOP_SIZE)
                    ),
                ));
            }
            let dir = PathBuf::from(l.dir.as_deref().unwrap_or(DEFAULT_DISK_DIR));
            if !dir.is_absolute() {
                return Err(loc.err(
                    at("dir"),
                    "disks.loop.dir",
                    "must be an absolute path (e.g. /var/tmp/iolab-disks)",
                ));
            }
            Ok(Disks::Loop {
                count: count as usize,
                size,
                dir,
                direct_io: l.direct_io,
            })
        }
    }
}

fn count_of(
    loc: &Locator,
    v: Option<i64>,
    line: Option<usize>,
    key: &str,
    default: usize,
) -> Result<usize, SpecError> {
    match v {
        None => Ok(default),
        Some(n) if (0..=1024).contains(&n) => Ok(n as usize),
        Some(_) => Err(loc.err(line, key, "must be between 0 and 1024")),
    }
}

fn parse_layout(
    loc: &Locator,
    i: usize,
    sl: &Spanned<RawLayout>,
    disks: &Disks,
) -> Result<LayoutSpec, SpecError> {
    let l = sl.get_ref();
    let start = sl.span().start;
    let at = |key: &str| Some(loc.line_of_key(start, "layout", key));
    let name = match &l.name {
        None => {
            return Err(loc.err(
                Some(loc.line_of(start)),
                format!("layout[{}].name", i + 1),
                "missing; every layout needs a name that says what it is (e.g. btrfs-raid5)",
            ));
        }
        Some(n) if !valid_name(n) => {
            return Err(loc.err(
                at("name"),
                format!("layout[{}].name", i + 1),
                format!(
                    "'{n}' is not a usable name; use up to 40 letters, digits, '-', '_' or '.'"
                ),
            ));
        }
        Some(n) => n.clone(),
    };
    let key = |k: &str| format!("layout[{name}].{k}");
    let degrade = l.degrade.unwrap_or(false);
    let rebuild = l.rebuild.unwrap_or(false);
    if rebuild && !degrade {
        return Err(loc.err(
            at("rebuild"),
            key("rebuild"),
            "a rebuild needs a failed member first; set degrade = true",
        ));
    }
    if let Some(dir) = &l.dir {
        let stray = [
            ("btrfs", l.btrfs.is_some()),
            ("mdadm", l.mdadm.is_some()),
            ("lvm", l.lvm.is_some()),
            ("fs", l.fs.is_some()),
            ("mkfs_options", l.mkfs_options.is_some()),
            ("mount_options", l.mount_options.is_some()),
            ("degrade", degrade),
            ("fill", l.fill.is_some()),
        ];
        if let Some((k, _)) = stray.iter().find(|(_, set)| *set) {
            return Err(loc.err(
                at(k),
                key(k),
                "a dir layout uses an existing directory as it is; drop this field (or drop dir to build a stack)",
            ));
        }
        let p = PathBuf::from(dir);
        if !p.is_dir() {
            return Err(loc.err(
                at("dir"),
                key("dir"),
                format!("{dir} is not an existing directory"),
            ));
        }
        return Ok(LayoutSpec {
            name,
            kind: LayoutKind::Directory(p),
            degrade: false,
            rebuild: false,
            fill: None,
        });
    }
    let pool = disks.count();
    if pool == 0 {
        return Err(loc.err(
            Some(loc.line_of(start)),
            key("disks"),
            "this layout builds a stack but the lab has no [disks]; add devices = [...] or loop = {...}",
        ));
    }
    let fs_given = match &l.fs {
        None => None,
        Some(f) => Some(FsKind::parse(f).ok_or_else(|| {
            loc.err(
                at("fs"),
                key("fs"),
                format!("unknown filesystem '{f}' (use xfs, ext4 or btrfs)"),
            )
        })?),
    };
    let (raid, members, spares, fs) = match (&l.btrfs, &l.mdadm) {
        (Some(_), Some(_)) => {
            return Err(loc.err(
                at("mdadm"),
                key("mdadm"),
                "a layout has one RAID layer: btrfs or mdadm, not both",
            ));
        }
        (Some(b), None) => {
            let data_s = b.data.as_deref().ok_or_else(|| {
                loc.err(
                    at("btrfs"),
                    key("btrfs.data"),
                    "missing; the data profile (e.g. data = \"raid5\")",
                )
            })?;
            let names = BtrfsProfile::ALL.map(BtrfsProfile::name).join(", ");
            let data = BtrfsProfile::parse(data_s).ok_or_else(|| {
                loc.err(
                    at("data"),
                    key("btrfs.data"),
                    format!("unknown profile '{data_s}' (use {names})"),
                )
            })?;
            let members = count_of(loc, b.members, at("members"), &key("btrfs.members"), pool)?;
            let metadata = match &b.metadata {
                None => BtrfsProfile::default_metadata(data, members),
                Some(m) => BtrfsProfile::parse(m).ok_or_else(|| {
                    loc.err(
                        at("metadata"),
                        key("btrfs.metadata"),
                        format!("unknown profile '{m}' (use {names})"),
                    )
                })?,
            };
            for (p, k) in [(data, "data"), (metadata, "metadata")] {
                if members < p.min_devices() {
                    let (line, field) = if b.members.is_some() {
                        (at("members"), "btrfs.members")
                    } else {
                        (
                            at(k),
                            if k == "data" {
                                "btrfs.data"
                            } else {
                                "btrfs.metadata"
                            },
                        )
                    };
                    return Err(loc.err(
                        line,
                        key(field),
                        format!(
                            "btrfs {} needs at least {} devices, the layout has {members}",
                            p.name(),
                            p.min_devices()
                        ),
                    ));
                }
            }
            if l.lvm == Some(true) {
                return Err(loc.err(
                    at("lvm"),
                    key("lvm"),
                    "btrfs RAID sits directly on the disks; put LVM under mdadm or a single disk",
                ));
            }
            if let Some(f) = fs_given {
                if f != FsKind::Btrfs {
                    return Err(loc.err(
                        at("fs"),
                        key("fs"),
                        format!(
                            "a btrfs RAID layer is its own filesystem; drop fs = \"{}\"",
                            f.name()
                        ),
                    ));
                }
            }
            (
                RaidLayer::Btrfs { data, metadata },
                members,
                0,
                FsKind::Btrfs,
            )
        }
        (None, Some(m)) => {
            let lv = m.level.as_ref().ok_or_else(|| {
                loc.err(
                    at("mdadm"),
                    key("mdadm.level"),
                    "missing; the RAID level (0, 1, 4, 5, 6 or 10)",
                )
            })?;
            let lv_s = match lv {
                IntOrStr::Int(n) => n.to_string(),
                IntOrStr::Text(s) => s.clone(),
            };
            let level = MdLevel::parse(&lv_s).ok_or_else(|| {
                loc.err(
                    at("level"),
                    key("mdadm.level"),
                    format!("unknown level '{lv_s}' (use 0, 1, 4, 5, 6 or 10)"),
                )
            })?;
            let spares = count_of(loc, m.spares, at("spares"), &key("mdadm.spares"), 0)?;
            if spares > 0 && !level.redundant() {
                return Err(loc.err(
                    at("spares"),
                    key("mdadm.spares"),
                    "raid0 cannot use spares; drop spares or pick a redundant level",
                ));
            }
            let members = count_of(
                loc,
                m.members,
                at("members"),
                &key("mdadm.members"),
                pool.saturating_sub(spares),
            )?;
            if members < level.min_devices() {
                let (line, field) = if m.members.is_some() {
                    (at("members"), "mdadm.members")
                } else {
                    (at("level"), "mdadm.level")
                };
                return Err(loc.err(
                    line,
                    key(field),
                    format!(
                        "md raid{} needs at least {} members, the layout has {members}",
                        level.number(),
                        level.min_devices()
                    ),
                ));
            }
            let chunk = match &m.chunk {
                None => None,
                Some(v) => {
                    let c = size_of(v).map_err(|e| loc.err(at("chunk"), key("mdadm.chunk"), e))?;
                    if !level.has_chunk() {
                        return Err(loc.err(
                            at("chunk"),
                            key("mdadm.chunk"),
                            "raid1 has no chunks; drop chunk",
                        ));
                    }
                    if c < 4096 || !c.is_power_of_two() {
                        return Err(loc.err(
                            at("chunk"),
                            key("mdadm.chunk"),
                            "must be a power of two of at least 4k (e.g. 512k)",
                        ));
                    }
                    Some(c)
                }
            };
            let bitmap = match m.bitmap.as_deref() {
                None => None,
                Some(b @ ("internal" | "none")) => {
                    if b == "internal" && !level.redundant() {
                        return Err(loc.err(
                            at("bitmap"),
                            key("mdadm.bitmap"),
                            "raid0 has no redundancy to track; drop bitmap",
                        ));
                    }
                    Some(b.to_string())
                }
                Some(o) => {
                    return Err(loc.err(
                        at("bitmap"),
                        key("mdadm.bitmap"),
                        format!("unknown bitmap '{o}' (use internal or none)"),
                    ));
                }
            };
            let bitmap_chunk = match &m.bitmap_chunk {
                None => None,
                Some(v) => {
                    let c = size_of(v)
                        .map_err(|e| loc.err(at("bitmap_chunk"), key("mdadm.bitmap_chunk"), e))?;
                    if bitmap.as_deref() != Some("internal") {
                        return Err(loc.err(
                            at("bitmap_chunk"),
                            key("mdadm.bitmap_chunk"),
                            "needs bitmap = \"internal\"",
                        ));
                    }
                    if c < 4096 || !c.is_power_of_two() {
                        return Err(loc.err(
                            at("bitmap_chunk"),
                            key("mdadm.bitmap_chunk"),
                            "must be a power of two of at least 4k (e.g. 64M)",
                        ));
                    }
                    Some(c)
                }
            };
            let fs = fs_given.ok_or_else(|| {
                loc.err(
                    at("mdadm"),
                    key("fs"),
                    "missing; the filesystem on the array (xfs, ext4 or btrfs)",
                )
            })?;
            (
                RaidLayer::Md(MdOptions {
                    level,
                    chunk,
                    bitmap,
                    bitmap_chunk,
                    assume_clean: m.assume_clean.unwrap_or(false),
                }),
                members,
                spares,
                fs,
            )
        }
        (None, None) => {
            let fs = fs_given.ok_or_else(|| {
                loc.err(
                    Some(loc.line_of(start)),
                    key("fs"),
                    "missing; a layout needs btrfs = {...}, mdadm = {...}, fs = \"xfs\" on a single disk, or dir = \"...\"",
                )
            })?;
            (RaidLayer::None, 1, 0, fs)
        }
    };
    let stack = Stack {
        raid,
        members,
        spares,
        lvm: l.lvm.unwrap_or(false),
        fs,
        mkfs_options: list_of(&l.mkfs_options, split_words),
        mount_options: list_of(&l.mount_options, split_commas),
    };
    let members_key = match &stack.raid {
        RaidLayer::Btrfs { .. } => key("btrfs.members"),
        RaidLayer::Md(_) => key("mdadm.members"),
        RaidLayer::None => key("fs"),
    };
    if stack.disks() > pool {
        return Err(loc.err(
            at("members"),
            members_key,
            format!(
                "the layout needs {} disks, the lab has {pool}; raise disks or lower members/spares",
                stack.disks()
            ),
        ));
    }
    if degrade && !stack.survives_one_failure() {
        return Err(loc.err(
            at("degrade"),
            key("degrade"),
            format!(
                "{} cannot lose a member; degrade needs a redundant level (btrfs raid1/raid10/raid5/raid6 data and metadata, md 1/4/5/6/10)",
                stack.describe()
            ),
        ));
    }
    let member_size = match disks {
        Disks::Loop { size, .. } => Some(*size),
        Disks::Devices(d) => d[..stack.disks()]
            .iter()
            .filter_map(|p| crate::system::BlockDevice::from_path(p).map(|b| b.size_bytes))
            .min(),
        Disks::None => None,
    };
    if let Some(sz) = member_size {
        let top = stack.expected_usable(sz);
        if top < stack.fs.min_size() {
            return Err(loc.err(
                at("fs"),
                key("fs"),
                format!(
                    "{} needs at least {}, the stack gives {}; use bigger disks",
                    stack.fs.name(),
                    units::format_bytes(stack.fs.min_size()),
                    units::format_bytes(top)
                ),
            ));
        }
    }
    let fill = match &l.fill {
        None => None,
        Some(v) => {
            let f = size_of(v).map_err(|e| loc.err(at("fill"), key("fill"), e))?;
            if let Some(sz) = member_size {
                let cap = stack.expected_usable(sz) / 2;
                if f > cap {
                    return Err(loc.err(
                        at("fill"),
                        key("fill"),
                        format!(
                            "{} is more than half the layout's space ({}); lower fill",
                            units::format_bytes(f),
                            units::format_bytes(cap)
                        ),
                    ));
                }
            }
            Some(f)
        }
    };
    Ok(LayoutSpec {
        name,
        kind: LayoutKind::Stack(stack),
        degrade,
        rebuild,
        fill,
    })
}

fn parse_workloads(
    loc: &Locator,
    raw: Option<&Spanned<RawWorkloads>>,
    layouts: &[LayoutSpec],
) -> Result<LabWorkloads, SpecError> {
    let Some(sw) = raw else {
        let suite = profiles::profile("default", ProfileScale::default()).unwrap_or_default();
        return Ok(LabWorkloads {
            profiles: vec!["default".into()],
            suite,
            repeat: 3,
            baseline: None,
        });
    };
    let w = sw.get_ref();
    let start = sw.span().start;
    let at = |key: &str| Some(loc.line_of_key(start, "workloads", key));
    let mut scale = ProfileScale::default();
    if let Some(v) = &w.size {
        scale.size = Some(size_of(v).map_err(|e| loc.err(at("size"), "workloads.size", e))?);
    }
    if let Some(v) = &w.time {
        scale.runtime = Some(time_of(v).map_err(|e| loc.err(at("time"), "workloads.time", e))?);
    }
    let names = list_of(&w.profiles, split_commas);
    let mut suite = Suite {
        name: String::new(),
        workloads: Vec::new(),
    };
    for n in &names {
        let p = profiles::profile(n, scale).ok_or_else(|| {
            loc.err(
                at("profiles"),
                "workloads.profiles",
                format!(
                    "unknown profile '{n}' (known: {})",
                    profiles::profile_names().join(", ")
                ),
            )
        })?;
        suite.workloads.extend(p.workloads);
    }
    let defaults = w.defaults.clone().unwrap_or_default();
    for (i, item) in w.workload.iter().enumerate() {
        let merged = item.get_ref().clone().or(&defaults);
        let valid = merged.validate().map_err(|e| {
            loc.err(
                Some(loc.line_of_key(item.span().start, "workloads.workload", &e.key)),
                format!("workloads.workload[{}].{}", i + 1, e.key),
                e.msg,
            )
        })?;
        suite.workloads.push(valid);
    }
    let mut names_seen = std::collections::HashSet::new();
    for wl in &suite.workloads {
        if !names_seen.insert(wl.name.clone()) {
            return Err(loc.err(
                at("profiles"),
                "workloads",
                format!(
                    "two workloads are named '{}'; names must be unique",
                    wl.name
                ),
            ));
        }
    }
    let mut profiles_used = names;
    if suite.workloads.is_empty() {
        suite = profiles::profile("default", scale).unwrap_or_default();
        profiles_used = vec!["default".into()];
    }
    suite.name = if profiles_used.is_empty() {
        "lab".into()
    } else {
        profiles_used.join("+")
    };
    let repeat = match w.repeat {
        None => 3,
        Some(n) if (1..=1000).contains(&n) => n as u32,
        Some(_) => {
            return Err(loc.err(
                at("repeat"),
                "workloads.repeat",
                "must be between 1 and 1000",
            ));
        }
    };
    if let Some(b) = &w.baseline {
        if !layouts.iter().any(|l| &l.name == b) {
            return Err(loc.err(
                at("baseline"),
                "workloads.baseline",
                format!(
                    "'{b}' is not a layout of this lab (layouts: {})",
                    layouts
                        .iter()
                        .map(|l| l.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(LabWorkloads {
        profiles: profiles_used,
        suite,
        repeat,
        baseline: w.baseline.clone(),
    })
}

#[cfg(test)]
mod tests;
