//! The few system calls no safe crate wraps for us (rustix covers the rest): the one place
//! outside the engines where iolab uses `unsafe`.
#![allow(unsafe_code)]

/// (user, system) CPU time of the whole process so far, ns.
pub fn rusage_self() -> (u64, u64) {
    // SAFETY: rusage is plain data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid out-pointer for the duration of the call.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}
