//! A process-shared, robust pthread mutex living in shared memory.
//!
//! If a process dies while holding it (even by SIGKILL), the kernel marks it, and the next locker gets
//! `EOWNERDEAD`: it then repairs the data the mutex protects (the caller's `recover` closure) and marks
//! the mutex consistent again. No other process is ever blocked forever by a dead holder.

use std::io;

/// Bytes reserved for a mutex in a shared layout (glibc's `pthread_mutex_t` is 40 on x86_64).
pub(crate) const MUTEX_BYTES: usize = 64;
const _: () = assert!(std::mem::size_of::<libc::pthread_mutex_t>() <= MUTEX_BYTES);

/// A handle to a robust mutex at a fixed place in a mapping, borrowed from the mapping (see
/// `Mapping::mutex`): it, and every guard of it, ends before the memory can be unmapped.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RobustMutex<'a>(*mut libc::pthread_mutex_t, std::marker::PhantomData<&'a ()>);

// SAFETY: a process-shared pthread mutex is designed to be used from any thread of any process; the
// pointer targets shared memory that outlives the handle (its lifetime, see `at`).
unsafe impl Send for RobustMutex<'_> {}
// SAFETY: as above: all operations go through pthread calls that synchronise internally.
unsafe impl Sync for RobustMutex<'_> {}

/// Why a lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// A previous recovery failed (its process died or it did not mark the mutex consistent).
    #[error("shared-memory mutex is not recoverable")]
    NotRecoverable,
    /// Held longer than any section it guards could take: its holder is stopped (SIGSTOP, a
    /// debugger) or the lock is damaged. An error instead of a wait for ever.
    #[error("shared-memory mutex held for more than {} s by another live thread", HOLD_LIMIT.as_secs())]
    TimedOut,
    /// Any other pthread error.
    #[error("shared-memory mutex error: {0}")]
    Os(io::Error),
}

/// How long a lock call waits for a live holder. The sections these mutexes guard take
/// microseconds (a session sweep milliseconds).
#[cfg(not(test))]
pub(crate) const HOLD_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);
/// Short in unit tests, which hold a lock past it.
#[cfg(test)]
pub(crate) const HOLD_LIMIT: std::time::Duration = std::time::Duration::from_secs(1);

impl<'a> RobustMutex<'a> {
    /// Initialises a new mutex at `ptr` (see `Fresh::init_mutex`, its safe form).
    ///
    /// # Safety
    /// `ptr` must point to `MUTEX_BYTES` writable, 8-aligned bytes of a shared mapping that no process
    /// uses as a mutex yet (the object is still private to its creator).
    // SAFETY: unsafe to call because `ptr` is written as a mutex (contract above).
    pub(super) unsafe fn init(ptr: *mut u8) -> io::Result<()> {
        let m = ptr.cast::<libc::pthread_mutex_t>();
        // SAFETY: attr is initialised by pthread_mutexattr_init before use and destroyed after; `m` is
        // valid and unused per the caller's contract.
        unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            check(libc::pthread_mutexattr_init(&mut attr))?;
            let r = (|| {
                check(libc::pthread_mutexattr_setpshared(&mut attr, libc::PTHREAD_PROCESS_SHARED))?;
                check(libc::pthread_mutexattr_setrobust(&mut attr, libc::PTHREAD_MUTEX_ROBUST))?;
                check(libc::pthread_mutex_init(m, &attr))
            })();
            libc::pthread_mutexattr_destroy(&mut attr);
            r
        }
    }

    /// A handle to the mutex at `ptr` (see `Mapping::mutex`, its safe form).
    ///
    /// # Safety
    /// `ptr` must point to `MUTEX_BYTES` 8-aligned bytes of a shared mapping that stays mapped for
    /// `'a`. Bytes that are no mutex (another process wrote them) make the pthread calls on them
    /// fail or misbehave, and glibc's robust-list bookkeeping writes through list pointers kept in
    /// those bytes: a session trusts every process that can write its mappings, which only its
    /// user can (files of mode 600, refused when others may write them).
    // SAFETY: unsafe to call because every later lock dereferences `ptr` (contract above).
    pub(super) unsafe fn at(ptr: *mut u8) -> RobustMutex<'a> {
        RobustMutex(ptr.cast(), std::marker::PhantomData)
    }

    /// Locks. If the previous holder died, `recover` runs first (still holding the lock) to restore
    /// the protected data; the mutex is then marked consistent if it says it did, else unlocked
    /// unrepaired (so it becomes not recoverable: every later locker gets a clear error instead of
    /// half-repaired data) and [`LockError::NotRecoverable`] returned.
    ///
    /// A busy lock is tried again a few times with growing pauses before the thread sleeps on it:
    /// the sections it guards take well under a microsecond, while sleeping costs the waiter a
    /// futex wait and the holder a futex wake (with a page-table walk, the futex being shared).
    pub(crate) fn lock(self, recover: impl FnOnce() -> bool) -> Result<Guard<'a>, LockError> {
        const TRIES: u32 = 8;
        for i in 0..TRIES {
            // SAFETY: the pointer targets a live, initialised mutex (contract of `at`).
            match unsafe { libc::pthread_mutex_trylock(self.0) } {
                libc::EBUSY => (0..1u32 << i).for_each(|_| std::hint::spin_loop()),
                rc => return self.taken(rc, recover),
            }
        }
        let mut deadline = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid clock id and a writable timespec.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut deadline) } != 0 {
            return Err(LockError::Os(io::Error::last_os_error()));
        }
        deadline.tv_sec = deadline.tv_sec.saturating_add(HOLD_LIMIT.as_secs() as libc::time_t);
        // SAFETY: as above; `deadline` is a valid absolute CLOCK_REALTIME time.
        match unsafe { libc::pthread_mutex_timedlock(self.0, &deadline) } {
            libc::ETIMEDOUT => Err(LockError::TimedOut),
            rc => self.taken(rc, recover),
        }
    }

    /// The outcome of a lock call that returned `rc` (anything but `EBUSY`).
    fn taken(self, rc: libc::c_int, recover: impl FnOnce() -> bool) -> Result<Guard<'a>, LockError> {
        match rc {
            0 => Ok(Guard::new(self)),
            libc::EOWNERDEAD => {
                // The guard unlocks even if `recover` panics; without `consistent` the mutex then
                // becomes not recoverable, which is right: the data was not repaired.
                let guard = Guard::new(self);
                if !recover() {
                    return Err(LockError::NotRecoverable);
                }
                // SAFETY: we hold the lock in the owner-died state, the only state this call accepts.
                check(unsafe { libc::pthread_mutex_consistent(self.0) }).map_err(LockError::Os)?;
                Ok(guard)
            }
            libc::ENOTRECOVERABLE => Err(LockError::NotRecoverable),
            e => Err(LockError::Os(io::Error::from_raw_os_error(e))),
        }
    }
}

