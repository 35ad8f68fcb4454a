//! Opening, creating and removing the files that hold a session's shared memory, safely.
//!
//! `/dev/shm` is writable by every user, so a name there may hold another user's file (a squatter
//! who guessed a session's name, or another user's session under an explicit `--shmid`) or a
//! symbolic link to anything. A session's objects are therefore only ever this process's effective
//! user's regular files, reached without following a link (`O_NOFOLLOW`) and checked on the opened
//! descriptor (`fstat`), so swapping the name after a check changes nothing. New files are private
//! (mode 0600, created with `O_EXCL`); their size is checked against the free space of their file
//! system and their pages are reserved at once (`posix_fallocate`), so a mapping of them can never
//! raise SIGBUS later for want of room.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why a shared-memory file could not be opened, created or removed, or must not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The file belongs to another user. It is another user's session, or someone squats its name.
    #[error(
        "{} belongs to uid {owner}, not to this process's uid {ours}: refusing to use it \
         (another user's session, or a squatter)",
        path.display()
    )]
    ForeignOwner {
        /// The file.
        path: PathBuf,
        /// The uid of the file's owner.
        owner: u32,
        /// This process's effective uid.
        ours: u32,
    },
    /// A symbolic link stands where a shared-memory file should be.
    #[error(
        "{} is a symbolic link: refusing to follow it (shared-memory objects are never links; \
         remove it if it is not a trap)",
        path.display()
    )]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// The file is ours, but other users may write it. It was created with mode 0600, so someone
    /// changed its mode since. Another user may have written what it holds.
    #[error(
        "{} may be written by other users (mode {mode:03o}; shared-memory files are 600): refusing to use it",
        path.display()
    )]
    WritableByOthers {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The object is not a regular file (for example a directory, a FIFO or a device).
    #[error("{} is not a regular file: refusing to use it", path.display())]
    NotAFile {
        /// The object.
        path: PathBuf,
    },
    /// The system refused access, because the file's owner or mode does not let this user in.
    #[error(
        "{}: permission denied (it belongs to uid {owner} with mode {mode:03o}; this process runs as uid {ours})",
        path.display()
    )]
    PermissionDenied {
        /// The file.
        path: PathBuf,
        /// The uid of the file's owner.
        owner: u32,
        /// Its permission bits.
        mode: u32,
        /// This process's effective uid.
        ours: u32,
    },
    /// The file system has no room for a new file of this size.
    #[error(
        "{}: {size} bytes do not fit in {}, which has {available} bytes available",
        path.display(),
        dir.display()
    )]
    NoSpace {
        /// The file that was to be created.
        path: PathBuf,
        /// The size of the new file, in bytes.
        size: u64,
        /// Free bytes in the file system.
        available: u64,
        /// The directory that was to hold the file.
        dir: PathBuf,
    },
    /// Any other error of the operating system.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

impl FileError {
    /// Returns whether nothing exists under the name.
    pub fn is_not_found(&self) -> bool {
        self.kind() == Some(io::ErrorKind::NotFound)
    }

    /// Returns the kind of a plain OS error (`FileError::Io`). Returns `None` for the other
    /// variants, which are refusals.
    pub fn kind(&self) -> Option<io::ErrorKind> {
        match self {
            FileError::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }

    /// Converts an OS error on `path` into the variant that explains it.
    ///
    /// `ELOOP` means that `O_NOFOLLOW` met a symbolic link, so it becomes `FileError::Symlink`.
    /// `EACCES` and `EPERM` become `FileError::PermissionDenied`, whose owner and mode say why the
    /// system refused access.
    pub(crate) fn from_io(path: &Path, source: io::Error) -> FileError {
        let path = path.to_owned();
        match source.raw_os_error() {
            Some(libc::ELOOP) => FileError::Symlink { path },
            Some(libc::EACCES | libc::EPERM) => match std::fs::symlink_metadata(&path) {
                Ok(m) => FileError::PermissionDenied { owner: m.uid(), mode: m.mode() & 0o7777, ours: euid(), path },
                Err(_) => FileError::Io { path, source },
            },
            _ => FileError::Io { path, source },
        }
    }
}

/// Returns this process's effective uid. This uid owns every object that the process may use.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Opens an existing file for reading and writing.
///
/// `open_own` refuses the file unless it is a regular file owned by this process's effective uid,
/// which other users may not write. It never follows a symbolic link to reach the file.
pub(crate) fn open_own(path: &Path) -> Result<File, FileError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| FileError::from_io(path, e))?;
    check_own(&file, path)?;
    Ok(file)
}

