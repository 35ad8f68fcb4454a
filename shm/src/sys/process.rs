//! Other processes, by pid.

/// Returns whether process `pid` exists.
///
/// Signal 0 checks the process without sending anything. A process of another user, which this
/// process may not signal, still counts as existing.
pub(crate) fn exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: kill with signal 0 sends nothing; it only reads the pid.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Sends signal `sig` to process `pid`.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn signal(pid: u32, sig: i32) -> std::io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: kill only reads its two integer arguments.
    match unsafe { libc::kill(pid, sig) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}
