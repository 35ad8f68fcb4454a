//! Entry points for the fuzz targets in `fuzz/` and for the test that replays their corpora
//! (`tests/fuzz_corpus.rs`). Not part of the API: hidden, and may change at any time.
//!
//! Each entry point takes arbitrary bytes, hands them to the code that reads what another process
//! wrote, and panics only when an invariant breaks; the fuzzer reports that panic as a finding, the
//! replay test as a failure. The checks run against a fixture built once per process: a small
//! managed segment with a few live blocks, and an unmanaged region with its acknowledgement queue.
//! Their files are unlinked as soon as they are mapped, so a fuzzer killed at any point leaves
//! nothing behind in `/dev/shm`.

use crate::meta::{self, Record};
use crate::naming::Names;
use crate::region::ack_queue::{Ack, AckQueue, CAPACITY};
use crate::region::map::RegionMap;
use crate::segment::tlsf::{self, Block};
use crate::segment::Segment;
use crate::session::registry::RegionEntry;
use crate::sys::mapping::{Created, Mapping};
use crate::transport::region::{take_batch, RegionBlock, RegionCallback};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::{Arc, OnceLock};

pub mod socket_frames;
pub use socket_frames::socket_frames;

/// Id of the fixture's managed segment (any other id is unknown to the fixture).
pub const SEGMENT_ID: u16 = 0;
/// Id of the fixture's region.
pub const REGION_ID: u16 = 1024;
/// Size of the fixture's region.
pub const REGION_SIZE: u64 = 64 << 10;
/// Large enough for a slot table, so records are checked through slots (and through headers for
/// blocks without one, which the fixture also has).
const SEGMENT_SIZE: u64 = 2 << 20;
/// User sizes and alignments of the fixture's live blocks (an aligned one has a larger delta).
const BLOCKS: [(u64, u64); 5] = [(8, 0), (1, 0), (100, 0), (1000, 4096), (4096, 0)];

struct Fixture {
    segment: Segment,
    blocks: Vec<Block>,
    /// Tickets issued for the first live block and for a region piece (never claimed).
    tickets: Vec<crate::segment::tickets::Issued>,
    region: RegionMap,
    /// One acknowledgement run at a time: the replay test may call in from several threads.
    acks: Mutex<()>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| Fixture::new().expect("could not build the fuzzing fixture"))
}

impl Fixture {
    fn new() -> Result<Fixture, crate::ShmError> {
        let names = Names::new(&format!("fuzz{}", std::process::id()));
        let tmp = || Names::path(&names.tmp());

        let seg_path = Names::path(&names.segment(SEGMENT_ID));
        let _ = std::fs::remove_file(&seg_path); // a leftover of an earlier process with our pid
        let (segment, _) = Segment::open_or_create(&seg_path, &tmp(), SEGMENT_ID, SEGMENT_SIZE)?;
        let _ = std::fs::remove_file(&seg_path);
        let mut blocks = Vec::new();
        let pid = std::process::id();
        let (last, first) = BLOCKS.split_last().expect("blocks");
        for &(size, align) in first {
            segment.allocate(size, align, pid, 1, &mut blocks)?;
        }
        // Small blocks take the remaining slots, so the last named block has none.
        let mut fillers = Vec::new();
        while fillers.last().is_none_or(|b: &Block| b.slot != crate::segment::slots::NO_SLOT) {
            segment.allocate(8, 0, pid, 1, &mut fillers)?;
        }
        segment.allocate(last.0, last.1, pid, 1, &mut blocks)?;
        assert_eq!(blocks.len(), BLOCKS.len(), "the fixture segment is large enough");
        blocks.extend(fillers);

        let entry = RegionEntry {
            id: REGION_ID,
            size: REGION_SIZE,
            creation_flags: 0,
            user_flags: 0,
            rc_segment_size: 0,
            path: String::new(),
            creator: std::process::id(),
            destroyed: false,
        };
        let data_path = entry.data_path(&names);
        let _ = std::fs::remove_file(&data_path);
        let file_err = |e| crate::ShmError::file("creating the fuzzing region", e);
        let data = match Mapping::create(&data_path, &tmp(), REGION_SIZE as usize, |_| Ok(())).map_err(file_err)? {
            Created::New(m) => m,
            Created::Exists => return Err(crate::ShmError::RegionExists { id: REGION_ID }),
        };
        let _ = std::fs::remove_file(&data_path);
        let queue = AckQueue::open_or_create(&names, REGION_ID)?;
        let _ = std::fs::remove_file(Names::path(&names.region_queue(REGION_ID)));
        let region = RegionMap::new(entry, data, Some(queue), true, None);
        let mut issuer = crate::segment::tickets::Issuer::reproducible(pid);
        let table = segment.tickets();
        let b = blocks[0];
        let handed = [
            Record::Block {
                segment: SEGMENT_ID,
                offset: b.offset,
                delta: b.delta,
                size: BLOCKS[0].0,
                slot: b.slot,
                generation: b.generation,
            },
            Record::Region { region: REGION_ID, offset: 64, size: 32, hint: 5, rc: None },
        ];
        let tickets = handed
            .iter()
            .map(|rec| {
                let issued = issuer.issue(&table, SEGMENT_ID, crate::segment::tickets::Kind::Message, rec, &|_| true);
                issued.expect("a fresh table has tickets")
            })
            .collect();
        Ok(Fixture { segment, blocks, tickets, region, acks: Mutex::new(()) })
    }