/// Creates a new private file, with `O_CREAT|O_EXCL|O_NOFOLLOW` and mode 0600.
///
/// The umask can only take permission bits away, so the file is never more open than 0600.
/// `create_new` fails with `AlreadyExists` if anything has the name, a symbolic link included.
pub(crate) fn create_new(path: &Path) -> Result<File, FileError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| FileError::from_io(path, e))
}

/// Returns a number for the file name of `path` (an FNV-1a hash, never 0).
///
/// The creator of a shared-memory object writes this tag into it, and every opener checks it. The
/// file name holds the session's id. Another user may hard-link an object into our session under
/// another name, because a hard link needs no permission on its target. The tag tells such an
/// object apart from the session's own objects.
pub(crate) fn name_tag(path: &Path) -> u64 {
    let name = path.file_name().map_or(&b""[..], |n| std::os::unix::ffi::OsStrExt::as_bytes(n));
    name.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)).max(1)
}

/// Checks that `tag`, read from the object mapped from `path`, was made for that file name.
/// Returns the reason for refusal otherwise.
pub(crate) fn check_name_tag(tag: u64, path: &Path) -> Result<(), String> {
    if tag == name_tag(path) {
        Ok(())
    } else {
        Err(format!("it was made under another name (tag {tag:#x}): a hard link from another session, refused"))
    }
}

/// Refuses `file`, opened from `path`, unless it is a regular file owned by this process's
/// effective uid. The check asks the open descriptor, not the name, because the name may have
/// changed since the file was opened.
fn check_own(file: &File, path: &Path) -> Result<(), FileError> {
    let meta = file.metadata().map_err(|e| FileError::from_io(path, e))?;
    check_meta(&meta, path)?;
    // The file is ours, but other users may write it, so its contents are not ours alone.
    // Removing such a file is still fine.
    if meta.mode() & 0o022 != 0 {
        return Err(FileError::WritableByOthers { path: path.to_owned(), mode: meta.mode() & 0o777 });
    }
    Ok(())
}

/// Refuses what `meta` describes unless it is a regular file owned by this process's effective
/// uid.
fn check_meta(meta: &std::fs::Metadata, path: &Path) -> Result<(), FileError> {
    if !meta.file_type().is_file() {
        return Err(FileError::NotAFile { path: path.to_owned() });
    }
    let ours = euid();
    if meta.uid() != ours {
        return Err(FileError::ForeignOwner { path: path.to_owned(), owner: meta.uid(), ours });
    }
    Ok(())
}

/// Refuses the name `path` unless it is a regular file owned by this user. The check does not
/// open the file.
///
/// Callers check a name before they remove what an earlier session left. So they never remove
/// another user's file, and never act on the target of a symbolic link.
pub(crate) fn check_own_name(path: &Path) -> Result<(), FileError> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| FileError::from_io(path, e))?;
    if meta.file_type().is_symlink() {
        return Err(FileError::Symlink { path: path.to_owned() });
    }
    check_meta(&meta, path)
}

/// Removes the name `path`. If `path` is a symbolic link, `remove` removes the link itself,
/// never its target. Returns `Ok(false)` if nothing had that name.
pub(crate) fn remove(path: &Path) -> Result<bool, FileError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(FileError::from_io(path, e)),
    }
}

/// Removes the name `path` if it is a regular file owned by this user ([`check_own_name`]).
/// Callers use it to remove what an earlier session left. Another user's file, or a link, is
/// refused and stays in place.
pub(crate) fn remove_own(path: &Path) -> Result<bool, FileError> {
    check_own_name(path)?;
    remove(path)
}

