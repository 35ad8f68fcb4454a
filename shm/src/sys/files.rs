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
    /// The file belongs to another user: its session is not ours, or someone squats its name.
    #[error(
        "{} belongs to uid {owner}, not to this process's uid {ours}: refusing to use it \
         (another user's session, or a squatter)",
        path.display()
    )]
    ForeignOwner {
        /// The file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// This process's effective uid.
        ours: u32,
    },
    /// A symbolic link where a shared-memory file should be.
    #[error(
        "{} is a symbolic link: refusing to follow it (shared-memory objects are never links; \
         remove it if it is not a trap)",
        path.display()
    )]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// A file of ours that others may write (made 0600; someone changed its mode): whatever it
    /// holds may have been written by another user.
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
    /// Something else than a regular file (a directory, a FIFO, a device).
    #[error("{} is not a regular file: refusing to use it", path.display())]
    NotAFile {
        /// The object.
        path: PathBuf,
    },
    /// The system refused access (the file's owner or mode does not let this user in).
    #[error(
        "{}: permission denied (it belongs to uid {owner} with mode {mode:03o}; this process runs as uid {ours})",
        path.display()
    )]
    PermissionDenied {
        /// The file.
        path: PathBuf,
        /// Its owner.
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
        /// Its size.
        size: u64,
        /// Free bytes in the file system.
        available: u64,
        /// The directory holding it.
        dir: PathBuf,
    },
    /// Any other failure of the system.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

impl FileError {
    /// Whether nothing exists under the name.
    pub fn is_not_found(&self) -> bool {
        self.kind() == Some(io::ErrorKind::NotFound)
    }

    /// The kind of a plain OS error (`None` for the refusals above).
    pub fn kind(&self) -> Option<io::ErrorKind> {
        match self {
            FileError::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }

    /// An OS error on `path`, told apart: a link met by `O_NOFOLLOW`, or a refused access, whose
    /// owner and mode say why.
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

/// This process's effective uid: the owner of every object it may use.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Opens an existing file for reading and writing, only if it is a regular file of this process's
/// effective uid, reached without following a link.
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

/// Creates a new, private file (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600: the umask can only take
/// bits away). Fails with `AlreadyExists` if anything, a link included, has the name.
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

/// A number for the file name of `path` (FNV-1a; never 0), written into a shared-memory object
/// when it is made and checked when it is opened: the file name holds the session's id, so an
/// object that another user hard-linked into our session under another name (a link needs no
/// permission on its target) is told apart from the session's own.
pub(crate) fn name_tag(path: &Path) -> u64 {
    let name = path.file_name().map_or(&b""[..], |n| std::os::unix::ffi::OsStrExt::as_bytes(n));
    name.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)).max(1)
}

/// Whether `tag`, read from the object mapped from `path`, was made for that name; the reason
/// otherwise.
pub(crate) fn check_name_tag(tag: u64, path: &Path) -> Result<(), String> {
    if tag == name_tag(path) {
        Ok(())
    } else {
        Err(format!("it was made under another name (tag {tag:#x}): a hard link from another session, refused"))
    }
}

/// Refuses `file` (opened from `path`) unless it is a regular file of this process's effective
/// uid, as the descriptor says (not the name, which may have changed since).
fn check_own(file: &File, path: &Path) -> Result<(), FileError> {
    let meta = file.metadata().map_err(|e| FileError::from_io(path, e))?;
    check_meta(&meta, path)?;
    // Ours, but others may write it: its contents are not ours alone (removing it is still fine).
    if meta.mode() & 0o022 != 0 {
        return Err(FileError::WritableByOthers { path: path.to_owned(), mode: meta.mode() & 0o777 });
    }
    Ok(())
}

/// Refuses what `meta` describes unless it is a regular file of this process's effective uid.
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

/// Refuses the name `path` unless it is this user's regular file, without opening it (before
/// removing what an earlier session left: never another user's file, never a link's target).
pub(crate) fn check_own_name(path: &Path) -> Result<(), FileError> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| FileError::from_io(path, e))?;
    if meta.file_type().is_symlink() {
        return Err(FileError::Symlink { path: path.to_owned() });
    }
    check_meta(&meta, path)
}

/// Removes the name `path` (a link itself, never its target); `Ok(false)` if nothing was there.
pub(crate) fn remove(path: &Path) -> Result<bool, FileError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(FileError::from_io(path, e)),
    }
}

/// Removes the name `path` if it is this user's regular file ([`check_own_name`]): what an earlier
/// session left. Another user's file, or a link, is refused and stays.
pub(crate) fn remove_own(path: &Path) -> Result<bool, FileError> {
    check_own_name(path)?;
    remove(path)
}

/// Bytes an unprivileged user may still write in the file system holding `dir`; `None` when the
/// file system reports no size at all (tmpfs mounted with `size=0` is unlimited).
pub(crate) fn available_space(dir: &Path) -> Result<Option<u64>, FileError> {
    let io_err = |source| FileError::Io { path: dir.to_owned(), source };
    let c =
        CString::new(dir.as_os_str().as_bytes()).map_err(|e| io_err(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
    // SAFETY: an all-zero statvfs is a valid value of this plain C struct; it is only written by
    // the call below.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a writable statvfs, both live across the call.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(FileError::from_io(dir, io::Error::last_os_error()));
    }
    if st.f_blocks == 0 {
        return Ok(None);
    }
    Ok(Some(st.f_bavail.saturating_mul(st.f_frsize)))
}

/// The directory of `path` (where its file system's free space is measured).
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

/// Gives `file`, created as `tmp` to become `name` (which errors name), `size` bytes and reserves
/// every page of them now: a file system that cannot hold them says so here, not later by SIGBUS in
/// whichever process first touches a page it has no room for. Where the file system cannot
/// reserve, the file only gets its length (its room was checked before).
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
        // Ours, but made writable by others: not used (it may be removed).
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
