//! The test file: where IO workloads on a directory (or a short file) do their IO.
//!
//! A file made here is removed when the guard drops — on success, on error and after Ctrl-C —
//! and is laid out with incompressible data before anything reads it, so reads hit real
//! blocks rather than holes.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::target::{Target, TargetKind};

use super::data::DataGen;

/// Why preparing the test file failed.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// Creating, extending or syncing the file failed.
    #[error("cannot lay out the test file {path}: {source}{}", if source.raw_os_error() == Some(libc::ENOSPC) { " (disk full: lower --size)" } else { "" })]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Ctrl-C during layout.
    #[error("interrupted while laying out the test file")]
    Interrupted,
}

/// A file IO workloads run on; removes itself on drop when this run created it.
#[derive(Debug)]
pub struct TestFile {
    /// Its path.
    pub path: PathBuf,
    /// Bytes laid out (the largest working set asked so far).
    pub laid_out: u64,
    /// O_DIRECT works on it.
    pub direct_ok: bool,
    created: bool,
}

impl TestFile {
    /// The file for a target: a new file in a directory, the file itself, or the device.
    pub fn for_target(t: &Target) -> Result<TestFile, PrepareError> {
        let (path, created) = match t.info.kind {
            TargetKind::Directory => (
                t.path().join(format!("iolab-{}.dat", std::process::id())),
                true,
            ),
            TargetKind::File | TargetKind::BlockDevice => (t.path().to_path_buf(), false),
        };
        if created {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|source| PrepareError::Io {
                    path: path.clone(),
                    source,
                })?;
        }
        let laid_out = if t.info.kind == TargetKind::BlockDevice {
            t.device_size.unwrap_or(0)
        } else {
            std::fs::metadata(&path).map_or(0, |m| m.len())
        };
        let direct_ok = probe_direct_open(&path);
        Ok(TestFile {
            path,
            laid_out,
            direct_ok,
            created,
        })
    }

    /// True when this run created the file (and will remove it).
    pub fn is_ours(&self) -> bool {
        self.created
    }

    /// Extends the file to `size` bytes of incompressible data (never shrinks, never rewrites
    /// what is there). Block devices are never laid out.
    pub fn ensure_laid_out(
        &mut self,
        size: u64,
        stop: &dyn Fn() -> bool,
    ) -> Result<(), PrepareError> {
        if size <= self.laid_out {
            return Ok(());
        }
        const CHUNK: usize = 1 << 20;
        let err = |source| PrepareError::Io {
            path: self.path.clone(),
            source,
        };
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true);
        if self.direct_ok {
            opts.custom_flags(libc::O_DIRECT);
        }
        let mut f = opts.open(&self.path).map_err(err)?;
        let mut pool = crate::engine::BufferPool::new(CHUNK, 1)
            .map_err(|e| err(std::io::Error::other(e.to_string())))?;
        let mut data = DataGen::new(LAYOUT_SEED, false, CHUNK, 1);
        // Start at the last whole chunk so O_DIRECT offsets stay aligned.
        let mut off = self.laid_out / CHUNK as u64 * CHUNK as u64;
        use std::os::unix::fs::FileExt;
        while off < size {
            if stop() {
                return Err(PrepareError::Interrupted);
            }
            let n = ((size - off).min(CHUNK as u64) as usize).div_ceil(4096) * 4096;
            let buf = pool.slot_mut(0);
            data.refresh(buf, n);
            f.write_all_at(&buf[..n], off).map_err(err)?;
            off += n as u64;
        }
        f.flush().map_err(err)?;
        f.sync_data().map_err(err)?;
        self.laid_out = off.max(size);
        Ok(())
    }
}

/// Seed of layout data: fixed, so a laid-out file is the same bytes every time.
const LAYOUT_SEED: u64 = 0x1a_7e57;

impl Drop for TestFile {
    fn drop(&mut self) {
        if self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether `path` can be opened with O_DIRECT (tmpfs refuses with EINVAL).
pub fn probe_direct_open(path: &Path) -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .is_ok()
}
