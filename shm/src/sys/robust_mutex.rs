//! A process-shared, robust pthread mutex living in shared memory.
//!
//! If a process dies while holding it (even by SIGKILL), the kernel marks it, and the next locker gets
//! `EOWNERDEAD`: it then repairs the data the mutex protects (the caller's `recover` closure) and marks
//! the mutex consistent again. No other process is ever blocked forever by a dead holder.

use std::io;

/// Bytes reserved for a mutex in a shared layout. glibc's `pthread_mutex_t` takes 40 bytes on
/// x86_64.
pub(crate) const MUTEX_BYTES: usize = 64;
const _: () = assert!(std::mem::size_of::<libc::pthread_mutex_t>() <= MUTEX_BYTES);

/// A handle to a robust mutex at a fixed place in a mapping (see `Mapping::mutex`).
///
/// The handle borrows the mapping. So the handle and every guard of it end before the memory can
/// be unmapped.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RobustMutex<'a>(*mut libc::pthread_mutex_t, std::marker::PhantomData<&'a ()>);

// SAFETY: a process-shared pthread mutex is designed to be used from any thread of any process.
// The pointer targets shared memory that outlives the handle, as the handle's lifetime ensures
// (see `at`).
unsafe impl Send for RobustMutex<'_> {}
// SAFETY: as for `Send` above. All operations go through pthread calls that synchronise
// internally.
unsafe impl Sync for RobustMutex<'_> {}

/// Why a lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// A previous recovery failed: its process died, or the recovery did not mark the mutex
    /// consistent.
    #[error("shared-memory mutex is not recoverable")]
    NotRecoverable,
    /// Another thread held the mutex longer than any section it guards could take. Either the
    /// holder is stopped (by SIGSTOP or a debugger), or the lock is damaged. The caller gets this
    /// error instead of waiting forever.
    #[error("shared-memory mutex held for more than {} s by another live thread", HOLD_LIMIT.as_secs())]
    TimedOut,
    /// Any other pthread error.
    #[error("shared-memory mutex error: {0}")]
    Os(io::Error),
}

/// How long a lock call waits for a live holder. The sections these mutexes guard take
/// microseconds; a session sweep takes milliseconds.
#[cfg(not(test))]
pub(crate) const HOLD_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);
/// The hold limit in unit tests. It is short because the tests hold a lock past it.
#[cfg(test)]
pub(crate) const HOLD_LIMIT: std::time::Duration = std::time::Duration::from_secs(1);

impl<'a> RobustMutex<'a> {
    /// Initialises a new mutex at `ptr`. `Fresh::init_mutex` is the safe form of this function.
    ///
    /// # Safety
    /// `ptr` must point to `MUTEX_BYTES` writable, 8-aligned bytes of a shared mapping. No process
    /// may use those bytes as a mutex yet: the object is still private to its creator.
    // SAFETY: this function is unsafe to call because it writes a mutex at `ptr` (see the contract
    // above).
    pub(super) unsafe fn init(ptr: *mut u8) -> io::Result<()> {
        let m = ptr.cast::<libc::pthread_mutex_t>();
        // SAFETY: `pthread_mutexattr_init` initialises `attr` before its use, and `attr` is
        // destroyed afterwards. The caller's contract makes `m` valid and unused.
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

    /// Returns a handle to the mutex at `ptr`. `Mapping::mutex` is the safe form of this function.
    ///
    /// # Safety
    /// `ptr` must point to `MUTEX_BYTES` 8-aligned bytes of a shared mapping that stays mapped for
    /// `'a`.
    ///
    /// If another process wrote bytes there that are not a mutex, the pthread calls on them fail
    /// or misbehave. Also, glibc's robust-list bookkeeping writes through list pointers kept in
    /// those bytes. So a session trusts every process that can write its mappings. Only the
    /// session's user can write them: the files have mode 600, and a file that others may write
    /// is refused.
    // SAFETY: this function is unsafe to call because every later lock dereferences `ptr` (see the
    // contract above).
    pub(super) unsafe fn at(ptr: *mut u8) -> RobustMutex<'a> {
        RobustMutex(ptr.cast(), std::marker::PhantomData)
    }

