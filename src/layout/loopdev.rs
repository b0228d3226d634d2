//! Emulated disks: sparse backing files attached as loop devices.
//!
//! A loop device is found again by its backing file (from /sys/block/loopN/loop/backing_file),
//! never by number, so we only ever detach devices whose file we created.

use std::path::{Path, PathBuf};

use super::LayoutError;
use super::cmd::Runner;

/// Creates a sparse file of `size` bytes; refuses to overwrite an existing file.
pub fn create_backing(path: &Path, size: u64) -> Result<(), LayoutError> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| LayoutError::io("cannot create backing file", path, e))?;
    f.set_len(size)
        .map_err(|e| LayoutError::io("cannot size backing file", path, e))
}

/// Attaches a backing file to the first free loop device and returns the device.
/// `direct_io` avoids caching every block twice (in the loop device and in the backing file's
/// filesystem); it needs a backing filesystem that takes O_DIRECT (tmpfs does not).
pub fn attach(runner: &Runner, backing: &Path, direct_io: bool) -> Result<PathBuf, LayoutError> {
    let b = backing.to_string_lossy();
    let mut argv = vec!["losetup", "--find", "--show"];
    if direct_io {
        argv.push("--direct-io=on");
    }
    argv.push(&b);
    let out = runner.run(&argv)?;
    let dev = out.stdout.trim();
    if !dev.starts_with("/dev/") {
        return Err(LayoutError::Unexpected(format!(
            "losetup printed no device for {}: '{dev}'",
            backing.display()
        )));
    }
    Ok(PathBuf::from(dev))
}

/// Detaches a loop device.
pub fn detach(runner: &Runner, dev: &Path) -> Result<(), LayoutError> {
    runner.run(&["losetup", "-d", &dev.to_string_lossy()])?;
    Ok(())
}

/// Loop devices whose backing file is `backing` (a deleted file still counts).
pub fn devices_backed_by(backing: &Path) -> Vec<PathBuf> {
    let want = backing.to_string_lossy().to_string();
    let mut out = Vec::new();
    for name in crate::system::blockdev::all_names() {
        if !name.starts_with("loop") {
            continue;
        }
        let Some(f) = crate::system::read_trim(format!("/sys/block/{name}/loop/backing_file"))
        else {
            continue;
        };
        let f = f.strip_suffix(" (deleted)").unwrap_or(&f);
        if f == want {
            out.push(PathBuf::from("/dev").join(&name));
        }
    }
    out
}

/// Every attached loop device and its backing file (what `losetup -a` shows).
pub fn attached() -> Vec<(PathBuf, PathBuf)> {
    crate::system::blockdev::all_names()
        .into_iter()
        .filter(|n| n.starts_with("loop"))
        .filter_map(|n| {
            let f = crate::system::read_trim(format!("/sys/block/{n}/loop/backing_file"))?;
            Some((PathBuf::from("/dev").join(&n), PathBuf::from(f)))
        })
        .collect()
}

/// Whether loop devices can be made here (and why not).
pub fn available() -> Result<(), String> {
    if !Path::new("/dev/loop-control").exists() {
        return Err("no loop device support (/dev/loop-control missing)".into());
    }
    if crate::system::which("losetup").is_none() {
        return Err("losetup is not installed (apt-get install util-linux)".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_builds_the_command_line() {
        let r = Runner::recording();
        let d = attach(&r, Path::new("/var/tmp/d/iolab-x-0.img"), true).unwrap();
        assert_eq!(d, PathBuf::from("/dev/loop100"));
        detach(&r, &d).unwrap();
        assert_eq!(
            r.log(),
            vec![
                "losetup --find --show --direct-io=on /var/tmp/d/iolab-x-0.img",
                "losetup -d /dev/loop100"
            ]
        );
    }

    #[test]
    fn backing_files_are_sparse_and_never_overwritten() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.img");
        create_backing(&p, 1 << 30).unwrap();
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!(m.len(), 1 << 30);
        assert!(m.blocks() < 64, "not sparse: {} blocks", m.blocks());
        assert!(create_backing(&p, 1).is_err());
    }
}
