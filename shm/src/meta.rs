//! The metadata wire format: what travels over the ZeroMQ socket instead of the payload.
//!
//! Little-endian, fixed layouts, a version byte first. One ZeroMQ frame holds either one record (a
//! single message) or a multipart header followed by one record per part. A one-part multipart is
//! sent as a single record, so single and multipart calls interoperate as with the zeromq transport.
//!
//! On a socket a message travels as a *handed* record: it names a ticket in the sender's segment
//! that describes the block or region piece, and the ticket's nonce (see `tickets`): a record
//! alone, forged or repeated, grants nothing. Block and region records describe a message
//! directly; they travel only inside lanes, which only the session's processes can write.
//!
//! | record | bytes | layout |
//! |---|---|---|
//! | empty message | 8 | `version u8, tag=0 u8, 6 zero bytes` |
//! | block in a managed segment | 32 | `version u8, tag=1 u8, segment u16, delta u32, offset u64, size u64, slot u32, generation u32` |
//! | piece of an unmanaged region | 40 | `version u8, tag=2 u8, region u16, rc segment u16, rc delta u16, offset u64, size u64, hint u64, rc offset u64` |
//! | multipart header | 8 | `version u8, tag=3 u8, 2 zero bytes, count u32`, then `count` records |
//! | lane offer (control) | 8 + 16 | `version u8, tag=4 u8, 6 zero bytes`, then a handed record of the lane's block |
//! | wake (control) | 8 | `version u8, tag=5 u8, 6 zero bytes` |
//! | handed message | 16 | `version u8, tag=6 u8, segment u16, ticket u32, nonce u64` |
//! | hello (control) | 8 | `version u8, tag=7 u8, 6 zero bytes`: a receiving socket announces itself to the senders it connected to (see `peers`) |
//!
//! Control frames travel on the socket only (see `lane`); they carry no message.
//!
//! `offset` of a block is its header's offset in the segment; `delta` is the distance from there to
//! the user data; `slot` its entry in the segment's slot table (`u32::MAX`: none), where the
//! receiver checks the record and finds the reference count without touching the block;
//! `generation` the slot's generation when the block was handed out for this message (0 without a
//! slot): a record of an earlier use of a block freed and handed out again does not match it. A region record's `offset` is the data's offset in the region; a region message
//! that was copied has a shared reference count, a small block of a managed segment named by `rc`
//! (`rc offset = u64::MAX`, segment and delta 0: none). A frame may be padded with zero bytes (option
//! `--shm-metadata-msg-size`). A handed record (16 bytes) fits libzmq's inline "very small message"
//! (33 bytes): a single message costs no allocation in libzmq on either side.
//!
//! [`decode`] checks the structure only; the receiver then checks every record against its mappings.

/// Format version written by this build.
pub const VERSION: u8 = 4;
const TAG_EMPTY: u8 = 0;
const TAG_BLOCK: u8 = 1;
const TAG_REGION: u8 = 2;
const TAG_MULTI: u8 = 3;
const TAG_LANE: u8 = 4;
const TAG_WAKE: u8 = 5;
const TAG_HANDED: u8 = 6;
const TAG_HELLO: u8 = 7;
/// Size of an empty-message record.
pub const EMPTY_LEN: usize = 8;
/// Size of a managed-block record.
pub const BLOCK_LEN: usize = 32;
/// Size of a region record.
pub const REGION_LEN: usize = 40;
/// Size of the multipart header.
pub const MULTI_LEN: usize = 8;
/// Size of a handed record.
pub const HANDED_LEN: usize = 16;
/// Largest single record.
#[cfg(any(test, feature = "testing"))]
pub const MAX_RECORD_LEN: usize = REGION_LEN;
/// `rc offset` value meaning "no shared reference count".
pub const NOT_SHARED: u64 = u64::MAX;

/// Locates the shared reference count of a copied region message. The count lives in a block of
/// a managed segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RcHandle {
    /// Segment id.
    pub segment: u16,
    /// Offset of the block header.
    pub offset: u64,
    /// Distance from the block header to its user data.
    pub delta: u16,
}

