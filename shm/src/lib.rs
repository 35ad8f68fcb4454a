//! # fairmq-shm: FairMQ's shared-memory transport
//!
//! Payloads live in a shared-memory segment; only a 16-byte metadata record per message travels over
//! a ZeroMQ socket, so sending 16 MiB costs what sending 64 B does.
//!
//! - A session (`--session`) names its objects `fmqrs_<shmId>_*` under `/dev/shm` (see [`shm_id`]).
//!   The first transport creates them, race-free; the last one removes them.
//! - The segment's allocator (TLSF, O(1), coalescing) is shared by all processes of the session and
//!   survives a process killed while holding its lock.
//! - Blocks are reference counted in shared memory: [`Message::copy_from`] shares a block across
//!   processes without copying it; the last holder frees it. The counts (and what a receiver checks
//!   a record against) sit in a dense slot table, not in the blocks, so no step of a transfer
//!   touches the pages of a large payload; freed blocks of a stream's size cycle through the
//!   segment's depot back to the sender without going through the heap.
//! - A record on a socket names a hand-over ticket in the sender's segment (see `tickets`): a
//!   receiver claims it once, so a forged or repeated record grants nothing. Metadata from peers is
//!   validated (segment known, block live, bounds) before use.
//! - Only processes of the session can connect to its sockets: every endpoint asks for, or
//!   presents, a password derived from the session's secret (ZeroMQ PLAIN, checked by a ZAP
//!   handler in `fairmq-zmq`).
//! - PUSH and PUB send only to receiving sockets of the session (they present a token made with the
//!   session's secret) and take back what a peer that went away did not take (see `peers`); what a
//!   killed sender left in flight, its receiver releases (see `orphans`). Sockets whose ZeroMQ
//!   socket picks the receiver name it, or the set it is one of, from the session's directory of
//!   endpoints (see `addressee`), and what a killed process held of shared blocks it listed in its
//!   ledger (see `ledger`; past its area in the management segment, pages of its own segment):
//!   the sweep of the dead drops every listed reference and frees the pages.
//! - Sockets, timeouts, interruption, counters and pollers behave as in `fairmq-zmq`. A caller's own
//!   message type that holds ours (a device's) is sent and received where it lies
//!   ([`Part`], `Socket::send_parts_of`, `Socket::receive_parts_into`).
//! - Between a sender with a single peer (PAIR, a PUSH connected to one endpoint, or a bound PUSH
//!   while one peer is connected) and its receiver, records travel through a *lane*, a ring in the
//!   segment, instead of one ZeroMQ message each; the socket carries the lane's offer and wakes a
//!   sleeping reader (`ShmConfig::lanes`, `--shm-lanes`). A reader checks each block an entry
//!   names, and marks it its own, once, as it takes the entry; the messages are made of the
//!   records it checked. What a reader that left did not read goes out again on the next lane.
//!   Lanes exist because libzmq's per-message cost was the whole gap between a record sent
//!   through ZeroMQ and bare ZeroMQ's own rate.
//!
//! Inside, each layer uses only those below it (no module reaches up, no two import each other):
//!
//! | layer | holds |
//! |---|---|
//! | `transport/` | the transport's attachment to the session, messages (and the parts a send takes), regions, region events, pollers, `socket/` (sockets, their lanes, the peers they send to, orphans of the dead, the endpoint directory), the configuration |
//! | `monitor/` | the session monitor (`fairmq-shmmonitor`) |
//! | `external` | a session's segments and regions made without joining it (FairMQ's `shmem::Segment`, `shmem::UnmanagedRegion`) |
//! | `region/` | a region's bytes (made, and mapped into this process), and the queues of acknowledgements |
//! | `session/` | the management segment, attaching and detaching, the region registry, liveness of processes, ledgers of shared references |
//! | `segment/` | a segment: its allocator (TLSF), slot table, depot, hand-over tickets, lane rings; a process's block cache |
//! | root | the vocabulary: errors, metadata records, object names, session ids |
//! | `sys/` | every system call; mappings, the robust mutexes in them (safe handles borrowed from a mapping) and the typed views of shared layouts (`layout`: `#[repr(C)]` structs of atomic words, one open-and-check routine for every object). Outside it, unsafe code only makes slices of message payloads and takes raw user buffers |
//!
//! ```
//! use fairmq_shm::{ShmConfig, Transport};
//! use fairmq_zmq::SocketType;
//!
//! let session = format!("doc-{}", std::process::id());
//! let mut config = ShmConfig::new("doc", &session);
//! config.segment_size = 16 << 20;
//! let transport = Transport::new(&config)?;
//! let push = transport.socket(SocketType::Push, "data")?;
//! let pull = transport.socket(SocketType::Pull, "data")?;
//! pull.bind("inproc://shm-doc")?;
//! push.connect("inproc://shm-doc")?;
//!
//! let mut msg = transport.new_message_from_slice(b"zero-copy")?;
//! push.send(&mut msg, 1000)?;
//! let mut received = transport.new_message();
//! pull.receive(&mut received, 1000)?;
//! assert_eq!(received.data(), b"zero-copy");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]
// Checked with the `testing` feature (as every workspace build has it): without it, the internals
// that `testing` exports for tests are unreachable by design.
#![cfg_attr(feature = "testing", warn(unreachable_pub))]
mod error;
pub mod external;
/// Entry points of the fuzz targets (`fuzz/`) and of the test replaying their corpora.
#[cfg(feature = "fuzzing")]
mod fuzzing;
mod kill_point;
mod meta;
pub mod monitor;
mod naming;
mod region;
#[cfg(test)]
mod scratch;
mod segment;
mod session;
mod shmid;
mod sys;
mod transport;

pub use error::ShmError;
pub use naming::Names;
pub use segment::{file_size_for, SegmentStats, MIN_SEGMENT_SIZE};
pub use session::registry::RegionEntry;
pub use shmid::{shm_id, shm_id_for, shm_id_from_number, shm_id_number};
pub use sys::files::FileError;
pub use sys::robust_mutex::LockError;
pub use transport::config::{BadAllocPolicy, ShmConfig};
pub use transport::events::{RegionEvent, RegionInfo};
pub use transport::message::Message;
pub use transport::part::Part;
pub use transport::poller::Poller;
pub use transport::region::{BulkCallback, Region, RegionBlock, RegionCallback, RegionConfig, SingleCallback};
pub use transport::socket::Socket;
pub use transport::usage::{RegionUsage, Usage};
pub use transport::Transport;

/// Internals for this crate's tests, benchmarks and fuzz targets and for the tests of the crates
/// above it (cargo feature `testing`): not part of the API (hidden from the documentation; they
/// change without notice).
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;