    /// Locks the mutex.
    ///
    /// If the previous holder died, `recover` runs first, with the lock held, to restore the
    /// protected data. If `recover` returns true, the mutex is marked consistent. Otherwise the
    /// mutex is unlocked unrepaired, and `lock` returns [`LockError::NotRecoverable`]. The mutex
    /// then becomes not recoverable, so every later locker gets a clear error instead of
    /// half-repaired data.
    ///
    /// A busy lock is tried again a few times, with growing pauses, before the thread sleeps on it.
    /// The sections the mutex guards take well under a microsecond. Sleeping costs more: the waiter
    /// pays a futex wait, and the holder a futex wake. The futex is shared, so each of these calls
    /// also walks the page tables.
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
        // SAFETY: `CLOCK_REALTIME` is a valid clock id, and `deadline` is a writable `timespec`.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut deadline) } != 0 {
            return Err(LockError::Os(io::Error::last_os_error()));
        }
        deadline.tv_sec = deadline.tv_sec.saturating_add(HOLD_LIMIT.as_secs() as libc::time_t);
        // SAFETY: the pointer targets a live, initialised mutex, as for the trylock above.
        // `deadline` is a valid absolute `CLOCK_REALTIME` time.
        match unsafe { libc::pthread_mutex_timedlock(self.0, &deadline) } {
            libc::ETIMEDOUT => Err(LockError::TimedOut),
            rc => self.taken(rc, recover),
        }
    }

    /// Turns the result `rc` of a lock call into a guard or an error. `rc` is anything but `EBUSY`.
    fn taken(self, rc: libc::c_int, recover: impl FnOnce() -> bool) -> Result<Guard<'a>, LockError> {
        match rc {
            0 => Ok(Guard::new(self)),
            libc::EOWNERDEAD => {
                // The guard unlocks the mutex even if `recover` panics. Without a call to
                // `pthread_mutex_consistent`, the mutex then becomes not recoverable. That is
                // right, because the data was not repaired.
                let guard = Guard::new(self);
                if !recover() {
                    return Err(LockError::NotRecoverable);
                }
                // SAFETY: this thread holds the lock in the owner-died state, which is the only
                // state that `pthread_mutex_consistent` accepts.
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
    /// Nobody held the mutex; this thread holds it now.
    Acquired(Guard<'a>),
    /// A live thread holds the mutex.
    Busy,
    /// The holder died. This thread holds the mutex now, and the mutex is consistent again.
    OwnerDied(Guard<'a>),
}

impl<'a> RobustMutex<'a> {
    /// Locks without waiting, and tells a live holder from a dead one.
    ///
    /// A thread may end without unlocking, for example when its process is killed. The kernel then
    /// hands the lock to the next locker, marked owner-died.
    pub(crate) fn try_lock(self) -> Result<TryLock<'a>, LockError> {
        // SAFETY: the pointer targets a live, initialised mutex (contract of `at`).
        let rc = unsafe { libc::pthread_mutex_trylock(self.0) };
        match rc {
            0 => Ok(TryLock::Acquired(Guard::new(self))),
            libc::EBUSY => Ok(TryLock::Busy),
            libc::EOWNERDEAD => {
                let guard = Guard::new(self);
                // SAFETY: this thread holds the lock in the owner-died state, which is the only
                // state that `pthread_mutex_consistent` accepts.
                check(unsafe { libc::pthread_mutex_consistent(self.0) }).map_err(LockError::Os)?;
                Ok(TryLock::OwnerDied(guard))
            }
            libc::ENOTRECOVERABLE => Err(LockError::NotRecoverable),
            e => Err(LockError::Os(io::Error::from_raw_os_error(e))),
        }
    }
}

/// Holds the lock until dropped.
///
/// `Guard` is not `Send`, because only the thread that locked a pthread mutex may unlock it. An
/// unlock from another thread fails or, for a robust mutex, corrupts its owner list.
#[derive(Debug)]
pub(crate) struct Guard<'a>(RobustMutex<'a>, std::marker::PhantomData<*const ()>);

impl<'a> Guard<'a> {
    fn new(m: RobustMutex<'a>) -> Guard<'a> {
        Guard(m, std::marker::PhantomData)
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        // SAFETY: this guard exists, so this thread holds the lock. The guard cannot leave this
        // thread.
        let rc = unsafe { libc::pthread_mutex_unlock(self.0 .0) };
        if rc != 0 {
            log::error!("could not unlock a shared-memory mutex: {}", io::Error::from_raw_os_error(rc));
        }
    }
}

/// A compile-time check that [`Guard`] is not `Send`.
///
/// For a `Send` type, two impls of `NotSend` apply and its item `check` is ambiguous. The crate
/// therefore stops compiling if `Guard` ever becomes `Send`.
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
