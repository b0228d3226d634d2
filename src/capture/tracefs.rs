//! A private tracefs instance (`instances/iolab-PID`): its own ring buffers, clock, filters
//! and enabled events, so nobody else's tracing is touched and ours goes away with one rmdir.
//!
//! The name carries the pid, which is the journal: a capture killed with SIGKILL leaves its
//! instance, and [`sweep`] (run by `iolab run --cleanup` and `iolab capture --cleanup`)
//! removes every `iolab-PID` instance whose process is gone. tracefs itself is found, or
//! mounted when it is not and unmounted after ([`super::mount`]).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::CaptureError;
use super::mount::{self, Release};

pub use super::mount::INSTANCE_PREFIX;

fn write_file(path: &Path, value: &str) -> Result<(), CaptureError> {
    std::fs::write(path, value).map_err(|e| {
        let hint = match e.raw_os_error() {
            Some(libc::EPERM | libc::EACCES) if !crate::system::is_root() => {
                " (capturing needs root)"
            }
            Some(libc::EPERM | libc::EACCES) => {
                " (the kernel refused it: is it in lockdown confidentiality mode? integrity mode allows tracepoints)"
            }
            Some(libc::EINVAL) => " (the kernel does not accept this value)",
            _ => "",
        };
        CaptureError::Tracefs(format!("cannot write '{value}' to {}: {e}{hint}", path.display()))
    })
}

/// One of our instances, torn down on drop or by [`Instance::close`] (events off, readers
/// closed, directory removed, then tracefs unmounted if iolab mounted it and nothing else
/// needs it).
pub struct Instance {
    dir: PathBuf,
    readers: Vec<(u32, File)>,
    page: usize,
    /// Torn down already (by `close`).
    closed: bool,
    /// This capture mounted tracefs.
    mounted: bool,
    /// What the teardown did with iolab's tracefs mount.
    release: Release,
}

impl Instance {
    /// Makes `instances/iolab-PID` with the `mono` clock (the same on every CPU and as
    /// `CLOCK_MONOTONIC`) and `buffer_kb` KiB of buffer per CPU, in tracefs where it is
    /// mounted, or mounted at `/sys/kernel/tracing` for the capture when it is nowhere.
    pub fn create(buffer_kb: u64) -> Result<Instance, CaptureError> {
        let lock = mount::lock();
        let (root, mounted) = mount::find_or_mount()?;
        let dir = root
            .join("instances")
            .join(format!("{INSTANCE_PREFIX}{}", std::process::id()));
        if dir.exists() {
            // Ours from an earlier capture in this very process (tests): start clean.
            let _ = std::fs::remove_dir(&dir);
        }
        if let Err(e) = std::fs::create_dir(&dir) {
            drop(lock);
            if mounted {
                mount::release();
            }
            return Err(CaptureError::Tracefs(format!(
                "cannot create the tracing instance {}: {e}{}",
                dir.display(),
                if crate::system::is_root() {
                    ""
                } else {
                    " (capturing needs root)"
                }
            )));
        }
        // From here the instance exists: another capture ending keeps the mount for it.
        drop(lock);
        // An error below drops `inst`, which removes the directory and unmounts what it mounted.
        let mut inst = Instance {
            dir,
            readers: Vec::new(),
            page: 4096,
            closed: false,
            mounted,
            release: Release::default(),
        };
        write_file(&inst.dir.join("trace_clock"), "mono")?;
        write_file(&inst.dir.join("buffer_size_kb"), &buffer_kb.to_string())?;
        if let Some(kb) = crate::system::read_trim(inst.dir.join("buffer_subbuf_size_kb"))
            .and_then(|s| s.parse::<usize>().ok())
        {
            inst.page = kb.max(4) * 1024;
        }
        Ok(inst)
    }

    /// The instance's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The `format` file text of `block/NAME`.
    pub fn format(&self, event: &str) -> Result<String, CaptureError> {
        let p = self.dir.join("events/block").join(event).join("format");
        std::fs::read_to_string(&p).map_err(|e| {
            CaptureError::Tracefs(format!(
                "the kernel has no block tracepoint {event} ({}: {e}); it needs CONFIG_BLK_DEV_IO_TRACE or CONFIG_EVENT_TRACING",
                p.display()
            ))
        })
    }

