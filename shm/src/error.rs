//! Errors of the shared-memory transport.

use crate::meta::MetaError;
use crate::sys::files::FileError;
use crate::sys::robust_mutex::LockError;
use std::io;

/// Everything that can go wrong in the shared-memory transport.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShmError {
    /// Creating, opening or removing a shared-memory object failed.
    #[error("{what} '{name}': {source}")]
    Io {
        /// What was attempted.
        what: &'static str,
        /// Object name.
        name: String,
        /// The OS error.
        source: io::Error,
    },
    /// An object with one of our names has the wrong format: another version made it, or it is
    /// not ours.
    #[error("shared-memory object '{name}' is not usable: {reason}")]
    Layout {
        /// Object name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The session lock failed.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// Allocator structures are damaged.
    #[error(transparent)]
    Corrupt(#[from] Corrupt),
    /// No memory was free for a message after the configured attempts (FairMQ's
    /// `MessageBadAlloc`).
    #[error("shmem: could not create a message of size {size}, alignment: {alignment}, free memory: {free}")]
    BadAlloc {
        /// Requested size.
        size: usize,
        /// Alignment.
        alignment: usize,
        /// Free bytes in the segment when giving up.
        free: u64,
    },
    /// A message is too large to ever fit the segment.
    #[error("Requested message size ({requested}) exceeds segment size ({segment})")]
    TooLarge {
        /// Bytes the block would need.
        requested: u64,
        /// Segment size.
        segment: u64,
    },
    /// Bad metadata from a peer.
    #[error(transparent)]
    Metadata(#[from] MetaError),
    /// A peer's lane (see `lane`) is damaged. The lane was dropped.
    #[error("shared-memory lane of socket {socket}: {source}")]
    Lane {
        /// The receiving socket.
        socket: String,
        /// What is wrong.
        source: LaneError,
    },
    /// The transport's segment has no room for the ledger page that would list one more shared
    /// reference (see `ledger`). The reference is not taken.
    #[error("shmem: no room for a ledger page ({page} bytes) to list a shared reference, free memory: {free}")]
    LedgerFull {
        /// Bytes of the page.
        page: u64,
        /// Free bytes in the segment when giving up.
        free: u64,
    },
    /// A fixed-size table in the management segment is full.
    #[error("the session's {0} table is full")]
    TableFull(&'static str),
    /// An invalid configuration value.
    #[error("invalid shared-memory configuration: {0}")]
    Config(String),
    /// An explicit region id that this session used before. As in FairMQ, region ids are unique
    /// per session.
    #[error("Unmanaged Region with id {id} has already been registered. Only unique IDs per session are allowed.")]
    RegionIdTaken {
        /// The id.
        id: u16,
    },
    /// This process already controls a region of this id.
    #[error("Unmanaged Region with id {id} already exists. Only unique IDs per session are allowed.")]
    RegionExists {
        /// The id.
        id: u16,
    },
    /// A region opened by id has a different size than the one asked for.
    #[error("Created/opened region size ({mapped}) does not match configured size ({configured})")]
    RegionSizeMismatch {
        /// Size of the existing region.
        mapped: u64,
        /// Size asked for.
        configured: u64,
    },
    /// A region message has bytes outside the region.
    #[error("trying to create region message with data from outside the region (offset {offset}, size {size}, region size {region_size})")]
    OutsideRegion {
        /// Offset asked for.
        offset: u64,
        /// Size asked for.
        size: u64,
        /// The region's size.
        region_size: u64,
    },
    /// A write through a region targets bytes that messages of this process refer to.
    #[error("region {id}: {size} bytes at offset {offset} are in use by messages; write pieces no message refers to")]
    RegionPieceInUse {
        /// The region.
        id: u16,
        /// Offset asked for.
        offset: u64,
        /// Size asked for.
        size: u64,
    },
    /// A region that belongs to another transport or session.
    #[error("region {id} belongs to another shared-memory session")]
    ForeignRegion {
        /// The id.
        id: u16,
    },
    /// `--shm-monitor`: the monitor daemon did not take its lock in time.
    #[error("Did not get response from fairmq-shmmonitor after {0} milliseconds. Exiting.")]
    MonitorStart(u64),
    /// Socket set-up failed.
    #[error(transparent)]
    Socket(#[from] fairmq_zmq::SocketError),
    /// A shared-memory file could not be opened, created or removed, or must not be used: it
    /// belongs to another user, it is a symbolic link, or there is no room for it (see
    /// [`FileError`]).
    #[error("{what}: {source}")]
    File {
        /// What was attempted.
        what: &'static str,
        /// Why it failed.
        source: FileError,
    },
}

impl ShmError {
    /// The kind of this error (see [`fairmq_zmq::ErrorKind`]):
    ///
    /// - [`Alloc`](fairmq_zmq::ErrorKind::Alloc): no room for a message, or for listing a shared
    ///   reference.
    /// - [`Config`](fairmq_zmq::ErrorKind::Config): a refused configuration, region id or size.
    /// - [`Invalid`](fairmq_zmq::ErrorKind::Invalid): a piece outside its region, a region of
    ///   another session, or a write over pieces in use.
    pub fn kind(&self) -> fairmq_zmq::ErrorKind {
        use fairmq_zmq::ErrorKind;
        match self {
            ShmError::BadAlloc { .. } | ShmError::TooLarge { .. } | ShmError::LedgerFull { .. } => ErrorKind::Alloc,
            ShmError::Config(_)
            | ShmError::RegionIdTaken { .. }
            | ShmError::RegionExists { .. }
            | ShmError::RegionSizeMismatch { .. } => ErrorKind::Config,
            ShmError::OutsideRegion { .. } | ShmError::ForeignRegion { .. } | ShmError::RegionPieceInUse { .. } => {
                ErrorKind::Invalid
            }
            ShmError::Socket(e) => e.kind(),
            _ => ErrorKind::Transport,
        }
    }

    pub(crate) fn io(what: &'static str, name: &str, source: io::Error) -> ShmError {
        ShmError::Io { what, name: name.to_owned(), source }
    }

    pub(crate) fn file(what: &'static str, source: FileError) -> ShmError {
        ShmError::File { what, source }
    }

    /// Whether the error says that an object does not exist (as opposed to one that exists but
    /// cannot be used).
    pub fn is_not_found(&self) -> bool {
        match self {
            ShmError::Io { source, .. } => source.kind() == io::ErrorKind::NotFound,
            ShmError::File { source, .. } => source.is_not_found(),
            _ => false,
        }
    }
}

impl From<ShmError> for fairmq_zmq::TransferError {
    fn from(e: ShmError) -> Self {
        fairmq_zmq::TransferError::Transport(Box::new(e))
    }
}

/// The allocator's structures are damaged, by a process that wrote where it must not or by a bad
/// offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("shared-memory allocator structures are corrupt at offset {0}")]
pub struct Corrupt(pub u64);

/// Why a lane's shared words cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaneError {
    #[error("not a lane (bad magic or capacity)")]
    Header,
    #[error("lane ring corrupt: head {head}, tail {tail}, capacity {capacity}")]
    Indices { head: u64, tail: u64, capacity: u64 },
    #[error("lane entry corrupt at {at}: kind {kind}, length {len}")]
    Entry { at: u64, kind: u32, len: u32 },
}

/// Why a ledger's overflow pages cannot be followed (see `ledger`): a link names something that is
/// not a page of that ledger.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LedgerError {
    #[error("ledger of slot {slot}: an overflow link names segment {segment}, which is not mapped")]
    UnknownSegment { slot: usize, segment: u16 },
    #[error(
        "ledger of slot {slot}: the overflow link to offset {offset} of segment {segment} names no page of it ({why})"
    )]
    NotAPage { slot: usize, segment: u16, offset: u64, why: &'static str },
    #[error("ledger of slot {slot}: its overflow pages link back to offset {offset} of segment {segment}")]
    Cycle { slot: usize, segment: u16, offset: u64 },
}