/// Returns how many bytes an unprivileged user may still write in the file system that holds
/// `dir`. Returns `None` when the file system reports no size at all: a tmpfs mounted with
/// `size=0` has no limit.
pub(crate) fn available_space(dir: &Path) -> Result<Option<u64>, FileError> {
    let io_err = |source| FileError::Io { path: dir.to_owned(), source };
    let c =
        CString::new(dir.as_os_str().as_bytes()).map_err(|e| io_err(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
    // SAFETY: `statvfs` is a plain C struct, for which all-zero bytes are a valid value. Only the
    // `statvfs` call below writes to `st`.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` is a writable `statvfs`. Both live across the
    // call.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(FileError::from_io(dir, io::Error::last_os_error()));
    }
    if st.f_blocks == 0 {
        return Ok(None);
    }
    Ok(Some(st.f_bavail.saturating_mul(st.f_frsize)))
}

/// Returns the directory of `path`. The free space of the file system is measured there.
fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Refuses to create `path` with `size` bytes when its file system has less room than that.
pub(crate) fn check_room(path: &Path, size: u64) -> Result<(), FileError> {
    let dir = dir_of(path);
    match available_space(&dir)? {
        Some(available) if available < size => Err(FileError::NoSpace { path: path.to_owned(), size, available, dir }),
        _ => Ok(()),
    }
}

/// Gives `file` a length of `size` bytes and reserves every page of them now.
///
/// `file` was created as `tmp` and is to become `name`. Errors name `name` when the size does not
/// fit, and `tmp` otherwise. A file system that cannot hold the pages says so here. Without the
/// reservation, the first process to touch a page with no room for it would get a SIGBUS later.
/// Where the file system cannot reserve pages, `reserve` only sets the length. The caller checked
/// the room before.
pub(crate) fn reserve(file: &File, tmp: &Path, name: &Path, size: u64) -> Result<(), FileError> {
    let too_large = || FileError::from_io(name, io::Error::from_raw_os_error(libc::EFBIG));
    let len = libc::off_t::try_from(size).map_err(|_| too_large())?;
    loop {
        // SAFETY: posix_fallocate only uses the descriptor, which `file` keeps open for the call.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
        match rc {
            0 => return Ok(()),
            libc::EINTR => continue,
            libc::ENOSPC => {
                let dir = dir_of(name);
                let available = available_space(&dir).ok().flatten().unwrap_or(0);
                return Err(FileError::NoSpace { path: name.to_owned(), size, available, dir });
            }
            libc::EFBIG => return Err(too_large()),
            libc::EOPNOTSUPP => {
                log::debug!("{}: the file system cannot reserve space; only sizing it", tmp.display());
                return file.set_len(size).map_err(|e| FileError::from_io(tmp, e));
            }
            e => return Err(FileError::from_io(tmp, io::Error::from_raw_os_error(e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_other_kinds_and_missing_files_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        let link = dir.path().join("link");
        drop(create_new(&target).unwrap());
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(open_own(&link), Err(FileError::Symlink { .. })));
        assert!(matches!(check_own_name(&link), Err(FileError::Symlink { .. })));
        assert!(matches!(create_new(&link), Err(e) if e.kind() == Some(io::ErrorKind::AlreadyExists)));
        assert!(matches!(open_own(dir.path()), Err(FileError::NotAFile { .. }) | Err(FileError::Io { .. })));
        assert!(open_own(&dir.path().join("missing")).unwrap_err().is_not_found());
        assert!(remove(&link).unwrap() && target.exists(), "removing a link leaves its target");
        assert!(!remove(&link).unwrap());
        open_own(&target).unwrap();
        check_own_name(&target).unwrap();
        // A file of ours that others may write is not used, but it may still be removed.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o622)).unwrap();
        assert!(matches!(open_own(&target), Err(FileError::WritableByOthers { mode: 0o622, .. })));
        check_own_name(&target).unwrap();
    }

    #[test]
    fn new_files_are_private_and_reserved() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("obj");
        let f = create_new(&path).unwrap();
        reserve(&f, &path, &path, 1 << 20).unwrap();
        let m = f.metadata().unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
        assert_eq!(m.len(), 1 << 20);
        assert!(m.blocks() * 512 >= 1 << 20, "the pages are allocated, not sparse: {} blocks", m.blocks());
        let huge = dir.path().join("huge");
        assert!(matches!(check_room(&huge, u64::MAX), Err(FileError::NoSpace { size: u64::MAX, .. })));
        assert!(!huge.exists());
    }
}
