//! The open-files limit of a device program, raised to its hard limit at start.
//!
//! Every connection, segment and region holds a file descriptor. The common soft limit of 1024
//! is what a flood of idle connections exhausts first, and libzmq then fails to accept (see
//! `vendor/zeromq-src/PATCHES.md`). [`raise_open_files_limit`] raises the soft limit to the hard
//! limit, or to the kernel's maximum where the hard limit is unlimited.

use nix::sys::resource::{getrlimit, setrlimit, Resource, RLIM_INFINITY};

/// The most descriptors a process may have (`/proc/sys/fs/nr_open`), for an unlimited hard limit.
fn kernel_maximum() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/nr_open").ok()?.trim().parse().ok()
}

/// Raises the soft limit on open files to the hard limit (to the kernel's maximum where the hard
/// limit is unlimited); returns the limits before and after, and logs what it did.
pub(crate) fn raise_open_files_limit() -> Option<(u64, u64)> {
    let (soft, hard) = match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok(l) => l,
        Err(e) => {
            log::warn!("could not read the open files limit: {e}");
            return None;
        }
    };
    let target = if hard == RLIM_INFINITY { kernel_maximum().unwrap_or(soft).max(soft) } else { hard };
    if soft >= target {
        return Some((soft, soft));
    }
    match setrlimit(Resource::RLIMIT_NOFILE, target, hard) {
        Ok(()) => {
            log::debug!("open files limit raised from {soft} to {target}");
            Some((soft, target))
        }
        Err(e) => {
            log::warn!("could not raise the open files limit from {soft} to {target}: {e}");
            Some((soft, soft))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_reaches_the_hard_limit() {
        let (_, after) = raise_open_files_limit().expect("limits readable");
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        assert_eq!(soft, after);
        assert!(hard == RLIM_INFINITY || soft == hard, "soft {soft}, hard {hard}");
    }
}