    /// Checks a received record as the receiving transport does, against what the fixture knows
    /// to be live. Ids the fixture does not have are refused by lookup before any check, as in a
    /// real session, so they need no check here.
    fn check_record(&self, rec: &Record) {
        match *rec {
            Record::Empty => {}
            Record::Handed { segment, ticket, nonce } => {
                if segment == SEGMENT_ID {
                    // Resolving is all a receiver does before its checks (a claim would use the
                    // fixture's tickets up): only the fixture's own tickets resolve.
                    let issued = self.tickets.iter().any(|t| (t.ticket, t.nonce) == (ticket, nonce));
                    let resolved = self.segment.tickets().resolve(ticket, nonce);
                    assert_eq!(resolved.is_ok(), issued, "ticket {ticket} nonce {nonce:#x}");
                    if let Ok((_, rec)) = resolved {
                        self.check_record(&rec);
                    }
                }
            }
            Record::Block { segment, offset, delta, size, slot, generation } => {
                if segment == SEGMENT_ID {
                    self.check_block(offset, delta, size, Some(slot));
                    // A record of a live block matches it only in the generation it was made in.
                    if let Some(b) = self.blocks.iter().find(|b| b.offset == offset && b.slot == slot) {
                        let current = self.segment.check_generation(offset, slot, generation).is_ok();
                        assert_eq!(current, generation == b.generation, "generation {generation} of block {offset}");
                    }
                }
            }
            Record::Region { region, offset, size, rc, .. } => {
                if region == REGION_ID {
                    let inside = offset.checked_add(size).is_some_and(|end| end <= REGION_SIZE);
                    assert_eq!(self.region.check(offset, size).is_ok(), inside, "region piece {offset}+{size}");
                    if inside {
                        // Panics if the piece were outside the mapping.
                        let _ = self.region.ptr(offset, size as usize);
                    }
                }
                if let Some(h) = rc.filter(|h| h.segment == SEGMENT_ID) {
                    // The shared count of a copied region message: an 8-byte block.
                    self.check_block(h.offset, u32::from(h.delta), 8, None);
                }
            }
        }
    }

    /// A block reference must be accepted exactly when it names a live block (and its slot, when
    /// the reference has one) and stays inside it.
    fn check_block(&self, offset: u64, delta: u32, size: u64, slot: Option<u32>) {
        let accepted = match slot {
            Some(slot) => self.segment.check_block(offset, delta, size, slot),
            None => self.segment.check_any_block(offset, delta, size).map(|_| ()),
        }
        .is_ok();
        let live = self.blocks.iter().any(|b| {
            b.offset == offset
                && slot.is_none_or(|s| s == b.slot)
                && b.delta == delta
                && offset
                    .checked_add(u64::from(delta))
                    .and_then(|d| d.checked_add(size))
                    .is_some_and(|end| end <= b.offset + b.size)
        });
        assert_eq!(accepted, live, "block reference offset {offset}, delta {delta}, size {size}");
        if accepted {
            // Panics if the data were outside the mapping.
            let _ = self.segment.data_ptr(offset, delta, size as usize);
        }
    }
}

