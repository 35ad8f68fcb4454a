//! The operating-system layer, behind safe interfaces.
//!
//! This module holds the crate's unsafe code. Outside it, unsafe code only makes slices of message
//! payloads and takes raw user buffers. The submodules:
//!
//! - [`files`]: opening, creating and removing shared-memory files safely.
//! - [`mapping`]: the mappings of those files.
//! - [`layout`]: typed views of the layouts in shared memory.
//! - [`robust_mutex`]: robust process-shared mutexes.
//! - [`futex`]: futex waits and wakes.
//! - [`flock`]: file locks.
//! - [`clock`]: the monotonic clock.
//! - [`process`]: whether other processes exist.
//!
//! The crate builds for 64-bit little-endian Linux only.

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
