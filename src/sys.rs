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
