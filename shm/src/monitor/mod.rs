//! What `fairmq-shmmonitor` does, as a library (FairMQ's `fair::mq::shmem::Monitor`): report a
//! session, clean it, list every session, and watch one.
//!
//! These functions tell absence apart from errors. A session without a management segment is
//! absent, and is reported as FairMQ reports it ("No segments found.", "Did not find ...").
//! An object that exists but cannot be used is an error that says why: for example another user's
//! object, one that cannot be read, or a symbolic link.
//!
//! - [`report()`], [`list_all`], [`debug_info`], [`used_blocks`] and [`free_memory`] give
//!   one-shot views of sessions.
//! - [`session_view`] and [`session_ids`] give sessions as data, for the metrics.
//! - [`cleanup()`] and [`cleanup_full`] remove a session's objects; [`reset_content`] forgets its
//!   allocations.
//! - [`Watcher`] and [`sweep`] are the monitor mode: they watch a session, and clean up what its
//!   dead processes left.
//! - [`MonitorLock`] keeps a session to one monitor; [`start_daemon`] starts a monitor for a
//!   session that has none.

mod cleanup;
mod lock;
mod report;
mod sessions;
mod watch;

pub use cleanup::{cleanup, cleanup_full, reset_content};
pub use lock::{monitor_running, start_daemon, MonitorLock, MONITOR_BINARY};
pub use report::{debug_info, free_memory, list_all, report, used_blocks, FreeMemoryError, SegmentBlocks, UsedBlock};
pub use sessions::{session_ids, session_view, RegionView, SegmentView, SessionView};
pub use watch::{sweep, Step, Sweep, Watcher, WATCH_INTERVAL};
