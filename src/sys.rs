//! The few system calls no safe crate wraps for us (rustix covers the rest): the one place
//! outside the engines where iolab uses `unsafe`.

/// (user, system) CPU time of the whole process so far, ns.
pub fn rusage_self() -> (u64, u64) {
    // SAFETY: rusage is plain data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid out-pointer for the duration of the call.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &raw mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

/// CPU time (user, system) in ns of the children this process has waited for: the ssh
/// clients of `iolab run --hosts` count toward the controller's cost.
pub fn rusage_children() -> (u64, u64) {
    // SAFETY: rusage is plain data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid out-pointer for the duration of the call.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &raw mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

/// The calling thread's CPU time (user + system, ns) and the times it was preempted
/// (involuntary context switches: runnable, and another task got its CPU).
pub fn rusage_thread() -> (u64, u64) {
    // SAFETY: rusage is plain data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid out-pointer for the duration of the call.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &raw mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    (ns(ru.ru_utime) + ns(ru.ru_stime), ru.ru_nivcsw as u64)
}

/// A local date and time: (year, month 1-12, day, hour, minute, second), or `None` when the
/// C library cannot convert the timestamp.
pub fn local_time(unix_secs: i64) -> Option<(i32, u32, u32, u32, u32, u32)> {
    let secs = unix_secs as libc::time_t;
    // SAFETY: `tm` is a plain C struct for which all-zero bytes are a valid value.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the duration of the call; localtime_r is the
    // thread-safe variant and writes only into `tm`.
    if unsafe { libc::localtime_r(&raw const secs, &raw mut tm) }.is_null() {
        return None;
    }
    let u = |v: libc::c_int| u32::try_from(v).unwrap_or(0);
    Some((
        tm.tm_year + 1900,
        u(tm.tm_mon + 1),
        u(tm.tm_mday),
        u(tm.tm_hour),
        u(tm.tm_min),
        u(tm.tm_sec),
    ))
}

/// Makes a child process die with iolab (SIGKILL when iolab dies, even by SIGKILL), so a tool
/// never finishes a mkfs or a mount behind the back of `iolab lab --cleanup`.
pub fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // The parent as the child must see it: when iolab dies between the fork and the prctl, the
    // death signal is never armed and the child is already re-parented, so it must not run.
    // SAFETY: getpid cannot fail and touches no memory.
    let me = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and only calls prctl, getppid
    // and _exit, which are async-signal-safe; it touches no memory of the parent.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            if libc::getppid() != me {
                libc::_exit(137);
            }
            Ok(())
        });
    }
}

/// Stops the process with SIGSTOP sent to the calling thread (`pthread_kill`), for the pause
/// points of [`crate::pause`]: a SIGSTOP sent to the process may be taken by another thread,
/// and the caller runs on until that thread gets to stop everyone (a copy thread of
/// `--push` wrote kilobytes past its pause point that way). Sent to itself, the caller stops
/// before it returns, and the whole process with it.
pub fn stop_this_thread() {
    // SAFETY: pthread_self() is the calling thread, alive for the call; SIGSTOP has no handler.
    unsafe {
        libc::pthread_kill(libc::pthread_self(), libc::SIGSTOP);
    }
}

/// One extent of a file as the filesystem maps it (`FS_IOC_FIEMAP`), bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileExtent {
    /// Offset in the file.
    pub logical: u64,
    /// Offset on the filesystem's block device.
    pub physical: u64,
    /// Length.
    pub length: u64,
    /// `FIEMAP_EXTENT_*` flags (unknown location, delayed allocation, encoded, inline...).
    pub flags: u32,
}

/// `FIEMAP_EXTENT_LAST`: the file's last extent.
const FIEMAP_EXTENT_LAST: u32 = 0x1;
/// Flags of an extent whose bytes are not plainly at `physical` on the device: unknown or
/// delayed location, encoded (compressed), encrypted, not block aligned, inline in metadata,
/// packed into a tail.
pub const FIEMAP_EXTENT_NOT_PLAIN: u32 = 0x2 | 0x4 | 0x8 | 0x80 | 0x100 | 0x200 | 0x400;

/// Where the bytes of the open file `f` are on its filesystem's device: the extent map the
/// filesystem keeps (`FS_IOC_FIEMAP`, flushed first with `FIEMAP_FLAG_SYNC`). The lab maps a
/// file of its data set through md's layout to a member and sector with it; no safe crate
/// wraps this ioctl.
pub fn fiemap(f: &std::fs::File) -> std::io::Result<Vec<FileExtent>> {
    use std::os::fd::AsRawFd;
    // struct fiemap (32 bytes) followed by struct fiemap_extent[N] (56 bytes each).
    const HEADER: usize = 32;
    const EXTENT: usize = 56;
    const BATCH: usize = 64;
    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
    const FIEMAP_FLAG_SYNC: u32 = 0x1;
    let mut out = Vec::new();
    let mut start = 0u64;
    loop {
        // u64 words keep the buffer aligned for the kernel's u64 fields.
        let mut buf = vec![0u64; (HEADER + BATCH * EXTENT) / 8];
        buf[0] = start;
        buf[1] = u64::MAX - start;
        // fm_flags (low half of word 2), fm_extent_count (low half of word 3).
        buf[2] = u64::from(FIEMAP_FLAG_SYNC);
        buf[3] = BATCH as u64;
        // SAFETY: buf is a writable, 8-byte aligned struct fiemap with room for BATCH extents,
        // as fm_extent_count says; the kernel writes only inside it, and it outlives the call.
        let rc = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_FIEMAP, buf.as_mut_ptr()) };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mapped = (buf[2] >> 32) as usize;
        let mut last = false;
        for i in 0..mapped.min(BATCH) {
            let w = (HEADER + i * EXTENT) / 8;
            let e = FileExtent {
                logical: buf[w],
                physical: buf[w + 1],
                length: buf[w + 2],
                flags: buf[w + 5] as u32,
            };
            last |= e.flags & FIEMAP_EXTENT_LAST != 0;
            start = e.logical + e.length;
            out.push(e);
        }
        if mapped == 0 || last {
            return Ok(out);
        }
    }
}

/// The next run of data in the open file `f` at or after `pos`, as `(start, end)` bytes
/// (`SEEK_DATA` then `SEEK_HOLE`); `None` when only a hole is left. The VM lab copies its
/// sparse disk files with it (copying their holes would fill the host's disk); tmpfs has no
/// FIEMAP but answers these.
pub fn next_data(f: &std::fs::File, pos: u64) -> Option<(u64, u64)> {
    use std::os::fd::AsRawFd;
    let pos = libc::off_t::try_from(pos).ok()?;
    // SAFETY: lseek on a descriptor `f` keeps open; no memory is passed.
    let data = unsafe { libc::lseek(f.as_raw_fd(), pos, libc::SEEK_DATA) };
    if data < 0 {
        return None;
    }
    // SAFETY: as above.
    let hole = unsafe { libc::lseek(f.as_raw_fd(), data, libc::SEEK_HOLE) };
    let end = if hole < 0 {
        f.metadata().ok()?.len()
    } else {
        hole as u64
    };
    Some((data as u64, end))
}