/// Target `meta_record`: one metadata record (a single message's frame, or one record of a
/// multipart frame). A decoded record re-encodes to exactly the bytes it came from, and the checks
/// against the mappings accept it exactly when it refers to live memory.
pub fn meta_record(data: &[u8]) {
    let Ok((rec, n)) = Record::decode(data) else { return };
    assert_eq!(n, rec.len());
    let mut again = Vec::new();
    rec.encode(&mut again);
    assert_eq!(again, data[..n], "{rec:?} does not re-encode to its bytes");
    fixture().check_record(&rec);
}

/// Target `meta_batch`: a whole metadata frame, single or multipart, maybe padded. A frame that
/// decodes re-encodes to the same bytes (a one-part multipart to the single record that the
/// encoder sends instead); a frame that does not leaves the output untouched.
pub fn meta_batch(data: &[u8]) {
    // The socket asks first whether a frame is a control frame (lane offer, wake).
    match meta::control(data) {
        Some(Ok(meta::Control::Lane(rec))) => return fixture().check_record(&rec),
        Some(_) => return,
        None => {}
    }
    let before = [Record::Empty];
    let mut out = before.to_vec();
    let Ok(multi) = meta::decode(data, &mut out) else {
        assert_eq!(out, before, "a refused frame left records behind");
        return;
    };
    let recs = &out[1..];
    let mut frame = Vec::new();
    meta::encode_parts(recs.iter().copied(), data.len(), &mut frame);
    if multi && recs.len() == 1 {
        let mut again = Vec::new();
        assert_eq!(meta::decode(&frame, &mut again), Ok(false));
        assert_eq!(again, recs);
    } else {
        assert_eq!(multi, recs.len() != 1);
        assert_eq!(frame, data, "{recs:?} does not re-encode to its frame");
    }
    let fx = fixture();
    for rec in recs {
        fx.check_record(rec);
    }
}

/// Target `region_acks`: what another process can leave in a region's acknowledgement queue.
///
/// Input: byte 0 bit 0 set: corrupt indices; bytes 1..9 the ring's head (little-endian); bytes
/// 9..17 pick how far apart corrupt indices are; then 24-byte acknowledgements (offset, size, hint)
/// that a producer pushes. Missing bytes read as zero.
///
/// Corrupt indices make a push fail and a pop drop everything, after which the queue works again;
/// at any head position the acknowledgements come out in order, and the creator's callback sees
/// exactly those inside the region, at their place in its mapping.
pub fn region_acks(data: &[u8]) {
    let byte = |i: usize| data.get(i).copied().unwrap_or(0);
    let word = |at: usize| u64::from_le_bytes(std::array::from_fn(|i| byte(at + i)));
    let corrupt = byte(0) & 1 != 0;
    let head = word(1);
    let acks: Vec<Ack> = data
        .get(17..)
        .unwrap_or(&[])
        .chunks(24)
        .map(|c| {
            let w = |i: usize| u64::from_le_bytes(std::array::from_fn(|j| c.get(i * 8 + j).copied().unwrap_or(0)));
            Ack { offset: w(0), size: w(1), hint: w(2) }
        })
        .collect();

    let fx = fixture();
    let _one_at_a_time = fx.acks.lock();
    let q = fx.region.queue().expect("the fixture region has a queue");
    let base = fx.region.base() as usize;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let mut callback = RegionCallback::Bulk(Box::new(move |blocks: &[RegionBlock]| {
        let mut sink = sink.lock();
        for b in blocks {
            let end = b.offset.checked_add(b.size as u64);
            assert!(end.is_some_and(|end| end <= REGION_SIZE), "delivered a piece outside the region: {b:?}");
            assert_eq!(b.ptr as usize, base + b.offset as usize, "delivered piece at the wrong address");
            sink.push(Ack { offset: b.offset, size: b.size as u64, hint: b.hint });
        }
    }));
    let mut drain = || {
        let (mut popped, mut batch, mut blocks) = (Vec::new(), Vec::new(), Vec::new());
        while take_batch(&fx.region, q, &mut callback, &mut batch, &mut blocks) > 0 {
            popped.extend_from_slice(&batch);
        }
        popped
    };

    if corrupt {
        let apart = CAPACITY + 1 + word(9) % (u64::MAX - CAPACITY);
        q.force_indices(head, head.wrapping_add(apart));
        assert!(q.push(&acks).is_err(), "pushed into a queue with corrupt indices");
        assert!(drain().is_empty(), "popped from a queue with corrupt indices");
    } else {
        q.force_indices(head, head);
    }
    let pushed = q.push(&acks).expect("the queue's indices are sound");
    assert_eq!(pushed, acks.len().min(CAPACITY as usize));
    let popped = drain();
    assert_eq!(popped, acks[..pushed], "acknowledgements lost, duplicated or reordered");
    let inside: Vec<Ack> =
        popped.into_iter().filter(|a| a.offset.checked_add(a.size).is_some_and(|end| end <= REGION_SIZE)).collect();
    assert_eq!(*seen.lock(), inside, "the callback saw other pieces than the valid ones");
    assert_eq!(q.pending(), 0);
}