/// The metadata of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// A message without a buffer (size 0).
    Empty,
    /// A block of a managed segment.
    Block {
        /// Segment id.
        segment: u16,
        /// Offset of the block header.
        offset: u64,
        /// Distance from the block header to the user data.
        delta: u32,
        /// Size of the user data.
        size: u64,
        /// Slot in the segment's slot table (`u32::MAX`: none).
        slot: u32,
        /// The slot's generation for this use of the block (see `slots`).
        generation: u32,
    },
    /// A piece of an unmanaged region.
    Region {
        /// Region id.
        region: u16,
        /// Offset of the data in the region.
        offset: u64,
        /// Size of the data.
        size: u64,
        /// The hint given by the region's creator; its release callback receives it back.
        hint: u64,
        /// The shared reference count, if the message was copied.
        rc: Option<RcHandle>,
    },
    /// A message handed over through a ticket (see `tickets`).
    Handed {
        /// The segment whose ticket table holds the ticket.
        segment: u16,
        /// The ticket.
        ticket: u32,
        /// The ticket's nonce.
        nonce: u64,
    },
}

/// Why a frame is not valid metadata.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetaError {
    /// The frame has fewer bytes than the record or header needs.
    #[error(
        "not a valid shared-memory message: needs {need} bytes, got {got} (is the sender using the zeromq transport?)"
    )]
    Truncated {
        /// Bytes required.
        need: usize,
        /// Bytes present.
        got: usize,
    },
    /// A format version this build does not read.
    #[error("shared-memory metadata version {0} is not supported (this build reads version {VERSION})")]
    Version(u8),
    /// An unknown record tag.
    #[error("unknown shared-memory metadata record type {0}")]
    Tag(u8),
    /// Non-zero bytes after the last record, or in reserved fields.
    #[error("unexpected bytes in shared-memory metadata at {0}")]
    Garbage(usize),
    /// A multipart frame where a single message was expected.
    #[error("received a multipart message ({0} parts) where a single message was expected")]
    Multipart(usize),
    /// A record points outside the segment or region it refers to.
    #[error("shared-memory metadata points outside segment {segment}: offset {offset}, size {size}")]
    OutOfBounds {
        /// Segment or region id.
        segment: u16,
        /// Offset given.
        offset: u64,
        /// Size given.
        size: u64,
    },
    /// The record's offset does not name a used block: the block was freed or never allocated.
    #[error("shared-memory metadata refers to no live block: segment {segment}, offset {offset}")]
    NotABlock {
        /// Segment id.
        segment: u16,
        /// Offset given.
        offset: u64,
    },
    /// The record describes an earlier use of a block. The block was freed and handed out again
    /// since then.
    #[error("shared-memory metadata refers to an earlier use of a block: segment {segment}, offset {offset}")]
    Stale {
        /// Segment id.
        segment: u16,
        /// Offset given.
        offset: u64,
    },
    /// A segment or region id that does not exist in this session.
    #[error("unknown shared-memory {kind} {id}")]
    Unknown {
        /// "segment" or "region".
        kind: &'static str,
        /// The id.
        id: u16,
    },
    /// A handed record whose ticket hands nothing over: the record is forged or repeated, or its
    /// sender took the ticket back.
    #[error("shared-memory record refused: {0}")]
    Ticket(#[from] TicketError),
    /// A lane entry names a block that its writer did not hand over. The block belongs to another
    /// holder, or it was freed.
    #[error("a shared-memory lane entry names a block its sender did not hand over; the message is dropped")]
    NotHandedOver,
    /// A record describes a message directly, but only handed records are valid here (on a
    /// socket).
    #[error("a shared-memory message arrived without a ticket (only the session's lanes carry such records)")]
    Untracked,
}

impl Record {
    /// Size of the encoding in bytes.
    pub fn len(&self) -> usize {
        match self {
            Record::Empty => EMPTY_LEN,
            Record::Block { .. } => BLOCK_LEN,
            Record::Region { .. } => REGION_LEN,
            Record::Handed { .. } => HANDED_LEN,
        }
    }

