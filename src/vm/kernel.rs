//! The guest kernel: the installed `linux-image-amd64` (not necessarily the running kernel),
//! with its uncompressed ELF `vmlinux` extracted from the bzImage's xz stream once per machine
//! and cached by kernel version — qemu boots an uncompressed kernel seconds faster under TCG.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::VmError;

/// An installed kernel and its modules.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// Version (`6.1.0-56-amd64`).
    pub version: String,
    /// `/boot/vmlinuz-VERSION`.
    pub bzimage: PathBuf,
    /// `/lib/modules/VERSION`.
    pub modules: PathBuf,
}

const XZ_MAGIC: &[u8] = &[0xfd, b'7', b'z', b'X', b'Z', 0x00];

/// Compares kernel versions by their numeric parts (`6.1.0-56` < `6.1.0-102`).
fn version_key(v: &str) -> Vec<u64> {
    v.split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The newest `/boot/vmlinuz-*` whose modules are installed.
pub fn find() -> Result<Kernel, VmError> {
    find_in(Path::new("/boot"), Path::new("/lib/modules"))
}

fn find_in(boot: &Path, modules: &Path) -> Result<Kernel, VmError> {
    let missing = || {
        VmError::Missing(format!(
            "--vm needs a Linux kernel with its modules (no {}/vmlinuz-* with {}/VERSION/modules.dep): apt-get install linux-image-amd64",
            boot.display(),
            modules.display()
        ))
    };
    let mut found: Vec<Kernel> = std::fs::read_dir(boot)
        .map_err(|_| missing())?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let version = name.strip_prefix("vmlinuz-")?.to_string();
            let m = modules.join(&version);
            m.join("modules.dep").is_file().then(|| Kernel {
                bzimage: e.path(),
                modules: m,
                version,
            })
        })
        .collect();
    found.sort_by_key(|k| version_key(&k.version));
    found.pop().ok_or_else(missing)
}

/// The offset of the xz stream in a bzImage.
pub fn xz_offset(data: &[u8]) -> Option<usize> {
    data.windows(XZ_MAGIC.len()).position(|w| w == XZ_MAGIC)
}

/// The cached `vmlinux` of `k`, extracted on first use (`xz -dc` from the magic on).
pub fn vmlinux(k: &Kernel, cache: &Path) -> Result<PathBuf, VmError> {
    let dir = cache.join(&k.version);
    let out = dir.join("vmlinux");
    if out.is_file() {
        return Ok(out);
    }
    std::fs::create_dir_all(&dir).map_err(|e| VmError::io("cannot create", &dir, e))?;
    let data = std::fs::read(&k.bzimage).map_err(|e| VmError::io("cannot read", &k.bzimage, e))?;
    let off = xz_offset(&data).ok_or_else(|| {
        VmError::Tool(format!(
            "{} holds no xz stream: cannot extract vmlinux (only xz-compressed kernels are supported)",
            k.bzimage.display()
        ))
    })?;
    let tmp = dir.join(format!("vmlinux.tmp{}", std::process::id()));
    let file = std::fs::File::create(&tmp).map_err(|e| VmError::io("cannot create", &tmp, e))?;
    let mut child = Command::new("xz")
        .args(["-dc", "--single-stream"])
        .stdin(Stdio::piped())
        .stdout(file)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| VmError::Tool(format!("cannot run xz: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        // xz stops reading after the stream; a broken pipe then is expected.
        let _ = stdin.write_all(&data[off..]);
    }
    let _ = child.wait();
    let ok = std::fs::read(&tmp).is_ok_and(|d| d.starts_with(b"\x7fELF"));
    if !ok {
        let _ = std::fs::remove_file(&tmp);
        return Err(VmError::Tool(format!(
            "xz did not give an ELF vmlinux from {} (offset {off})",
            k.bzimage.display()
        )));
    }
    std::fs::rename(&tmp, &out).map_err(|e| VmError::io("cannot write", &out, e))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_newest_kernel_with_modules() {
        let d = tempfile::tempdir().unwrap();
        let boot = d.path().join("boot");
        let lm = d.path().join("lib/modules");
        std::fs::create_dir_all(&boot).unwrap();
        assert!(
            matches!(find_in(&boot, &lm), Err(VmError::Missing(m)) if m.contains("linux-image-amd64"))
        );
        for v in ["6.1.0-9-amd64", "6.1.0-56-amd64", "6.5.0-1-amd64"] {
            std::fs::write(boot.join(format!("vmlinuz-{v}")), b"x").unwrap();
        }
        for v in ["6.1.0-9-amd64", "6.1.0-56-amd64"] {
            std::fs::create_dir_all(lm.join(v)).unwrap();
            std::fs::write(lm.join(v).join("modules.dep"), b"").unwrap();
        }
        assert_eq!(find_in(&boot, &lm).unwrap().version, "6.1.0-56-amd64");
    }

    #[test]
    fn finds_the_xz_magic() {
        let mut d = vec![0u8; 100];
        d.extend_from_slice(XZ_MAGIC);
        assert_eq!(xz_offset(&d), Some(100));
        assert_eq!(xz_offset(&[0u8; 10]), None);
    }
}