/// Target `lane_words`: what a peer can leave in the block of a lane (see `segment::ring`).
///
/// Byte 0, bit 0 clear, *raw*: the following bytes fill the block's words (room for a ring of
/// twice the smallest capacity; missing bytes read as zero; bit 1 set keeps a valid tag (magic and layout), so the
/// fuzzer need not guess it). A reader opens the lane and reads until it is empty or refuses a word:
/// nothing panics or reads outside the block, no entry is longer than an entry may be, and no more
/// entries come out than the ring holds. A writer then pushes into what is left, and a reader that
/// abandons the lane takes the rest: both refuse corrupt words or stay inside the ring.
///
/// Bit 0 set, *round trip*: bytes 1..3 the start index in words, then frames as a length byte (in
/// units of 4 bytes) and the bytes. A writer pushes each frame, a reader drains the ring whenever it
/// is full and at the end: the frames come out whole, in order and once, from any start (so across
/// every kind of wrap).
pub fn lane_words(data: &[u8]) {
    use crate::segment::ring::{block_bytes, max_inline, Ring, KIND_FRAME, MIN_CAPACITY};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    let byte = |i: usize| data.get(i).copied().unwrap_or(0);
    let words: Vec<AtomicU64> = (0..block_bytes(2 * MIN_CAPACITY) / 8).map(|_| AtomicU64::new(0)).collect();
    let fresh = Ring::init(&words, MIN_CAPACITY, 1);
    let drain = |r: &Ring<'_>, out: &mut Vec<Vec<u8>>| {
        let mut bytes = Vec::new();
        let mut n = 0;
        // As a reader does: the tail seen last kept between looks.
        let seen = std::cell::Cell::new(0);
        while let Ok(Some(e)) = r.peek_seen(&seen) {
            assert!(e.len <= max_inline(r.capacity()), "an entry longer than an entry may be: {e:?}");
            r.read(&e, &mut bytes);
            assert_eq!(bytes.len(), e.len);
            r.consume(&e);
            out.push(bytes.clone());
            n += 1;
            assert!(n <= r.capacity() / 8, "more entries than the ring holds");
        }
    };
    if byte(0) & 1 == 0 {
        // The tag (magic and layout version), kept when asked so the rest of the header is reached.
        let tag = [words[0].load(Relaxed), words[1].load(Relaxed)];
        for (w, chunk) in words.iter().zip(data.get(1..).unwrap_or(&[]).chunks(8)) {
            w.store(u64::from_le_bytes(std::array::from_fn(|i| chunk.get(i).copied().unwrap_or(0))), Relaxed);
        }
        if byte(0) & 2 != 0 {
            words[0].store(tag[0], Relaxed);
            words[1].store(tag[1], Relaxed);
        }
        let Ok(r) = Ring::open(&words) else { return };
        // A dead writer's staged entry, as a reader finishing it reads it.
        if let Ok(Some(e)) = r.staged() {
            assert!(e.len <= max_inline(r.capacity()), "a staged entry longer than an entry may be: {e:?}");
            let mut bytes = Vec::new();
            r.read(&e, &mut bytes);
            assert_eq!(bytes.len(), e.len);
        }
        drain(&r, &mut Vec::new());
        let frame = &data[..data.len().min(max_inline(r.capacity()))];
        let _ = r.push(KIND_FRAME, frame, || {});
        let mut rest = Vec::new();
        if r.take_all(&mut rest).is_ok() {
            assert!(rest.len() as u64 <= r.capacity() / 8, "more entries than the ring holds");
        }
        return;
    }
    let start = u64::from(u16::from_le_bytes([byte(1), byte(2)])) * 8;
    fresh.force_indices(start, start);
    // As a writer does: the head seen last kept between pushes.
    let seen = std::cell::Cell::new(start);
    let (mut sent, mut got) = (Vec::new(), Vec::new());
    let mut frames = data.get(3..).unwrap_or(&[]);
    while let Some((&len, rest)) = frames.split_first() {
        let (frame, tail) = rest.split_at((usize::from(len) * 4).min(rest.len()));
        frames = tail;
        if !fresh.push_seen(KIND_FRAME, frame, || {}, &seen).expect("sound indices") {
            drain(&fresh, &mut got);
            let pushed = fresh.push_seen(KIND_FRAME, frame, || {}, &seen).expect("sound indices");
            assert!(pushed, "an empty ring refused a frame");
        }
        sent.push(frame.to_vec());
    }
    drain(&fresh, &mut got);
    assert_eq!(got, sent, "frames lost, changed, duplicated or reordered");
}