    /// Whether this is `Record::Empty`. Clippy expects an `is_empty` next to `len`; the encoding
    /// itself is never empty.
    pub fn is_empty(&self) -> bool {
        matches!(self, Record::Empty)
    }

    /// Appends the encoding to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Record::Empty => out.extend_from_slice(&[VERSION, TAG_EMPTY, 0, 0, 0, 0, 0, 0]),
            // The record is built whole on the stack and appended once. A growth check of the
            // vector for each field cost more than the encoding itself, and this code runs for
            // every message of every send.
            Record::Block { .. } => out.extend_from_slice(&self.block_frame().expect("a block record")),
            Record::Region { region, offset, size, hint, rc } => {
                let (rc_segment, rc_delta, rc_offset) =
                    rc.map_or((0, 0, NOT_SHARED), |r| (r.segment, r.delta, r.offset));
                out.extend_from_slice(&[VERSION, TAG_REGION]);
                out.extend_from_slice(&region.to_le_bytes());
                out.extend_from_slice(&rc_segment.to_le_bytes());
                out.extend_from_slice(&rc_delta.to_le_bytes());
                for v in [offset, size, hint, rc_offset] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            Record::Handed { segment, ticket, nonce } => {
                let mut b = [0u8; HANDED_LEN];
                b[..2].copy_from_slice(&[VERSION, TAG_HANDED]);
                b[2..4].copy_from_slice(&segment.to_le_bytes());
                b[4..8].copy_from_slice(&ticket.to_le_bytes());
                b[8..16].copy_from_slice(&nonce.to_le_bytes());
                out.extend_from_slice(&b);
            }
        }
    }

    /// The encoding of a block record, built on the stack. It is also the whole frame of a single
    /// message in a block when the frame's minimum length is at most [`BLOCK_LEN`], because such
    /// a frame needs no padding. Returns `None` for other records.
    #[inline]
    pub fn block_frame(&self) -> Option<[u8; BLOCK_LEN]> {
        let Record::Block { segment, offset, delta, size, slot, generation } = *self else { return None };
        let mut b = [0u8; BLOCK_LEN];
        b[..2].copy_from_slice(&[VERSION, TAG_BLOCK]);
        b[2..4].copy_from_slice(&segment.to_le_bytes());
        b[4..8].copy_from_slice(&delta.to_le_bytes());
        b[8..16].copy_from_slice(&offset.to_le_bytes());
        b[16..24].copy_from_slice(&size.to_le_bytes());
        b[24..28].copy_from_slice(&slot.to_le_bytes());
        b[28..32].copy_from_slice(&generation.to_le_bytes());
        Some(b)
    }

    /// Decodes one record at the start of `buf`; returns it and its length.
    pub fn decode(buf: &[u8]) -> Result<(Record, usize), MetaError> {
        let head = need(buf, 2)?;
        if head[0] != VERSION {
            return Err(MetaError::Version(head[0]));
        }
        match head[1] {
            TAG_EMPTY => {
                let b = need(buf, EMPTY_LEN)?;
                zeros(b, 2..EMPTY_LEN)?;
                Ok((Record::Empty, EMPTY_LEN))
            }
            TAG_BLOCK => Ok((block_record(need(buf, BLOCK_LEN)?), BLOCK_LEN)),
            TAG_REGION => {
                let b = need(buf, REGION_LEN)?;
                let rc_offset = u64_at(b, 32);
                let rc = if rc_offset == NOT_SHARED {
                    zeros(b, 4..8)?;
                    None
                } else {
                    Some(RcHandle {
                        segment: u16::from_le_bytes([b[4], b[5]]),
                        delta: u16::from_le_bytes([b[6], b[7]]),
                        offset: rc_offset,
                    })
                };
                let rec = Record::Region {
                    region: u16::from_le_bytes([b[2], b[3]]),
                    offset: u64_at(b, 8),
                    size: u64_at(b, 16),
                    hint: u64_at(b, 24),
                    rc,
                };
                Ok((rec, REGION_LEN))
            }
            TAG_HANDED => {
                let b = need(buf, HANDED_LEN)?;
                let rec = Record::Handed {
                    segment: u16::from_le_bytes([b[2], b[3]]),
                    ticket: u32_at(b, 4),
                    nonce: u64_at(b, 8),
                };
                Ok((rec, HANDED_LEN))
            }
            t => Err(MetaError::Tag(t)),
        }
    }

    /// The payload size that the record describes. A handed record gives 0, because only its
    /// ticket describes the payload.
    pub fn size(&self) -> u64 {
        match self {
            Record::Empty | Record::Handed { .. } => 0,
            Record::Block { size, .. } | Record::Region { size, .. } => *size,
        }
    }
}

