//! Advisory whole-file locks (`flock`): the kernel drops them when the holder's file is closed,
//! which includes the holder dying. `fairmq-shmmonitor` holds one on the session's monitor file.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Takes an exclusive lock on `file` without waiting. Returns false if another open file holds a
/// lock.
pub(crate) fn try_exclusive(file: &File) -> io::Result<bool> {
    try_lock(file, libc::LOCK_EX)
}

/// Returns whether another open file holds an exclusive lock.
///
/// The probe takes a shared lock on `file`. The kernel releases that lock as soon as `file` is
/// closed.
pub(crate) fn held_by_other(file: &File) -> io::Result<bool> {
    try_lock(file, libc::LOCK_SH).map(|got| !got)
}

fn try_lock(file: &File, kind: libc::c_int) -> io::Result<bool> {
    // SAFETY: flock only reads the descriptor, which `file` keeps open for the call.
    let rc = unsafe { libc::flock(file.as_raw_fd(), kind | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}
