//! What `fairmq-shmmonitor` does, as a library: report a session, clean it, list every session, and
//! watch one (FairMQ's `fair::mq::shmem::Monitor`).
//!
//! Errors are told apart from absence: a session without a management segment is reported as
//! FairMQ does ("No segments found.", "Did not find ..."), while objects that exist but cannot be
//! used (another user's, not readable, a symbolic link) are errors that say why.

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