fn need(buf: &[u8], n: usize) -> Result<&[u8], MetaError> {
    buf.get(..n).ok_or(MetaError::Truncated { need: n, got: buf.len() })
}

/// Checks that `buf[range]` holds only zeros. A range beyond the end of `buf` returns
/// `MetaError::Truncated` instead of panicking, because frames come from peers.
fn zeros(buf: &[u8], range: std::ops::Range<usize>) -> Result<(), MetaError> {
    let bytes = buf.get(range.clone()).ok_or(MetaError::Truncated { need: range.end, got: buf.len() })?;
    match bytes.iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(i) => Err(MetaError::Garbage(range.start + i)),
    }
}

/// Reads the block record encoded in `b`. The caller ensures that `b` holds at least
/// [`BLOCK_LEN`] bytes and has checked its tag.
fn block_record(b: &[u8]) -> Record {
    Record::Block {
        segment: u16::from_le_bytes([b[2], b[3]]),
        delta: u32_at(b, 4),
        offset: u64_at(b, 8),
        size: u64_at(b, 16),
        slot: u32_at(b, 24),
        generation: u32_at(b, 28),
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("length checked by `need`"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("length checked by `need`"))
}

/// Encodes one message's frame, zero-padded to at least `min_len` bytes.
pub fn encode_single(rec: &Record, min_len: usize, out: &mut Vec<u8>) {
    out.clear();
    rec.encode(out);
    pad(out, min_len);
}

/// Encodes a multipart frame, zero-padded to at least `min_len` bytes. A message with one part is
/// encoded as a single record, without the multipart header.
pub fn encode_parts(records: impl ExactSizeIterator<Item = Record>, min_len: usize, out: &mut Vec<u8>) {
    out.clear();
    let n = records.len();
    if n != 1 {
        out.extend_from_slice(&[VERSION, TAG_MULTI, 0, 0]);
        out.extend_from_slice(&(n as u32).to_le_bytes());
    }
    for r in records {
        r.encode(out);
    }
    pad(out, min_len);
}

fn pad(out: &mut Vec<u8>, min_len: usize) {
    if out.len() < min_len {
        out.resize(min_len, 0);
    }
}

/// A frame that carries no message: it sets up or wakes a lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// The sender offers its lane. The handed record names a ticket that is a lane offer.
    Lane(Record),
    /// The reader of a lane went to sleep and has something to read now.
    Wake,
}

/// Encodes a lane offer for the handed record of the lane's block.
pub fn encode_lane_offer(block: &Record, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&[VERSION, TAG_LANE, 0, 0, 0, 0, 0, 0]);
    block.encode(out);
}

/// A wake frame.
pub const WAKE_FRAME: [u8; 8] = [VERSION, TAG_WAKE, 0, 0, 0, 0, 0, 0];
/// A hello frame.
pub const HELLO_FRAME: [u8; 8] = [VERSION, TAG_HELLO, 0, 0, 0, 0, 0, 0];

