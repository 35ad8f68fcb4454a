//! The layout of the management segment. Every table in it has a fixed place, given below;
//! [`Layout`] is the whole segment as a `#[repr(C)]` struct of atomic words.
//!
//! | bytes | content |
//! |---|---|
//! | 0..384 | header words: magic, layout, state, name tag, events, heartbeat, region counter, uid, session |
//! | 384..448 | the session lock (robust mutex) |
//! | 448..464 | the session secret: 16 random bytes that only processes able to map the session know (see `peers`) |
//! | 512..8704 | segment registry: 256 slots of 4 words |
//! | 16 KiB..48 KiB | process slots (`liveness`): 256 of 128 bytes (pid, since, owner mark, sweeper, ..., robust mutex at 64) |
//! | 64 KiB..576 KiB | region registry (`registry`): 1024 slots of 512 bytes |
//! | 576 KiB..609 KiB | endpoint directory (`directory`): generation, 1024 entries of 32 bytes |
//! | 1 MiB..5 MiB | the transports' ledgers (`ledger`): 256 of 16 KiB (each links its overflow pages, in the transport's segment) |

use crate::sys::layout::{shared_layout, Kind, MutexPlace, Tag};
use std::mem::{offset_of, size_of};
use std::sync::atomic::AtomicU64;

/// What a management segment is. The layout version goes up whenever the layout changes, or
/// whenever something that the session's processes share changes meaning:
///
/// - 9: a ledger's header links its overflow pages.
/// - 10: a region piece's count block is 32 bytes and names the piece, and ledgers list it. A
///   process slot names the process's metrics endpoint.
pub(crate) const KIND: Kind = Kind { what: "management segment", magic: u64::from_le_bytes(*b"FMQRSMNG"), layout: 10 };
pub(crate) const SESSION_MAX: usize = 256;
pub(crate) const SEGMENT_SLOTS: usize = 256;
/// Number of process slots (see `liveness`). Each slot also has a ledger (see `ledger`).
pub(crate) const PROCESS_SLOTS: usize = 256;
/// Number of words in the endpoint directory. The `directory` module, a layer above, defines
/// their layout.
pub(crate) const DIRECTORY_WORDS: usize = 8 + 1024 * 4;

shared_layout! {
    /// The whole management segment (the table at the top of this file).
    pub(crate) struct Layout {
        pub(crate) tag: Tag,
        pub(crate) state: AtomicU64,
        /// The number of the file name that the segment was made under (see `files::name_tag`).
        /// Up to layout 2, this word held a count of attached transports.
        pub(crate) name_tag: AtomicU64,
        pub(crate) events: AtomicU64,
        pub(crate) heartbeat: AtomicU64,
        pub(crate) region_counter: AtomicU64,
        pub(crate) creator_uid: AtomicU64,
        pub(crate) session_len: AtomicU64,
        pub(crate) session: [AtomicU64; SESSION_MAX / 8],
        _pad0: [AtomicU64; 7],
        pub(crate) lock: MutexPlace,
        pub(crate) secret: [AtomicU64; 2],
        _pad1: [AtomicU64; 6],
        /// The registered segments.
        pub(crate) segments: [SegmentSlot; SEGMENT_SLOTS],
        _pad2: [AtomicU64; 960],
        pub(crate) processes: [ProcessSlot; PROCESS_SLOTS],
        _pad3: [AtomicU64; 2048],
        pub(crate) regions: [RegionSlot; REGION_SLOTS],
        pub(crate) directory: [AtomicU64; DIRECTORY_WORDS],
        _pad4: [AtomicU64; 53240],
        pub(crate) ledgers: [[AtomicU64; LEDGER_WORDS]; PROCESS_SLOTS],
    }
}
const _: () = {
    assert!(offset_of!(Layout, session) == 72 && offset_of!(Layout, lock) == 384);
    assert!(offset_of!(Layout, secret) == 448 && offset_of!(Layout, segments) == 512);
    assert!(offset_of!(Layout, processes) == 16 << 10 && offset_of!(Layout, regions) == 64 << 10);
    assert!(offset_of!(Layout, directory) == 576 << 10 && offset_of!(Layout, ledgers) == 1 << 20);
};
/// Size of the management segment: 1 MiB of tables, then the transports' ledgers (see `ledger`).
pub const MANAGEMENT_SIZE: usize = size_of::<Layout>();
const _: () = assert!(MANAGEMENT_SIZE == 5 << 20);

shared_layout! {
    /// A slot of the segment registry in the management segment (32 bytes each, from byte 512).
    pub(crate) struct SegmentSlot {
        /// Segment id + 1 (0 means free). It is written last, so a reader never sees a
        /// half-written slot.
        pub(crate) tagged: AtomicU64,
        /// The segment's size in bytes.
        pub(crate) size: AtomicU64,
        _spare: [AtomicU64; 2],
    }
}
const _: () = assert!(offset_of!(SegmentSlot, size) == 8 && size_of::<SegmentSlot>() == 32);

shared_layout! {
    /// A process slot of the management segment (128 bytes each, from 16 KiB).
    pub(crate) struct ProcessSlot {
        /// The pid of the attached process (0 means free). It is published only while `mutex`
        /// is held.
        pub(crate) pid: AtomicU64,
        /// When it attached (seconds since the epoch).
        pub(crate) since: AtomicU64,
        /// The attachment's owner mark. The attachment's blocks carry this mark as owner in
        /// their count words.
        pub(crate) owner: AtomicU64,
        /// In a dead transport's slot: the owner mark of the transport that sweeps it. 0 means
        /// no sweeper, or one that holds the session lock throughout (the monitor). See
        /// `SessionLock::find_dead`.
        pub(crate) sweeper: AtomicU64,
        /// The process's metrics endpoint, if it serves one (see `liveness::publish_metrics`).
        pub(crate) metrics: [AtomicU64; 3],
        _spare: [AtomicU64; 1],
        /// Held by the transport's heartbeat thread for its whole life.
        pub(crate) mutex: MutexPlace,
    }
}
const _: () = assert!(offset_of!(ProcessSlot, mutex) == 64 && size_of::<ProcessSlot>() == 128);
/// Number of region slots in the management segment (from 64 KiB).
pub(crate) const REGION_SLOTS: usize = 1024;

shared_layout! {
    /// A region's slot (64 words).
    pub(crate) struct RegionSlot {
        /// Region id + 1 (0 means free). It is written last, so a reader never sees a
        /// half-written slot.
        pub(crate) tag: AtomicU64,
        pub(crate) state: AtomicU64,
        pub(crate) size: AtomicU64,
        pub(crate) creation_flags: AtomicU64,
        pub(crate) user_flags: AtomicU64,
        pub(crate) rc_size: AtomicU64,
        pub(crate) path_len: AtomicU64,
        pub(crate) creator: AtomicU64,
        pub(crate) path: [AtomicU64; 56],
    }
}
const _: () = assert!(offset_of!(RegionSlot, path) == 64 && size_of::<RegionSlot>() == 512);
/// Number of words in one transport's ledger area: 4 header words, then entries of 2 words each
/// (see `ledger`).
pub(crate) const LEDGER_WORDS: usize = 1024 * 2;
