//! Whether another local user could change what a path names.
//!
//! Two kinds of path need this check: a plugin library that the device would run, and a directory
//! that a control socket lives in. A path that another user could change is refused, never used.
//!
//! - [`check_owned`] checks a path, its symbolic links resolved, and its parents. The plugin
//!   manager uses it for libraries and search directories.
//! - [`check_parents`] checks only the parents. A parent that others may write passes only with
//!   the sticky bit (as `/tmp` has), because then no one may rename or remove what another user
//!   made.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Refuses `path` when a parent could be changed by another user: each must be a directory owned
/// by root or `euid`, and writable by others only with the sticky bit (as /tmp), where no one may
/// rename or remove what another user made.
pub(crate) fn check_parents(path: &Path, euid: u32) -> Result<(), String> {
    for parent in path.ancestors().skip(1).filter(|p| !p.as_os_str().is_empty()) {
        let m = std::fs::symlink_metadata(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        let sticky = m.mode() & 0o1000 != 0;
        let safe = m.file_type().is_dir() && (m.uid() == 0 || m.uid() == euid) && (m.mode() & 0o022 == 0 || sticky);
        if !safe {
            return Err(format!(
                "refusing {}: its parent {} could be changed by another user (owner {}, mode {:o})",
                path.display(),
                parent.display(),
                m.uid(),
                m.mode() & 0o7777
            ));
        }
    }
    Ok(())
}

/// Refuses `path` (resolved through symbolic links) unless it and its parents are owned by root
/// or `euid` and only those owners may write them: a search directory others may write could be
/// given a library of theirs, a library others may write could be changed.
pub(crate) fn check_owned(path: &Path, euid: u32) -> Result<(), String> {
    let real = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let m = std::fs::metadata(&real).map_err(|e| format!("{}: {e}", real.display()))?;
    if !(m.uid() == 0 || m.uid() == euid) || m.mode() & 0o022 != 0 {
        return Err(format!(
            "refusing {}: another user could change it (owner {}, mode {:o})",
            real.display(),
            m.uid(),
            m.mode() & 0o7777
        ));
    }
    check_parents(&real, euid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::{set_permissions, Permissions};
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn paths_others_could_change_are_refused() {
        let euid = nix::unistd::geteuid().as_raw();
        let base = tempfile::tempdir().unwrap();
        set_permissions(base.path(), Permissions::from_mode(0o755)).unwrap();
        let dir = base.path().join("plugins");
        std::fs::create_dir(&dir).unwrap();
        let lib = dir.join("libfairmq-plugin-x.so");
        std::fs::write(&lib, b"").unwrap();
        set_permissions(&lib, Permissions::from_mode(0o644)).unwrap();
        set_permissions(&dir, Permissions::from_mode(0o755)).unwrap();
        check_owned(&dir, euid).unwrap();
        check_owned(&lib, euid).unwrap();
        // Writable by others: the directory (even sticky: others could add a library of theirs),
        // the file. A file of ours in a sticky directory stays ours (no one else may replace it).
        set_permissions(&dir, Permissions::from_mode(0o1777)).unwrap();
        assert!(check_owned(&dir, euid).unwrap_err().contains("another user could change it"));
        check_owned(&lib, euid).unwrap();
        set_permissions(&dir, Permissions::from_mode(0o777)).unwrap();
        assert!(check_owned(&lib, euid).unwrap_err().contains("could be changed by another user"));
        set_permissions(&dir, Permissions::from_mode(0o755)).unwrap();
        set_permissions(&lib, Permissions::from_mode(0o666)).unwrap();
        assert!(check_owned(&lib, euid).unwrap_err().contains("another user could change it"));
        // Owned by another user (when not root, every file here is this user's).
        set_permissions(&lib, Permissions::from_mode(0o644)).unwrap();
        if euid == 0 {
            std::os::unix::fs::chown(&lib, Some(65534), None).unwrap();
            assert!(check_owned(&lib, euid).unwrap_err().contains("owner 65534"));
        }
        // Through a symbolic link: the target is what counts.
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        check_owned(&link, euid).unwrap();
    }
}