/// Decodes `frame` as a control frame. Returns `None` when `frame` is a message frame or not ours
/// at all; [`decode`] then tells which.
pub fn control(frame: &[u8]) -> Option<Result<Control, MetaError>> {
    match frame {
        [VERSION, TAG_WAKE, ..] => Some((|| {
            need(frame, 8)?;
            // As with records, padding beyond the 8 bytes is allowed if it is all zeros.
            zeros(frame, 2..frame.len())?;
            Ok(Control::Wake)
        })()),
        [VERSION, TAG_LANE, ..] => Some((|| {
            zeros(need(frame, 8)?, 2..8)?;
            let (rec, n) = Record::decode(&frame[8..])?;
            zeros(frame, 8 + n..frame.len())?;
            match rec {
                Record::Handed { .. } => Ok(Control::Lane(rec)),
                _ => Err(MetaError::Tag(frame[9])),
            }
        })()),
        _ => None,
    }
}

/// Whether `frame` is a multipart frame. The answer matches what [`decode`] returns for a frame
/// it decodes.
pub fn is_multipart(frame: &[u8]) -> bool {
    matches!(frame, [VERSION, TAG_MULTI, ..])
}

/// Decodes a frame into its records (one for a single message), appending them to `out`.
/// Returns whether the frame was a multipart. On error `out` is left as it was.
pub fn decode(frame: &[u8], out: &mut Vec<Record>) -> Result<bool, MetaError> {
    // Nearly every frame is a single block record and nothing else, so such a frame takes a
    // shortcut. The general walk below gives the same result for it (see the test
    // `a_lone_block_record_decodes_as_the_walk_does`).
    if let Some(rec) = lone_block(frame) {
        out.push(rec);
        return Ok(false);
    }
    let start = out.len();
    decode_into(frame, out).inspect_err(|_| out.truncate(start))
}

/// Decodes a frame that holds one block record and nothing else, as [`decode`] would. Nearly
/// every frame is such a frame. Returns `None` for any other frame.
#[inline]
pub(crate) fn lone_block(frame: &[u8]) -> Option<Record> {
    match frame {
        [VERSION, TAG_BLOCK, ..] if frame.len() == BLOCK_LEN => Some(block_record(frame)),
        _ => None,
    }
}

/// The largest number of records that [`decode`] reserves room for before it has read them.
const RESERVE_AT_MOST: usize = 1024;

fn decode_into(frame: &[u8], out: &mut Vec<Record>) -> Result<bool, MetaError> {
    let head = need(frame, 2)?;
    if head[0] != VERSION {
        return Err(MetaError::Version(head[0]));
    }
    let (count, mut at, multi) = if head[1] == TAG_MULTI {
        let h = need(frame, MULTI_LEN)?;
        zeros(h, 2..4)?;
        let count = u32_at(h, 4) as usize;
        // Every record takes at least 8 bytes. A count of records that cannot fit in the frame is
        // refused before anything is allocated.
        if count > (frame.len() - MULTI_LEN) / EMPTY_LEN {
            return Err(MetaError::Truncated { need: MULTI_LEN + count * EMPTY_LEN, got: frame.len() });
        }
        (count, MULTI_LEN, true)
    } else {
        (1, 0, false)
    };
    // The reserved room has a bound. The count was checked against the frame's length, but a
    // frame in a block (an indirect lane entry) may be as large as the segment. Each `Record`
    // also takes more room than its encoding. A frame whose records go bad after the first ones
    // must not reserve room for its whole count.
    out.reserve(count.min(RESERVE_AT_MOST));
    for _ in 0..count {
        let (rec, n) = Record::decode(&frame[at..])?;
        out.push(rec);
        at += n;
    }
    zeros(frame, at..frame.len())?;
    Ok(multi)
}

/// What a ticket hands over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A message: the ticket hands over one reference to the message's block, or its piece of a
    /// region.
    Message,
    /// A lane offer. It hands over no reference.
    Offer,
}

