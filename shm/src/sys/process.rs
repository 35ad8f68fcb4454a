//! Other processes, by pid.

/// Whether process `pid` exists (signal 0 checks without sending; a process of another user that
/// we may not signal exists too).
pub(crate) fn exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: kill with signal 0 sends nothing; it only reads the pid.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