/// Seed inputs for the shared-memory targets, made by the encoder against the fixture (so they
/// name its live blocks): `(target, name, bytes)`.
pub fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let fx = fixture();
    let block = |i: usize, size: u64, slot: u32| {
        let blk = fx.blocks[i];
        Record::Block {
            segment: SEGMENT_ID,
            offset: blk.offset,
            delta: blk.delta,
            size,
            slot,
            generation: blk.generation,
        }
    };
    let b = |i: usize| block(i, BLOCKS[i].0, fx.blocks[i].slot);
    let rc = crate::meta::RcHandle { segment: SEGMENT_ID, offset: fx.blocks[0].offset, delta: tlsf::HDR as u16 };
    let piece = |offset, size, rc| Record::Region { region: REGION_ID, offset, size, hint: 7, rc };
    let records = [
        ("empty", Record::Empty),
        ("block", b(2)),
        ("aligned-block", b(3)),
        ("block-too-long", block(1, 5000, fx.blocks[1].slot)),
        (
            "unknown-block",
            Record::Block { segment: SEGMENT_ID, offset: 1 << 20, delta: 32, size: 1, slot: 7, generation: 1 },
        ),
        ("block-wrong-slot", block(2, BLOCKS[2].0, fx.blocks[1].slot)),
        ("block-earlier-use", {
            let mut r = b(2);
            if let Record::Block { generation, .. } = &mut r {
                *generation = generation.wrapping_sub(1);
            }
            r
        }),
        ("slotted-block-without-slot", block(2, BLOCKS[2].0, u32::MAX)),
        ("unslotted-block", b(BLOCKS.len() - 1)),
        ("region", piece(4096, 100, None)),
        ("region-copied", piece(0, REGION_SIZE, Some(rc))),
        ("region-outside", piece(REGION_SIZE - 8, 16, None)),
        ("handed", fx.tickets[0].record()),
        ("handed-region", fx.tickets[1].record()),
        ("handed-forged", crate::segment::tickets::Issued { nonce: fx.tickets[0].nonce ^ 1, ..fx.tickets[0] }.record()),
        ("handed-beyond-table", Record::Handed { segment: SEGMENT_ID, ticket: u32::MAX, nonce: 1 }),
    ];
    let mut out = Vec::new();
    for (name, rec) in records {
        let mut bytes = Vec::new();
        rec.encode(&mut bytes);
        out.push(("meta_record", name.to_owned(), bytes));
    }
    let frames: [(&str, Vec<Record>, usize); 7] = [
        ("single", vec![b(2)], 0),
        ("single-padded", vec![b(4)], 64),
        ("no-parts", vec![], 0),
        ("three-parts", vec![b(0), Record::Empty, piece(16, 32, Some(rc))], 0),
        ("many-parts-padded", (0..BLOCKS.len()).map(b).collect(), 256),
        ("region", vec![piece(0, 1, None)], 0),
        ("handed-parts", vec![fx.tickets[0].record(), Record::Empty, fx.tickets[1].record()], 0),
    ];
    for (name, recs, pad) in frames {
        let mut bytes = Vec::new();
        meta::encode_parts(recs.into_iter(), pad, &mut bytes);
        out.push(("meta_batch", name.to_owned(), bytes));
    }
    // A one-part multipart, which our encoder never sends but a peer may.
    let mut one = vec![meta::VERSION, 3, 0, 0, 1, 0, 0, 0];
    b(1).encode(&mut one);
    out.push(("meta_batch", "one-part-multipart".to_owned(), one));
    // What a socket sends most: one handed record; and the control frames it asks about first.
    let mut handed = Vec::new();
    meta::encode_single(&fx.tickets[0].record(), 0, &mut handed);
    out.push(("meta_batch", "handed".to_owned(), handed));
    let mut offer = Vec::new();
    meta::encode_lane_offer(&fx.tickets[0].record(), &mut offer);
    out.push(("meta_batch", "lane-offer".to_owned(), offer.clone()));
    offer.extend_from_slice(&[0; 8]);
    out.push(("meta_batch", "lane-offer-padded".to_owned(), offer));
    let mut offer_of_block = Vec::new();
    meta::encode_lane_offer(&b(0), &mut offer_of_block);
    out.push(("meta_batch", "lane-offer-of-block".to_owned(), offer_of_block));
    out.push(("meta_batch", "wake".to_owned(), meta::WAKE_FRAME.to_vec()));
    out.push(("meta_batch", "wake-padded".to_owned(), [&meta::WAKE_FRAME[..], &[0; 8]].concat()));

    let acks = |corrupt: bool, head: u64, list: &[(u64, u64)]| {
        let mut v = vec![u8::from(corrupt)];
        v.extend_from_slice(&head.to_le_bytes());
        v.extend_from_slice(&12345u64.to_le_bytes());
        for (i, &(offset, size)) in list.iter().enumerate() {
            for w in [offset, size, i as u64] {
                v.extend_from_slice(&w.to_le_bytes());
            }
        }
        v
    };
    let valid = [(0, 100), (4096, 4096), (REGION_SIZE - 1, 1)];
    let mixed = [(0, 1), (REGION_SIZE, 1), (u64::MAX, 2), (8, REGION_SIZE)];
    for (name, bytes) in [
        ("fresh", acks(false, 0, &valid)),
        ("ring-wraps", acks(false, CAPACITY - 2, &valid)),
        ("invalid-pieces", acks(false, 77, &mixed)),
        ("corrupt-indices", acks(true, 5, &valid)),
    ] {
        out.push(("region_acks", name.to_owned(), bytes));
    }
    out.extend(lane_seeds());
    out.extend(socket_frames::seeds());
    out
}

