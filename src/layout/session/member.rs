//! The layers under each member, one mechanism for all of them: each disk the
//! pooling layer takes (members, spares, every replacement) gets the stack's member layers
//! made on it bottom first, and the pooling layer sees the top device. The disk-level dm
//! wrappers faults use stay under them; a fault's offset on a member is carried down through
//! them to the disk ([`Session::disk_offset`]). Every device is an `Owned::Dm`, recorded
//! before it is made, so teardown (after the arrays, newest first) and `--cleanup` remove
//! them; the LUKS key file is recorded as a file of ours.

use super::super::layer::{GuestTool, device_mapper, tools};
use super::super::member::{CRYPTSETUP_BIN, Integrity, Luks};
use crate::stack::Layer;
use std::path::{Path, PathBuf};

use super::super::LayoutError;
use super::super::member as cmds;
use super::super::state::Owned;
use super::steps::{LayerSteps, LayoutDisks, StorageLayer, Volume};
use super::{Built, OnDisk, Session};
use crate::stack::{MemberLayer, Stack};

/// One disk's layers: the top device the pooling layer uses and the disk under them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Under {
    /// The top device (`/dev/mapper/iolab-LAB-0-m1-luks`).
    pub top: PathBuf,
    /// The disk (or its fault wrapper) under the layers.
    pub disk: PathBuf,
    /// Each layer's dm name, bottom first.
    pub names: Vec<(MemberLayer, String)>,
}

/// The steps a member layer has in the stack walk: none — it is made per disk before the
/// pooling layer ([`Session::under_members`]), so the walk passes over it.
pub(super) struct MemberSteps<'a>(pub &'a MemberLayer);

impl LayerSteps for MemberSteps<'_> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn build(
        &self,
        _s: &mut Session,
        _on: &LayoutDisks<'_>,
        _vol: &mut Volume,
    ) -> Result<(), LayoutError> {
        Ok(())
    }

    fn assemble(
        &self,
        _s: &mut Session,
        _d: &OnDisk<'_>,
        _vol: &mut Volume,
    ) -> Result<(), LayoutError> {
        Ok(())
    }
}

impl Session {
    /// The key file LUKS members of layout `index` open with: in the lab's private state
    /// directory (the mount base in a dry run), mode 0600, made once and removed at teardown.
    fn luks_key(&mut self, index: usize) -> Result<PathBuf, LayoutError> {
        let dir = self
            .state_path()
            .and_then(Path::parent)
            .map_or_else(|| self.mount_base.clone(), Path::to_path_buf);
        let key = dir.join(format!("iolab-{}-{index}.key", self.lab_id));
        let have = self
            .objects
            .iter()
            .any(|o| matches!(o, Owned::BackingFile { path } if *path == key));
        if have {
            return Ok(key);
        }
        self.push(Owned::BackingFile { path: key.clone() })?;
        if self.runner.is_dry_run() {
            return Ok(key);
        }
        let mut bytes = [0u8; 64];
        getrandom(&mut bytes)?;
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&key)
            .map_err(|e| LayoutError::io("cannot create the LUKS key file", &key, e))?;
        f.write_all(&bytes)
            .map_err(|e| LayoutError::io("cannot write the LUKS key file", &key, e))?;
        Ok(key)
    }

    /// Makes (`fresh`: formats, then opens; else only opens) the stack's member layers on
    /// `disk`, bottom first; `tag` names this disk's devices within layout `index`.
    pub(super) fn member_stack(
        &mut self,
        stack: &Stack,
        index: usize,
        tag: &str,
        disk: &Path,
        fresh: bool,
    ) -> Result<Under, LayoutError> {
        let mut dev = disk.to_path_buf();
        let mut names = Vec::new();
        for m in stack.member_layers() {
            super::check_stop()?;
            let suffix = match m {
                MemberLayer::Integrity(_) => "integrity",
                MemberLayer::Luks(_) => "luks",
            };
            let name = format!("iolab-{}-{index}-{tag}-{suffix}", self.lab_id);
            self.push(Owned::Dm { name: name.clone() })?;
            match m {
                MemberLayer::Integrity(o) => {
                    if fresh {
                        self.runner
                            .run(&cmds::integrity_format_argv(&dev, o, false))?;
                    }
                    self.runner
                        .run(&cmds::integrity_open_argv(&dev, &name, o))?;
                }
                MemberLayer::Luks(o) => {
                    let key = self.luks_key(index)?;
                    if fresh {
                        self.runner.run(&cmds::luks_format_argv(&dev, &key, o))?;
                    }
                    self.runner.run(&cmds::luks_open_argv(&dev, &name, &key))?;
                }
            }
            // Without udev nothing may have made the node.
            let _ = self.runner.run(&["dmsetup", "mknodes", &name]);
            names.push((m.clone(), name.clone()));
            dev = Path::new("/dev/mapper").join(&name);
        }
        Ok(Under {
            top: dev,
            disk: disk.to_path_buf(),
            names,
        })
    }

    /// Builds the member layers on the first `n` of `devs` (members and spares) in place;
    /// returns each disk's layers and the smallest top device's size (`member_size` when the
    /// stack has none, or in a dry run).
    pub(super) fn under_members(
        &mut self,
        stack: &Stack,
        index: usize,
        devs: &mut [PathBuf],
        n: usize,
        member_size: u64,
    ) -> Result<(Vec<Under>, u64), LayoutError> {
        if stack.member_layers().is_empty() {
            return Ok((Vec::new(), member_size));
        }
        let mut out = Vec::new();
        for (k, d) in devs.iter_mut().enumerate().take(n) {
            let u = self.member_stack(stack, index, &format!("m{k}"), d, true)?;
            d.clone_from(&u.top);
            out.push(u);
        }
        let size = if self.runner.is_dry_run() {
            member_size
        } else {
            out.iter()
                .filter_map(|u| crate::system::BlockDevice::from_path(&u.top))
                .map(|b| b.size_bytes)
                .min()
                .unwrap_or(member_size)
        };
        Ok((out, size))
    }

    /// Where byte `at` of member `top` (the device the pooling layer uses) lies on the disk
    /// under its member layers, and that disk: through each layer's layout, top first. The
    /// member's own device and `at` when it has no layers.
    pub(super) fn disk_offset(
        &self,
        b: &Built,
        top: &Path,
        at: u64,
    ) -> Result<(PathBuf, u64), LayoutError> {
        let Some(u) = b.under.iter().find(|u| u.top == top) else {
            return Ok((top.to_path_buf(), at));
        };
        if self.runner.is_dry_run() {
            return Ok((u.disk.clone(), at));
        }
        let mut at = at;
        for (i, (m, name)) in u.names.iter().enumerate().rev() {
            let below = match i {
                0 => u.disk.clone(),
                _ => Path::new("/dev/mapper").join(&u.names[i - 1].1),
            };
            at = match m {
                MemberLayer::Luks(_) => {
                    let t = self.runner.run(&["dmsetup", "table", name])?;
                    at + cmds::crypt_offset(&t.stdout).ok_or_else(|| {
                        LayoutError::Unexpected(format!("{name}: no crypt offset in its table"))
                    })?
                }
                MemberLayer::Integrity(_) => {
                    // Journalled writes reach their place when the journal is written out: a
                    // suspend does that, so the bytes are where the map says.
                    self.runner.run(&["dmsetup", "suspend", name])?;
                    self.runner.run(&["dmsetup", "resume", name])?;
                    let d =
                        self.runner
                            .run(&["integritysetup", "dump", &below.to_string_lossy()])?;
                    let g = cmds::parse_dump(&d.stdout).ok_or_else(|| {
                        LayoutError::Unexpected(format!(
                            "{}: integritysetup dump says no layout",
                            below.display()
                        ))
                    })?;
                    g.disk_offset(at)
                }
            };
        }
        Ok((u.disk.clone(), at))
    }
}

