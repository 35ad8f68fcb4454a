//! What the unmanaged regions of both transports share (FairMQ's `RegionConfig`, `RegionBlock`
//! and `RegionInfo`).
//!
//! - [`RegionConfig`] holds the settings of a region.
//! - [`RegionBlock`] is a released piece of a region. The creator's [`RegionCallback`] hears of the
//!   pieces one at a time ([`SingleCallback`]) or in batches ([`BulkCallback`]).
//! - [`RegionInfo`] describes a segment or a region in a region event. Its [`RegionEvent`] says
//!   what happened to it.

use std::time::Duration;

/// Settings of a region, with the same defaults as FairMQ's `RegionConfig`.
///
/// The zeromq transport honours only `lock` and `zero`. Its regions are anonymous mappings of this
/// process, with ids 1, 2, 3, ...
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionConfig {
    /// Lock the region in RAM after creating or opening it.
    pub lock: bool,
    /// Zero the whole region after creating or opening it.
    pub zero: bool,
    /// Whether the creator removes the region when its handle is dropped. With `false`, the region
    /// outlives the handle, e.g. a region that an external process keeps alive.
    pub remove_on_destruction: bool,
    /// `mmap` flags. The shmem transport honours `MAP_POPULATE` (fault in every page) and
    /// `MAP_LOCKED` (like `lock`), and refuses any other flag. For huge pages, use a `path` on a
    /// hugetlbfs mount.
    pub creation_flags: i32,
    /// Flags for the user, reported in region events.
    pub user_flags: u64,
    /// Accepted for compatibility with FairMQ, and shown by the monitor. The reference counts of
    /// copied region messages always live in the managed segment (FairMQ's `rcSegmentSize = 0`
    /// mode).
    pub rc_segment_size: u64,
    /// When non-empty, the region is the file `<path>fmqrs_<shmId>_rg_<id>`. `path` is a plain
    /// prefix, so include the trailing `/`.
    pub path: String,
    /// An explicit id. `None` takes the next automatic id. On shmem, the first automatic id is
    /// 1024.
    pub id: Option<u16>,
    /// How long the creator keeps waiting for outstanding acknowledgements when the handle is
    /// dropped (FairMQ's default: 100 ms). The creator stops waiting earlier once every piece is
    /// acknowledged.
    pub linger: Duration,
}

impl Default for RegionConfig {
    fn default() -> Self {
        RegionConfig {
            lock: false,
            zero: false,
            remove_on_destruction: true,
            creation_flags: 0,
            user_flags: 0,
            rc_segment_size: 100_000_000,
            path: String::new(),
            id: None,
            linger: Duration::from_millis(100),
        }
    }
}

/// A released piece of a region, as the creator's callback sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionBlock {
    /// Address of the piece in the creator's mapping.
    pub ptr: *mut u8,
    /// Offset of the piece in the region.
    pub offset: u64,
    /// Size of the piece.
    pub size: usize,
    /// The hint given when the piece's message was made.
    pub hint: u64,
}

/// A callback called once per released piece.
pub type SingleCallback = Box<dyn FnMut(&RegionBlock) + Send>;
/// A callback called once per batch of released pieces.
pub type BulkCallback = Box<dyn FnMut(&[RegionBlock]) + Send>;

/// How the creator is told that released pieces came back.
pub enum RegionCallback {
    /// The creator is not told. Acknowledgements are not even sent.
    None,
    /// A callback called once per released piece.
    Single(SingleCallback),
    /// A callback called once per batch of released pieces (up to 256 pieces per batch).
    Bulk(BulkCallback),
}

impl std::fmt::Debug for RegionCallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RegionCallback::None => "None",
            RegionCallback::Single(_) => "Single",
            RegionCallback::Bulk(_) => "Bulk",
        })
    }
}

/// What happened to a region or segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegionEvent {
    /// The region or segment exists. This is the first time it is reported.
    Created,
    /// Its creator destroyed it.
    Destroyed,
    /// Only the zeromq transport reports this event: its regions are local to the process.
    LocalOnly,
}

impl std::fmt::Display for RegionEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RegionEvent::Created => "created",
            RegionEvent::Destroyed => "destroyed",
            RegionEvent::LocalOnly => "local_only",
        })
    }
}

/// A segment or region of the session (FairMQ's `RegionInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionInfo {
    /// `true` for a managed segment, `false` for an unmanaged region.
    pub managed: bool,
    /// Its id.
    pub id: u16,
    /// Its address in this process (0 when destroyed).
    pub ptr: usize,
    /// Its size (0 when destroyed).
    pub size: u64,
    /// The creator's user flags (0 for segments).
    pub flags: u64,
    /// What happened: created or destroyed, or `LocalOnly` from the zeromq transport.
    pub event: RegionEvent,
}

impl std::fmt::Display for RegionInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "managed: {}, id: {}, ptr: {:#x}, size: {}, flags: {}, event: {}",
            self.managed, self.id, self.ptr, self.size, self.flags, self.event
        )
    }
}