/// Seeds of `lane_words`: lanes a writer filled (intact, and with targeted corruptions of an entry,
/// the indices and the header) and round trips that wrap.
fn lane_seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    use crate::segment::ring::{block_bytes, Ring, KIND_FRAME, KIND_INDIRECT, MIN_CAPACITY};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    let raw = |damage: &dyn Fn(&[AtomicU64])| {
        let words: Vec<AtomicU64> = (0..block_bytes(2 * MIN_CAPACITY) / 8).map(|_| AtomicU64::new(0)).collect();
        let r = Ring::init(&words, MIN_CAPACITY, 1);
        r.force_indices(4000, 4000);
        for (i, frame) in [&b"one"[..], &[7; 100], &[9; 28], &[1; 1000]].into_iter().enumerate() {
            let kind = if i == 2 { KIND_INDIRECT } else { KIND_FRAME };
            assert!(r.push(kind, frame, || {}).expect("a fresh lane"), "the seed frames fit");
        }
        damage(&words);
        let mut v = vec![2u8];
        v.extend(words.iter().flat_map(|w| w.load(Relaxed).to_le_bytes()));
        v
    };
    // Word indices as lane.rs lays them out: capacity 1, head 16, first ring word 64.
    let entry = 64 + (4000 % MIN_CAPACITY as usize) / 8;
    let round_trip = |start: u16, frames: &[(u8, u8)]| {
        let mut v = vec![1u8];
        v.extend_from_slice(&start.to_le_bytes());
        for &(len, fill) in frames {
            v.push(len);
            v.extend(std::iter::repeat_n(fill, usize::from(len) * 4));
        }
        v
    };
    vec![
        ("lane_words", "raw-intact".to_owned(), raw(&|_| {})),
        ("lane_words", "raw-entry-too-long".to_owned(), raw(&|w| w[entry].store(5000 | 1 << 32, Relaxed))),
        ("lane_words", "raw-unknown-kind".to_owned(), raw(&|w| w[entry].store(3 | 9 << 32, Relaxed))),
        ("lane_words", "raw-head-past-tail".to_owned(), raw(&|w| w[16].store(1 << 40, Relaxed))),
        ("lane_words", "raw-capacity-beyond-block".to_owned(), raw(&|w| w[2].store(4 * MIN_CAPACITY, Relaxed))),
        ("lane_words", "round-trip-small".to_owned(), round_trip(0, &[(1, 3), (0, 0), (2, 4)])),
        (
            "lane_words",
            "round-trip-wraps".to_owned(),
            round_trip(500, &[(200, 1), (255, 2), (100, 3), (255, 4), (9, 5)]),
        ),
    ]
}