impl Built {
    /// The disks under `tops`' member layers, in order (what a power cut's second boot
    /// opens the layers on again): `tops` themselves when the stack has none.
    pub fn disks_under(&self, tops: &[PathBuf]) -> Vec<PathBuf> {
        tops.iter().map(|t| self.disk_under(t)).collect()
    }

    /// The disk (or its fault wrapper) under member `top`'s layers; `top` itself when it has
    /// none.
    pub(super) fn disk_under(&self, top: &Path) -> PathBuf {
        self.under
            .iter()
            .find(|u| u.top == top)
            .map_or_else(|| top.to_path_buf(), |u| u.disk.clone())
    }
}

/// Fills `buf` from the kernel's random source.
fn getrandom(buf: &mut [u8]) -> Result<(), LayoutError> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .map_err(|e| LayoutError::io("cannot read", Path::new("/dev/urandom"), e))
}

impl StorageLayer for Integrity {
    fn name(&self) -> &'static str {
        "dm-integrity"
    }

    fn steps<'a>(&self, layer: &'a Layer) -> Option<Box<dyn LayerSteps + 'a>> {
        match layer {
            Layer::Member(m @ MemberLayer::Integrity(_)) => Some(Box::new(MemberSteps(m))),
            _ => None,
        }
    }

    fn detect(&self) -> Result<(), String> {
        if !device_mapper() {
            return Err("the kernel has no device-mapper".into());
        }
        tools(&["integritysetup"], CRYPTSETUP_BIN)
    }

    /// The target, and the checksums the kernel cannot load on demand in the guest (crc32c and
    /// the SHAs come with every guest or are built in).
    fn vm_modules(&self) -> &'static [&'static str] {
        &["dm_integrity", "crc32_generic"]
    }

    fn vm_tools(&self) -> &'static [GuestTool] {
        &[GuestTool {
            name: "integritysetup",
            package: CRYPTSETUP_BIN,
            required: false,
        }]
    }
}

impl StorageLayer for Luks {
    fn name(&self) -> &'static str {
        "luks"
    }

    fn steps<'a>(&self, layer: &'a Layer) -> Option<Box<dyn LayerSteps + 'a>> {
        match layer {
            Layer::Member(m @ MemberLayer::Luks(_)) => Some(Box::new(MemberSteps(m))),
            _ => None,
        }
    }

    fn detect(&self) -> Result<(), String> {
        if !device_mapper() {
            return Err("the kernel has no device-mapper".into());
        }
        tools(&["cryptsetup"], CRYPTSETUP_BIN)
    }

    /// dm-crypt and `aes-xts-plain64` (the AES-NI implementation when the CPU has it, the
    /// generic one otherwise).
    fn vm_modules(&self) -> &'static [&'static str] {
        &["dm_crypt", "xts", "aes_generic", "aesni_intel"]
    }

    fn vm_tools(&self) -> &'static [GuestTool] {
        &[GuestTool {
            name: "cryptsetup",
            package: CRYPTSETUP_BIN,
            required: false,
        }]
    }
}
