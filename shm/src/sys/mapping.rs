//! Shared-memory files under `/dev/shm`, mapped read-write and shared.
//!
//! Objects are created race-free: the creator builds and initialises the file under a private
//! temporary name, then `link`s it to its final name, which fails if another process got there first.
//! So an object under its final name is always fully initialised, and concurrent creators never touch
//! each other's files. Files are opened and created as `files` says: only this user's, never
//! through a link, private, with their room reserved.

use super::files::{self, FileError};
use super::layout::MutexPlace;
use super::robust_mutex::RobustMutex;
use memmap2::{MmapOptions, MmapRaw};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

/// A shared, writable mapping of a whole shared-memory file.
pub(crate) struct Mapping {
    map: MmapRaw,
    path: PathBuf,
    _file: File,
}

impl std::fmt::Debug for Mapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapping").field("path", &self.path).field("len", &self.len()).finish()
    }
}

/// Outcome of [`Mapping::create`].
pub(crate) enum Created {
    /// This call created the object.
    New(Mapping),
    /// Another process had already created the object. This call left no file of its own behind.
    Exists,
}

/// A mapping being created, still private to its creator (see [`Mapping::create`]).
/// `Fresh` is the only place where mutexes are made, because no other process can use a mutex in
/// the mapping yet.
pub(crate) struct Fresh<'a>(&'a Mapping);

impl std::ops::Deref for Fresh<'_> {
    type Target = Mapping;

    fn deref(&self) -> &Mapping {
        self.0
    }
}

impl Fresh<'_> {
    /// Makes a robust process-shared mutex at `place`, a place of this mapping's layout.
    pub(crate) fn init_mutex(&self, place: &MutexPlace) -> io::Result<()> {
        let ptr = self.0.mutex_place(place).ok_or_else(|| io::Error::other("mutex outside the mapping"))?;
        // SAFETY: the place is inside the mapping and aligned (checked above). The object is not
        // linked under its name yet, so no process uses those bytes as a mutex.
        unsafe { RobustMutex::init(ptr) }
    }
}

/// Returns whether `path` still names the open `file`. It does not if the name was unlinked, or
/// replaced by another file or by a symbolic link to `file`.
pub(crate) fn names_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(ours), Ok(named)) => ours.dev() == named.dev() && ours.ino() == named.ino(),
        _ => false,
    }
}

