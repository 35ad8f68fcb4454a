//! The operating-system layer: the only unsafe code of the crate besides message data access.
//! Safe opening and creation of shared-memory files, their mappings, robust process-shared
//! mutexes, futexes, file locks, the monotonic clock and other processes' existence.

pub(crate) mod clock;
pub(crate) mod files;
pub(crate) mod flock;
pub(crate) mod futex;
pub(crate) mod layout;
pub(crate) mod mapping;
pub(crate) mod process;
pub(crate) mod robust_mutex;

#[cfg(not(all(target_os = "linux", target_endian = "little", target_pointer_width = "64")))]
compile_error!("fairmq-shm supports 64-bit little-endian Linux only (futex words, /dev/shm, robust mutexes)");
