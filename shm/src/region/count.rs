//! A region piece's count block: a small block of a managed segment that holds the shared
//! reference count of a piece of an unmanaged region, and names the piece.
//!
//! A message of a region piece gets a count block when it is first copied or received. Every
//! holder lists its reference in its ledger (see `session::ledger`). When a holder is killed, the
//! sweep of the dead drops its reference. The sweep that drops the last reference reads the piece
//! from the block and acknowledges it to the region's controller through the region's queue
//! ([`Orphans`]), as the last holder's release would have. Before count blocks, a killed
//! consumer's pieces were never acknowledged, and a controller that waited for them waited
//! forever.
//!
//! | word of the block's data | content |
//! |---|---|
//! | 0 | [`TAG`] << 16 \| region id |
//! | 1 | offset of the piece in the region |
//! | 2 | size of the piece |
//! | 3 | the hint given when its message was made |
//!
//! The reference count itself is the block's count word (see `slots`), marked shared.

use crate::meta::{MetaError, RcHandle};
use crate::region::ack_queue::{Ack, AckQueue};
use crate::segment::Segment;
use crate::session::management::Management;
use crate::Names;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Size in bytes of a count block's data.
pub(crate) const BYTES: u64 = crate::session::ledger::PIECE_COUNT_BYTES;
/// The tag that marks word 0 of a count block's data. The low 16 bits of that word hold the
/// region id.
const TAG: u64 = 0x46_4d51_5043; // "FMQPC"
/// How long the sweep waits for room in a full acknowledgement queue.
const ROOM_WAIT: Duration = Duration::from_secs(1);

/// Writes the piece (`region`, `ack`) into the data words of a newly allocated count block. No
/// other process can see the block before its reference is handed on.
pub(crate) fn write(words: &[AtomicU64], region: u16, ack: Ack) {
    let values = [TAG << 16 | u64::from(region), ack.offset, ack.size, ack.hint];
    for (w, v) in words.iter().zip(values) {
        w.store(v, Ordering::Relaxed);
    }
}

/// Reads the piece that a count block's data words name. Returns `None` when the words are not
/// a count block's.
pub(crate) fn read(words: &[AtomicU64]) -> Option<(u16, Ack)> {
    let [w0, offset, size, hint] = words else { return None };
    let head = w0.load(Ordering::Acquire);
    if head >> 16 != TAG {
        return None;
    }
    let load = |w: &AtomicU64| w.load(Ordering::Relaxed);
    Some((head as u16, Ack { offset: load(offset), size: load(size), hint: load(hint) }))
}

/// Returns the slot of the count block that `h` names in `seg`, after checking that the block is
/// the count block of the piece at `offset` of region `region`.
///
/// The check matters because a record may name another block, or the block may name another
/// piece. Without the check, the reader would count down a reference that is not the piece's.
pub(crate) fn checked(seg: &Segment, h: RcHandle, region: u16, offset: u64) -> Result<u32, MetaError> {
    let delta = u32::from(h.delta);
    let slot = seg.check_any_block(h.offset, delta, BYTES)?;
    match seg.block_words(h.offset, delta, BYTES).and_then(read) {
        Some((r, a)) if (r, a.offset) == (region, offset) => Ok(slot),
        _ => Err(MetaError::OutOfBounds { segment: h.segment, offset: h.offset, size: BYTES }),
    }
}

/// Records that the piece a count block's data words name was shortened to `size` bytes.
pub(crate) fn set_size(words: &[AtomicU64], size: u64) {
    if let Some(w) = words.get(2) {
        w.store(size, Ordering::Relaxed);
    }
}

/// Acknowledges pieces on behalf of holders that were killed, once a sweep dropped a piece's last
/// reference. Each piece goes to its region's queue, as the holder's own release would have sent
/// it.
///
/// Each queue is opened once per sweep. A piece is dropped and logged when the session does not
/// list its region (or no longer does), or when the piece lies outside its region.
pub(crate) struct Orphans<'a> {
    m: &'a Management,
    /// Each region's queue, once opened. `None` means that the queue cannot be used: it does not
    /// exist, or it stayed full for [`ROOM_WAIT`]. The region's other pieces are then dropped at
    /// once, and the sweep never waits for that queue again.
    queues: HashMap<u16, Option<AckQueue>>,
}

impl<'a> Orphans<'a> {
    pub(crate) fn new(m: &'a Management) -> Orphans<'a> {
        Orphans { m, queues: HashMap::new() }
    }

    /// Acknowledges the piece `ack` of region `region`. Returns false when it could not.
    pub(crate) fn acknowledge(&mut self, region: u16, ack: Ack) -> bool {
        let Some(entry) = crate::session::registry::find(self.m, region) else {
            log::warn!("a dead process held a piece of region {region}, which is gone: not acknowledged");
            return false;
        };
        if ack.offset.checked_add(ack.size).is_none_or(|end| end > entry.size) {
            log::error!(
                "a dead process's count block names bytes {}+{} outside region {region} ({} bytes): not acknowledged",
                ack.offset,
                ack.size,
                entry.size
            );
            return false;
        }
        let names = self.m.names();
        let queue = self.queues.entry(region).or_insert_with(|| open(names, region));
        let Some(q) = queue.as_ref() else { return false };
        match q.consumer() {
            Some(mark) if crate::session::liveness::owner_alive(self.m, mark) => {}
            // The region has no callback, or its controller is gone. Nobody waits for the piece.
            _ => return true,
        }
        let deadline = Instant::now() + ROOM_WAIT;
        loop {
            let epoch = q.space_epoch();
            match q.push(&[ack]) {
                Ok(1) => return true,
                Ok(_) if Instant::now() < deadline => q.wait_for_space(epoch, Duration::from_millis(50)),
                Ok(_) => {
                    log::error!(
                        "region {region}: its acknowledgement queue stays full; the pieces dead processes held are dropped"
                    );
                    self.queues.insert(region, None);
                    return false;
                }
                Err(e) => {
                    log::error!("region {region}: cannot acknowledge a dead process's piece: {e}");
                    return false;
                }
            }
        }
    }
}

impl crate::session::ledger::Pieces for Orphans<'_> {
    /// A damaged block that names no piece is freed all the same, because nobody can acknowledge
    /// what it held.
    fn last_reference_dropped(&mut self, block: Option<&[AtomicU64]>) {
        match block.and_then(read) {
            Some((region, ack)) => {
                self.acknowledge(region, ack);
            }
            None => log::error!("a dead process's region count block names no piece: it is freed unacknowledged"),
        }
    }
}

fn open(names: &Names, region: u16) -> Option<AckQueue> {
    AckQueue::open(&Names::path(&names.region_queue(region)))
        .map_err(|e| log::error!("region {region}: cannot open its acknowledgement queue: {e}"))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_block_names_its_piece_and_nothing_else_reads_as_one() {
        let words: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
        assert_eq!(read(&words), None, "zeroed memory is no count block");
        let ack = Ack { offset: 4096, size: 1000, hint: 77 };
        write(&words, 1031, ack);
        assert_eq!(read(&words), Some((1031, ack)));
        words[0].store(1031, Ordering::Relaxed);
        assert_eq!(read(&words), None, "a region id without the tag");
        assert_eq!(read(&words[..3]), None, "too short");
    }
}