/// Runs `run` on every file of `<fuzz_dir>/corpus/<target>` and `<fuzz_dir>/artifacts/<target>`
/// (the crash files kept as regressions); returns how many it ran. A failure names its file.
pub fn replay(fuzz_dir: &Path, target: &str, run: impl Fn(&[u8])) -> usize {
    let mut files = Vec::new();
    for kind in ["corpus", "artifacts"] {
        let dir = fuzz_dir.join(kind).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue }; // no crash files yet
        for e in entries {
            let path = e.unwrap_or_else(|e| panic!("listing {}: {e}", dir.display())).path();
            let hidden = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'));
            if path.is_file() && !hidden {
                files.push(path);
            }
        }
    }
    files.sort();
    for path in &files {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&data))).is_err() {
            panic!("fuzz input {} fails (see the panic above)", path.display());
        }
    }
    files.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_pass_their_targets() {
        for (target, name, bytes) in seeds() {
            match target {
                "meta_record" => meta_record(&bytes),
                "meta_batch" => meta_batch(&bytes),
                "region_acks" => region_acks(&bytes),
                "lane_words" => lane_words(&bytes),
                "socket_frames" => socket_frames(&bytes),
                t => panic!("seed {name} of unknown target {t}"),
            }
        }
    }

    #[test]
    fn the_fixture_accepts_its_blocks_and_nothing_else() {
        let fx = fixture();
        for (b, (size, _)) in fx.blocks.iter().zip(BLOCKS) {
            assert!(fx.segment.check_block(b.offset, b.delta, size, b.slot).is_ok());
            assert!(fx.segment.check_block(b.offset + 16, b.delta, size, b.slot).is_err());
            assert!(fx.segment.check_any_block(b.offset, b.delta, size).is_ok());
        }
        let slotted: Vec<bool> = fx.blocks[..BLOCKS.len()].iter().map(|b| b.slot != u32::MAX).collect();
        assert_eq!(slotted, [true, true, true, true, false], "the last block is made without a slot");
    }
}
