//! Settings of the shared-memory transport, named and defaulted as FairMQ's options.

use crate::error::ShmError;
use std::time::Duration;

/// The largest segment size. A file's size is a signed 64-bit offset, so no segment can be
/// larger. The free space of `/dev/shm` is checked when the segment is created.
pub(crate) const MAX_SEGMENT_SIZE: u64 = i64::MAX as u64;
/// The largest padding of metadata frames. Padding exists to give frames one small, fixed size.
/// Far larger values could not even be allocated on every send.
pub(crate) const MAX_METADATA_MSG_SIZE: usize = 64 << 20;

/// What to do when the segment has no room for a message (FairMQ spec section 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadAllocPolicy {
    /// Attempts before giving up, or -1 to retry forever. FairMQ's default is 1, which fails at
    /// once.
    pub max_attempts: i32,
    /// Wait between attempts (`--bad-alloc-attempt-interval`, default 50 ms). A free that makes
    /// room ends the wait early.
    pub interval: Duration,
}

impl Default for BadAllocPolicy {
    fn default() -> Self {
        BadAllocPolicy { max_attempts: 1, interval: Duration::from_millis(50) }
    }
}

impl BadAllocPolicy {
    /// Builds the policy by FairMQ's rule:
    ///
    /// - `--shm-throw-bad-alloc false` retries forever, and the other settings are ignored.
    /// - Otherwise `--bad-alloc-max-attempts` applies, if given. A value of 0 behaves like 1.
    /// - Otherwise the policy makes 1 attempt.
    pub fn from_options(throw_bad_alloc: bool, max_attempts: Option<i32>, interval_ms: u64) -> Self {
        let max_attempts = if !throw_bad_alloc {
            -1
        } else {
            match max_attempts {
                Some(n) if n < 0 => -1,
                Some(n) => n.max(1),
                None => 1,
            }
        };
        BadAllocPolicy { max_attempts, interval: Duration::from_millis(interval_ms) }
    }
}

/// Settings of one shared-memory transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShmConfig {
    /// The transport id, normally the device id. Socket ids include it.
    pub id: String,
    /// `--session` (default "default"). The session name names the shared-memory objects, through
    /// the shmId.
    pub session: String,
    /// `--shmid`: an explicit shmId, used instead of the hash of the user id and the session.
    pub shm_id: Option<u64>,
    /// `--shm-segment-size` (default 2 GiB). The creator checks the size against the free space of
    /// `/dev/shm`, and reserves every page at once with `posix_fallocate`. So a segment that does
    /// not fit is an error at creation. A segment that was created can never raise SIGBUS for lack
    /// of room.
    pub segment_size: u64,
    /// `--shm-segment-id` (default 0): the segment this transport allocates in.
    pub segment_id: u16,
    /// `--shm-mlock-segment`: lock the segment in RAM after opening or creating it.
    pub mlock_segment: bool,
    /// `--shm-mlock-segment-on-creation`: lock the segment in RAM only when this transport creates
    /// it.
    pub mlock_segment_on_creation: bool,
    /// `--shm-zero-segment`: zero the segment's free memory after opening or creating it.
    pub zero_segment: bool,
    /// `--shm-zero-segment-on-creation`: zero the segment's free memory only when this transport
    /// creates it.
    pub zero_segment_on_creation: bool,
    /// Out-of-memory policy.
    pub bad_alloc: BadAllocPolicy,
    /// `--shm-no-cleanup`: the last transport of the session leaves its objects in place.
    pub no_cleanup: bool,
    /// `--shm-metadata-msg-size`: pad metadata frames to at least this many bytes.
    pub metadata_msg_size: usize,
    /// `--io-threads`: the I/O threads of the ZeroMQ context of the metadata sockets.
    pub io_threads: i32,
    /// `--shm-monitor`: start a `fairmq-shmmonitor` daemon for the session if none runs.
    pub monitor: bool,
    /// `--shm-lanes`: between a sender with a single peer and its receiver, records travel through
    /// a ring in the segment instead of one ZeroMQ message each (see the `socket::lanes` module).
    /// A sender has a single peer when it is a PAIR, a PUSH connected to one endpoint, or a bound
    /// PUSH while one peer is connected. When this is off, every record goes through ZeroMQ.
    pub lanes: bool,
    /// The device's metrics endpoint (`--metrics-address`, as bound). The transport publishes it
    /// in its liveness slot, and `fairmq-shmmonitor --prometheus-targets` lists the session's
    /// devices by it.
    pub metrics_endpoint: Option<std::net::SocketAddr>,
}