/// What [`RobustMutex::try_lock`] found.
pub(crate) enum TryLock<'a> {
    /// Nobody held it; now we do.
    Acquired(Guard<'a>),
    /// A live thread holds it.
    Busy,
    /// Its holder died; we hold it now (and it is consistent again).
    OwnerDied(Guard<'a>),
}

impl<'a> RobustMutex<'a> {
    /// Locks without waiting, telling a live holder from a dead one: the kernel hands the lock of a
    /// thread that ended without unlocking (a killed process) to the next locker, marked owner-died.
    pub(crate) fn try_lock(self) -> Result<TryLock<'a>, LockError> {
        // SAFETY: the pointer targets a live, initialised mutex (contract of `at`).
        let rc = unsafe { libc::pthread_mutex_trylock(self.0) };
        match rc {
            0 => Ok(TryLock::Acquired(Guard::new(self))),
            libc::EBUSY => Ok(TryLock::Busy),
            libc::EOWNERDEAD => {
                let guard = Guard::new(self);
                // SAFETY: we hold the lock in the owner-died state, the only state this call accepts.
                check(unsafe { libc::pthread_mutex_consistent(self.0) }).map_err(LockError::Os)?;
                Ok(TryLock::OwnerDied(guard))
            }
            libc::ENOTRECOVERABLE => Err(LockError::NotRecoverable),
            e => Err(LockError::Os(io::Error::from_raw_os_error(e))),
        }
    }
}

/// Holds the lock until dropped. Not `Send`: a pthread mutex is unlocked by the thread that locked
/// it (another thread's unlock fails, or, for a robust mutex, corrupts its owner list).
#[derive(Debug)]
pub(crate) struct Guard<'a>(RobustMutex<'a>, std::marker::PhantomData<*const ()>);

impl<'a> Guard<'a> {
    fn new(m: RobustMutex<'a>) -> Guard<'a> {
        Guard(m, std::marker::PhantomData)
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        // SAFETY: this guard's existence means this thread holds the lock (it cannot leave it).
        let rc = unsafe { libc::pthread_mutex_unlock(self.0 .0) };
        if rc != 0 {
            log::error!("could not unlock a shared-memory mutex: {}", io::Error::from_raw_os_error(rc));
        }
    }
}

/// Compile-time check that a [`Guard`] is not `Send`: the trait's item is ambiguous for a `Send`
/// type (two impls apply), so this stops compiling if one ever is.
trait NotSend<A> {
    fn check() {}
}
impl<T: ?Sized> NotSend<()> for T {}
impl<T: ?Sized + Send> NotSend<u8> for T {}
const _: fn() = <Guard<'static> as NotSend<_>>::check;

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}