/// Why a record's ticket does not hand anything over.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TicketError {
    /// No such ticket in the table.
    #[error("ticket {0} is beyond the ticket table")]
    OutOfRange(u32),
    /// The nonce does not match the ticket's. The ticket was claimed already (a repeated record),
    /// taken back by its sender, or never issued (a forged record).
    #[error("ticket {0} was claimed already, taken back or never issued (a repeated or forged record)")]
    NotIssued(u32),
    /// The ticket's contents do not describe a valid record.
    #[error("ticket {0} is damaged")]
    Damaged(u32),
    /// The ticket is of one `Kind`, but its record was sent as the other.
    #[error("ticket {0} hands over a {1:?}, not what its record was sent as")]
    WrongKind(u32, Kind),
}

#[cfg(test)]
mod tests {

    /// A large frame whose records go bad after the first one. The room reserved for its records
    /// has a bound and does not follow the frame's count. A frame in a block may be as large as
    /// the segment, and each `Record` takes several times the room of its encoding. Before the
    /// fix, `decode` reserved room for the whole count.
    #[test]
    fn a_damaged_large_frame_reserves_a_bounded_room() {
        let count = 200_000usize;
        let mut frame = vec![VERSION, TAG_MULTI, 0, 0];
        frame.extend_from_slice(&(count as u32).to_le_bytes());
        frame.extend_from_slice(&[VERSION, TAG_EMPTY, 0, 0, 0, 0, 0, 0]);
        frame.resize(8 + count * EMPTY_LEN, 0xee); // the second record on: no version
        let mut out = Vec::new();
        assert_eq!(decode(&frame, &mut out), Err(MetaError::Version(0xee)));
        assert!(out.is_empty());
        assert!(out.capacity() <= RESERVE_AT_MOST, "reserved {} records", out.capacity());
    }
    use super::*;
    use proptest::prelude::*;

    fn record() -> impl Strategy<Value = Record> {
        prop_oneof![
            Just(Record::Empty),
            (any::<u16>(), any::<u64>(), any::<u32>(), any::<u64>(), any::<u32>(), any::<u32>()).prop_map(
                |(segment, offset, delta, size, slot, generation)| Record::Block {
                    segment,
                    offset,
                    delta,
                    size,
                    slot,
                    generation
                }
            ),
            (
                any::<u16>(),
                any::<u64>(),
                any::<u64>(),
                any::<u64>(),
                prop::option::of((any::<u16>(), 0..NOT_SHARED, any::<u16>()))
            )
                .prop_map(|(region, offset, size, hint, rc)| Record::Region {
                    region,
                    offset,
                    size,
                    hint,
                    rc: rc.map(|(segment, offset, delta)| RcHandle { segment, offset, delta }),
                }),
            (any::<u16>(), any::<u32>(), any::<u64>()).prop_map(|(segment, ticket, nonce)| Record::Handed {
                segment,
                ticket,
                nonce
            }),
        ]
    }