impl Default for ShmConfig {
    fn default() -> Self {
        ShmConfig {
            id: String::new(),
            session: "default".to_owned(),
            shm_id: None,
            segment_size: 2 << 30,
            segment_id: 0,
            mlock_segment: false,
            mlock_segment_on_creation: false,
            zero_segment: false,
            zero_segment_on_creation: false,
            bad_alloc: BadAllocPolicy::default(),
            no_cleanup: false,
            metadata_msg_size: 0,
            io_threads: 1,
            monitor: false,
            lanes: true,
            metrics_endpoint: None,
        }
    }
}

impl ShmConfig {
    /// Defaults with the given transport id and session.
    pub fn new(id: &str, session: &str) -> Self {
        ShmConfig { id: id.to_owned(), session: session.to_owned(), ..ShmConfig::default() }
    }

    /// The shmId these settings select.
    pub fn resolved_shm_id(&self) -> String {
        match self.shm_id {
            Some(n) => crate::shmid::shm_id_from_number(n),
            None => crate::shmid::shm_id(&self.session),
        }
    }

    pub(crate) fn validate(&self) -> Result<(), ShmError> {
        if self.session.is_empty() {
            return Err(ShmError::Config("session name is empty".into()));
        }
        if self.segment_size == 0 {
            return Err(ShmError::Config(
                "segment size 0 (--shm-segment-size): a segment needs at least one byte".into(),
            ));
        }
        if self.segment_size > MAX_SEGMENT_SIZE {
            return Err(ShmError::Config(format!(
                "segment size {} (--shm-segment-size) is above the largest file size, {MAX_SEGMENT_SIZE} bytes",
                self.segment_size
            )));
        }
        if self.metadata_msg_size > MAX_METADATA_MSG_SIZE {
            return Err(ShmError::Config(format!(
                "metadata message size {} (--shm-metadata-msg-size) is above the maximum of {MAX_METADATA_MSG_SIZE} bytes",
                self.metadata_msg_size
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 17, item 8: a size that no file or frame can have is a configuration error.
    #[test]
    fn i08_sizes_beyond_any_file_or_frame_are_refused() {
        let mut c = ShmConfig::new("t", "s");
        c.validate().unwrap();
        c.segment_size = u64::MAX;
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("--shm-segment-size") && e.contains(&u64::MAX.to_string()), "{e}");
        c.segment_size = i64::MAX as u64; // the largest file
        c.validate().unwrap();
        c.metadata_msg_size = usize::MAX;
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("--shm-metadata-msg-size"), "{e}");
    }

    #[test]
    fn bad_alloc_policy_follows_fairmq() {
        assert_eq!(BadAllocPolicy::from_options(true, None, 50).max_attempts, 1);
        assert_eq!(BadAllocPolicy::from_options(false, Some(3), 50).max_attempts, -1);
        assert_eq!(BadAllocPolicy::from_options(true, Some(3), 50).max_attempts, 3);
        assert_eq!(BadAllocPolicy::from_options(true, Some(0), 50).max_attempts, 1);
        assert_eq!(BadAllocPolicy::from_options(true, Some(-1), 50).max_attempts, -1);
        assert_eq!(BadAllocPolicy::from_options(true, None, 7).interval, Duration::from_millis(7));
    }
}