impl Mapping {
    /// Creates the object `path` with `size` bytes. `init` initialises the object before it
    /// becomes visible under its name.
    ///
    /// `tmp` is a name in the same directory, unique to this process and call. `create` first
    /// checks the size against the free space of the file system, and then reserves every page
    /// (see `files::reserve`).
    pub(crate) fn create(
        path: &Path,
        tmp: &Path,
        size: usize,
        init: impl FnOnce(&Fresh<'_>) -> io::Result<()>,
    ) -> Result<Created, FileError> {
        let result = Mapping::create_as(path, tmp, size, init);
        let _ = files::remove(tmp);
        match result {
            // There is no room for a second copy, but the object already exists. The caller opens
            // the existing object.
            Err(FileError::NoSpace { .. }) if std::fs::symlink_metadata(path).is_ok() => Ok(Created::Exists),
            other => other,
        }
    }

    fn create_as(
        path: &Path,
        tmp: &Path,
        size: usize,
        init: impl FnOnce(&Fresh<'_>) -> io::Result<()>,
    ) -> Result<Created, FileError> {
        files::check_room(path, size as u64)?;
        files::remove(tmp)?;
        let file = files::create_new(tmp)?;
        files::reserve(&file, tmp, path, size as u64)?;
        let mapping = Mapping::map(file, tmp, false)?;
        init(&Fresh(&mapping)).map_err(|e| FileError::from_io(tmp, e))?;
        match std::fs::hard_link(tmp, path) {
            Ok(()) => Ok(Created::New(Mapping { path: path.to_owned(), ..mapping })),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Created::Exists),
            Err(e) => Err(FileError::from_io(path, e)),
        }
    }

    /// Opens an existing object. The mapping has the size of the file.
    pub(crate) fn open(path: &Path) -> Result<Mapping, FileError> {
        Mapping::open_with(path, false)
    }

    /// Opens an existing object, which must be this user's regular file and not a link.
    /// With `populate`, all its pages are faulted in at once (`MAP_POPULATE`).
    pub(crate) fn open_with(path: &Path, populate: bool) -> Result<Mapping, FileError> {
        Mapping::map(files::open_own(path)?, path, populate)
    }

    fn map(file: File, path: &Path, populate: bool) -> Result<Mapping, FileError> {
        let io_err = |e| FileError::from_io(path, e);
        let len = usize::try_from(file.metadata().map_err(io_err)?.len())
            .map_err(|_| io_err(io::Error::other("object too large")))?;
        if len == 0 {
            return Err(io_err(io::Error::new(io::ErrorKind::InvalidData, "empty shared-memory object")));
        }
        let mut options = MmapOptions::new();
        options.len(len);
        if populate {
            options.populate();
        }
        let map = options.map_raw(&file).map_err(io_err)?;
        Ok(Mapping { map, path: path.to_owned(), _file: file })
    }

    /// Size in bytes.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The file this maps.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Returns whether the path still names the mapped object, that is, whether nobody unlinked or
    /// replaced it.
    pub(crate) fn still_linked(&self) -> bool {
        names_file(&self._file, &self.path)
    }

    /// The address, page aligned, where this process mapped the object. Use it only for address
    /// arithmetic in this process, and never store it in shared memory.
    pub(crate) fn base(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    /// The whole mapping as 64-bit atomic words.
    ///
    /// Every word of shared bookkeeping is accessed this way. Indexing is bounds-checked, and no
    /// plain load or store can race with another process.
    pub(crate) fn words(&self) -> &[AtomicU64] {
        // SAFETY: the mapping is page aligned, so it is 8-aligned. `len / 8` whole words lie inside
        // it, and it stays mapped while `self` is borrowed. `AtomicU64` has the size and alignment
        // of `u64`, and any bit pattern is valid. Its interior mutability allows concurrent
        // writers, such as other processes.
        unsafe { std::slice::from_raw_parts(self.base().cast::<AtomicU64>(), self.len() / 8) }
    }

    /// Returns a pointer to `len` bytes at `offset`, or `None` if that range is not inside the
    /// mapping.
    pub(crate) fn range_ptr(&self, offset: usize, len: usize) -> Option<*mut u8> {
        let end = offset.checked_add(len)?;
        if end > self.len() {
            return None;
        }
        // SAFETY: the check above implies `offset <= len()`, so the result stays inside the mapping
        // or points one byte past its end.
        Some(unsafe { self.base().add(offset) })
    }

    /// Returns the robust mutex at `place`, a place of this mapping's layout.
    ///
    /// The mutex was made when the object was created (see [`Fresh::init_mutex`]). The returned
    /// handle borrows the mapping, so it cannot outlive the mapping.
    ///
    /// Panics if `place` lies outside the mapping. Callers only pass places of their own layouts.
    pub(crate) fn mutex(&self, place: &MutexPlace) -> RobustMutex<'_> {
        let ptr = self.mutex_place(place).expect("a mutex inside the mapping");
        // SAFETY: the place is inside this mapping and aligned, and the handle borrows the mapping.
        unsafe { RobustMutex::at(ptr) }
    }

    /// Returns the address of `place` if it lies inside this mapping. Places are 8-aligned by their
    /// type.
    fn mutex_place(&self, place: &MutexPlace) -> Option<*mut u8> {
        let offset = (place.as_ptr() as usize).checked_sub(self.base() as usize)?;
        self.range_ptr(offset, std::mem::size_of::<MutexPlace>())
    }

    /// Views the mapping, from its start, as layout `T`. Returns `None` if the mapping is shorter
    /// than `T`.
    pub(crate) fn view<T: super::layout::Words>(&self) -> Option<&T> {
        super::layout::view(self.words())
    }

    /// Writes zeros over `len` bytes at `offset`. Writing touches those pages, and so allocates
    /// them.
    pub(crate) fn zero(&self, offset: usize, len: usize) -> io::Result<()> {
        let p = self.range_ptr(offset, len).ok_or_else(|| io::Error::other("zero: range outside mapping"))?;
        // SAFETY: the range is inside the mapping (checked above). Callers zero only memory that
        // nobody uses yet: free blocks under the allocator lock, or a segment before it is
        // published.
        unsafe { std::ptr::write_bytes(p, 0, len) };
        Ok(())
    }

    /// Locks the whole mapping into RAM (`mlock`).
    pub(crate) fn lock_in_memory(&self) -> io::Result<()> {
        self.map.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn create_is_exclusive_and_initialised_before_visible() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("obj");
        let first = Mapping::create(&path, &dir.path().join("t1"), 4096, |m| {
            m.words()[0].store(42, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
        let Created::New(a) = first else { panic!("first creator must win") };
        let second = Mapping::create(&path, &dir.path().join("t2"), 4096, |_| Ok(())).unwrap();
        assert!(matches!(second, Created::Exists));
        let b = Mapping::open(&path).unwrap();
        assert_eq!(b.words()[0].load(Ordering::Relaxed), 42);
        b.words()[1].store(7, Ordering::Relaxed);
        assert_eq!(a.words()[1].load(Ordering::Relaxed), 7, "both map the same memory");
        assert!(!dir.path().join("t1").exists() && !dir.path().join("t2").exists(), "no temp files left");
        assert!(a.range_ptr(4000, 96).is_some() && a.range_ptr(4000, 97).is_none());
        assert!(a.range_ptr(usize::MAX, 2).is_none());
    }
}

#[cfg(test)]
mod lock_tests {
    use super::*;
    use crate::session::layout::{Layout, MANAGEMENT_SIZE};
    use crate::sys::robust_mutex::{LockError, HOLD_LIMIT};

    /// A live holder may never let go, for example when SIGSTOP or a debugger stops it. The next
    /// locker then gets an error after the hold limit, instead of waiting forever.
    #[test]
    fn a_lock_held_past_the_limit_is_an_error_not_a_wait_for_ever() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mng");
        let created = Mapping::create(&path, &dir.path().join("t"), MANAGEMENT_SIZE, |m| {
            let l: &Layout = m.view().expect("the layout fits");
            m.init_mutex(&l.lock)
        })
        .unwrap();
        let Created::New(map) = created else { panic!("new") };
        let map = std::sync::Arc::new(map);
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let holder = {
            let map = map.clone();
            std::thread::spawn(move || {
                let l: &Layout = map.view().unwrap();
                let _g = map.mutex(&l.lock).lock(|| true).unwrap();
                held_tx.send(()).unwrap();
                let _ = done_rx.recv(); // holds until the other thread gave up
            })
        };
        held_rx.recv().unwrap();
        let l: &Layout = map.view().unwrap();
        let started = std::time::Instant::now();
        let got = map.mutex(&l.lock).lock(|| true);
        assert!(matches!(got, Err(LockError::TimedOut)), "{got:?}");
        assert!(started.elapsed() >= HOLD_LIMIT, "it waited the limit");
        done_tx.send(()).unwrap();
        holder.join().unwrap();
        assert!(map.mutex(&l.lock).lock(|| true).is_ok(), "free again once released");
    }
}