    proptest! {
        #[test]
        fn round_trip(recs in prop::collection::vec(record(), 0..20), pad in 0usize..200) {
            let mut buf = Vec::new();
            encode_parts(recs.iter().copied(), pad, &mut buf);
            prop_assert!(buf.len() >= pad);
            let mut out = Vec::new();
            let multi = decode(&buf, &mut out).unwrap();
            prop_assert_eq!(multi, recs.len() != 1);
            prop_assert_eq!(out, recs);
        }

        /// The shortcut of `decode` for a frame that is one block record gives the same result as
        /// the general walk. This holds for any 30 bytes after the version and the block tag (a
        /// 32-byte frame).
        #[test]
        fn a_lone_block_record_decodes_as_the_walk_does(rest in prop::array::uniform30(any::<u8>())) {
            let mut frame = vec![VERSION, TAG_BLOCK];
            frame.extend_from_slice(&rest);
            let (mut fast, mut walked) = (vec![Record::Empty], vec![Record::Empty]);
            let got = decode(&frame, &mut fast);
            let want = decode_into(&frame, &mut walked);
            prop_assert_eq!(got, want);
            prop_assert_eq!(fast, walked);
        }

        /// A block's frame from `block_frame` is the frame `encode_parts` writes for it alone.
        #[test]
        fn a_block_frame_is_what_encode_parts_writes(rec in record(), pad in 0usize..=BLOCK_LEN) {
            let mut buf = Vec::new();
            encode_parts(std::iter::once(rec), pad, &mut buf);
            match rec.block_frame() {
                Some(frame) => prop_assert_eq!(&frame[..], &buf[..]),
                None => {
                    let is_block = matches!(rec, Record::Block { .. });
                    prop_assert!(!is_block);
                }
            }
        }

        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
            let mut out = Vec::new();
            let _ = decode(&bytes, &mut out);
        }
    }

    #[test]
    fn layout_is_fixed() {
        let mut buf = Vec::new();
        let rec = Record::Block {
            segment: 0x0102,
            offset: 0x1000,
            delta: 32,
            size: 5,
            slot: 0x0a0b0c0d,
            generation: 0x01020304,
        };
        encode_single(&rec, 0, &mut buf);
        assert_eq!(buf.len(), 32, "fits libzmq's inline small message (33 bytes)");
        assert_eq!(&buf[..8], &[VERSION, 1, 2, 1, 32, 0, 0, 0]);
        assert_eq!(&buf[8..16], &0x1000u64.to_le_bytes());
        assert_eq!(&buf[16..24], &5u64.to_le_bytes());
        assert_eq!(&buf[24..], &[0x0d, 0x0c, 0x0b, 0x0a, 4, 3, 2, 1]);
        encode_single(&Record::Handed { segment: 0x0102, ticket: 0x0a0b0c0d, nonce: 0x1122 }, 0, &mut buf);
        assert_eq!(buf.len(), 16);
        assert_eq!(&buf[..8], &[VERSION, 6, 2, 1, 0x0d, 0x0c, 0x0b, 0x0a]);
        assert_eq!(&buf[8..], &0x1122u64.to_le_bytes());
    }

    #[test]
    fn corruptions_are_rejected() {
        let mut out = Vec::new();
        assert!(matches!(decode(&[], &mut out), Err(MetaError::Truncated { .. })));
        assert!(matches!(decode(&[2, 1], &mut out), Err(MetaError::Version(2))), "version 2 (no tickets) is gone");
        assert!(matches!(decode(&[3, 1], &mut out), Err(MetaError::Version(3))), "version 3 (no generations) is gone");
        assert!(matches!(decode(&[VERSION, 9], &mut out), Err(MetaError::Tag(9))));
        assert!(matches!(decode(&[VERSION, 1, 0, 0], &mut out), Err(MetaError::Truncated { need: 32, got: 4 })));
        let mut buf = Vec::new();
        encode_single(&Record::Empty, 16, &mut buf);
        buf[12] = 7;
        assert!(matches!(decode(&buf, &mut out), Err(MetaError::Garbage(12))));
        // A multipart claiming four billion parts in 8 bytes.
        let huge = [VERSION, 3, 0, 0, 0xff, 0xff, 0xff, 0xff];
        assert!(matches!(decode(&huge, &mut out), Err(MetaError::Truncated { .. })));
        // A multipart with a nested multipart header.
        let nested = [VERSION, 3, 0, 0, 1, 0, 0, 0, VERSION, 3, 0, 0, 0, 0, 0, 0];
        assert!(matches!(decode(&nested, &mut out), Err(MetaError::Tag(3))));
        assert!(out.is_empty(), "nothing decoded from bad frames");
    }

    #[test]
    fn control_frames_of_any_length_are_checked_not_sliced() {
        for len in 0..80 {
            for fill in [0u8, 0xff] {
                for tag in [TAG_LANE, TAG_WAKE] {
                    let mut f = vec![fill; len];
                    if len >= 2 {
                        f[0] = VERSION;
                        f[1] = tag;
                    }
                    let _ = control(&f);
                }
            }
        }
        let mut padded = WAKE_FRAME.to_vec();
        padded.push(0);
        assert_eq!(control(&padded), Some(Ok(Control::Wake)), "zero padding is allowed");
        padded.push(1);
        assert_eq!(control(&padded), Some(Err(MetaError::Garbage(9))));
    }
}