    /// Sets an event's filter (evaluated in the kernel: other devices' IOs never reach the
    /// buffer) and enables it.
    pub fn enable(&self, event: &str, filter: &str) -> Result<(), CaptureError> {
        let d = self.dir.join("events/block").join(event);
        write_file(&d.join("filter"), filter)?;
        write_file(&d.join("enable"), "1")
    }

    /// Opens every CPU's raw pipe, non-blocking.
    pub fn open_readers(&mut self) -> Result<(), CaptureError> {
        let per_cpu = self.dir.join("per_cpu");
        let rd = std::fs::read_dir(&per_cpu).map_err(|e| {
            CaptureError::Tracefs(format!("cannot list {}: {e}", per_cpu.display()))
        })?;
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(cpu) = name.strip_prefix("cpu").and_then(|c| c.parse::<u32>().ok()) else {
                continue;
            };
            let p = e.path().join("trace_pipe_raw");
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(&p)
                .map_err(|e| CaptureError::Tracefs(format!("cannot open {}: {e}", p.display())))?;
            self.readers.push((cpu, f));
        }
        self.readers.sort_by_key(|(c, _)| *c);
        if self.readers.is_empty() {
            return Err(CaptureError::Tracefs(format!(
                "{} lists no CPU buffers",
                per_cpu.display()
            )));
        }
        Ok(())
    }

    /// Reads every page waiting in every CPU's buffer; `each` gets each page's bytes.
    pub fn read_pages(&mut self, each: &mut impl FnMut(&[u8])) -> Result<(), CaptureError> {
        let mut buf = vec![0u8; self.page];
        for (cpu, f) in &mut self.readers {
            loop {
                match f.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => each(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(CaptureError::Tracefs(format!(
                            "reading CPU {cpu}'s trace buffer: {e}"
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Stops recording (the buffers keep what they hold, to be read out).
    pub fn stop(&self) {
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
    }

    /// Events the kernel dropped because a buffer was full (`overrun` plus `dropped events`
    /// of every CPU's `stats`).
    pub fn lost_events(&self) -> u64 {
        let mut lost = 0;
        for (cpu, _) in &self.readers {
            let p = self.dir.join(format!("per_cpu/cpu{cpu}/stats"));
            let text = std::fs::read_to_string(p).unwrap_or_default();
            for line in text.lines() {
                if let Some(v) = line
                    .strip_prefix("overrun:")
                    .or_else(|| line.strip_prefix("dropped events:"))
                {
                    lost += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
        lost
    }
}

impl Instance {
    /// Tears the instance down now and says what became of iolab's tracefs mount.
    pub fn close(mut self) -> Release {
        self.teardown();
        std::mem::take(&mut self.release)
    }

    fn teardown(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.stop();
        self.readers.clear();
        for ev in [
            "block_rq_issue",
            "block_rq_complete",
            "block_bio_queue",
            "block_bio_complete",
        ] {
            let _ = std::fs::write(self.dir.join("events/block").join(ev).join("enable"), "0");
        }
        // rmdir fails with EBUSY while a file in it is open: the readers are closed above.
        let _ = std::fs::remove_dir(&self.dir);
        if self.dir.starts_with(mount::MOUNT_POINT) {
            self.release = mount::release();
        }
        self.release.mounted = self.mounted;
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// What a sweep removed.
#[derive(Debug, Clone, Default)]
pub struct Swept {
    /// The instances of killed captures.
    pub instances: Vec<PathBuf>,
    /// The mount point of the tracefs iolab had mounted, when it was unmounted.
    pub unmounted: Option<PathBuf>,
}

/// Removes the instances of captures that are gone, then the tracefs mount iolab made when
/// nothing is left in it. Mounts nothing: with tracefs nowhere, there is nothing to sweep.
pub fn sweep() -> Swept {
    let mut swept = Swept::default();
    {
        let _lock = mount::lock();
        let Some(root) = mount::find() else {
            return swept;
        };
        let Ok(rd) = std::fs::read_dir(root.join("instances")) else {
            return swept;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix(INSTANCE_PREFIX)
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == std::process::id() || mount::alive(pid) {
                continue;
            }
            let dir = e.path();
            let _ = std::fs::write(dir.join("tracing_on"), "0");
            if std::fs::remove_dir(&dir).is_ok() {
                swept.instances.push(dir);
            }
        }
    }
    if mount::release().unmounted {
        swept.unmounted = Some(PathBuf::from(mount::MOUNT_POINT));
    }
    swept
}
