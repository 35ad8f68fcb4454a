//! The lanes a socket reads ([`Readers`]).
//!
//! A reader claims a lane from a peer's offer ([`Readers::attach`]), and takes entries from its
//! lanes in turn ([`Readers::take`]). It marks an entry's blocks as its own before the entry leaves
//! the ring. Before it sleeps, it drops the idle lanes whose writer closed or died; it first
//! finishes the entry that a dead writer staged (see `finish_staged`).

use super::*;
use crate::error::ShmError;
use crate::meta::{self, Record};
use crate::segment::ring::{Claim, LaneError, Ring, KIND_FRAME, READER_CLOSED, WRITER_CLOSED};
use crate::transport::attachment::Attachment;
use crate::transport::message::{Message, Source};
use std::sync::Arc;
use std::time::Instant;

/// The lanes a socket reads.
#[derive(Default)]
pub(crate) struct Readers {
    lanes: Vec<LaneBlock>,
    next: usize,
    /// The records of the entry being taken, and of its blocks being marked. The buffer is kept
    /// between entries, so taking an entry allocates nothing.
    records: Vec<Record>,
    marking: Marking,
    last_sweep: Option<Instant>,
    /// How many lanes the socket reads now, for the metrics. Another thread reads this counter.
    open: Arc<std::sync::atomic::AtomicU64>,
}

/// What `Readers::take` found.
pub(crate) enum Got {
    Frame,
    Indirect(Message),
}

impl Readers {
    /// Claims a lane that a peer offered, and takes a reference of our own to it. The offer handed
    /// over no reference.
    pub(crate) fn attach(&mut self, mgr: &Arc<Attachment>, rec: Record, socket: &str) -> Result<(), ShmError> {
        let Record::Handed { segment, ticket, nonce } = rec else { return Err(meta::MetaError::Untracked.into()) };
        // `Message::claim_offer` takes our own reference, and it does so before we claim the lane
        // too. So a claim never holds a block without a reference to it.
        let block = Message::claim_offer(mgr, segment, ticket, nonce, super::drop_lane)?;
        let opened = block.words().ok_or(LaneError::Header).and_then(|w| Ring::open(w).map(|r| r.capacity()));
        let capacity = match opened {
            Ok(c) => c,
            Err(source) => return Err(ShmError::Lane { socket: socket.to_owned(), source }),
        };
        block.list_lane();
        let lane = LaneBlock::new(block, capacity);
        match lane.ring().claim(mgr.owner()) {
            Claim::Fresh => {}
            Claim::Orphaned => lane.block.drop_reference(), // the writer left us its own
            Claim::Taken => return Ok(()),                  // a repeated offer: ours goes back
        }
        self.lanes.push(lane);
        self.publish();
        Ok(())
    }

    /// Makes `Readers` with one lane, claimed or not. Tests use it to check what a reader takes.
    #[cfg(test)]
    pub(crate) fn of(block: Message, capacity: u64) -> Readers {
        Readers { lanes: vec![LaneBlock::new(block, capacity)], ..Readers::default() }
    }

    /// Returns the records of the entry that `Readers::take` last took whole ([`Got::Frame`]).
    /// `Readers::take` checked the records and marked their blocks as ours as it took the entry.
    /// After any other outcome, the slice is empty.
    pub(crate) fn entry_records(&self) -> &[Record] {
        &self.marking.blocks
    }

    /// Where [`Readers::entry_records`] came from: `Source::RemarkedAlone` when each of them is a
    /// block with one reference, now ours alone, so that no block needs listing as shared; else
    /// `Source::Remarked`.
    pub(crate) fn entry_source(&self) -> Source {
        match self.marking.alone {
            true => Source::RemarkedAlone,
            false => Source::Remarked,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }

    /// Takes the next entry into `out`, taking from the lanes in turn. When the entry is a
    /// [`Got::Frame`], its records are in [`Readers::entry_records`]; otherwise that slice is
    /// empty.
    pub(crate) fn take(
        &mut self,
        mgr: &Arc<Attachment>,
        out: &mut Vec<u8>,
        socket: &str,
    ) -> Result<Option<Got>, ShmError> {
        let got = self.take_entry(mgr, out, socket);
        if !matches!(got, Ok(Some(Got::Frame))) {
            self.marking.blocks.clear();
            self.marking.alone = false;
        }
        got
    }

    fn take_entry(&mut self, mgr: &Arc<Attachment>, out: &mut Vec<u8>, socket: &str) -> Result<Option<Got>, ShmError> {
        let n = self.lanes.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            let ring = self.lanes[i].ring();
            match ring.peek_seen(&self.lanes[i].seen) {
                Ok(None) => continue,
                Ok(Some(e)) => {
                    ring.read(&e, out);
                    // Mark the entry's blocks as ours before the entry leaves the ring. If this
                    // reader is killed at any moment, every block it leaves is accounted for by the
                    // ring or by its own mark (see `release_entries`).
                    let ours = remark_entry_with(
                        mgr,
                        e.kind,
                        out,
                        crate::segment::slots::IN_FLIGHT,
                        mgr.owner(),
                        &mut self.marking,
                    );
                    ring.consume(&e);
                    self.next = i + 1;
                    if !ours {
                        // A block that its writer did not hand over (it is still another holder's,
                        // or freed) is never taken. The entry is dropped, and what it did hand over
                        // is released.
                        release_marked(mgr, &mut self.marking.taken);
                        self.records.clear();
                        meta::decode(out, &mut self.records)?; // a damaged entry says how
                        return Err(meta::MetaError::NotHandedOver.into());
                    }
                    if e.kind == KIND_FRAME {
                        return Ok(Some(Got::Frame));
                    }
                    // The entry's only record names the block that holds the frame. It is decoded
                    // into the kept buffer, so nothing is allocated per entry.
                    self.records.clear();
                    meta::decode(out, &mut self.records)?;
                    return match self.records[..] {
                        [rec @ Record::Block { .. }] => Ok(Some(Got::Indirect(Message::from_record(mgr, rec)?))),
                        _ => Err(meta::MetaError::Garbage(0).into()),
                    };
                }
                Err(source) => {
                    // Reading cannot go on in a damaged lane, so give the lane up. Its writer takes
                    // back nothing.
                    let l = self.lanes.remove(i);
                    self.publish();
                    l.ring().close(READER_CLOSED | WRITER_CLOSED);
                    return Err(ShmError::Lane { socket: socket.to_owned(), source });
                }
            }
        }
        Ok(None)
    }

    /// Returns whether some lane has an entry.
    pub(crate) fn any_ready(&self) -> bool {
        self.lanes.iter().any(|l| !l.ring().is_empty().unwrap_or(false))
    }

    /// Looks at the lanes until one has an entry (true) or `SPIN` passed (false). Returns false at
    /// once when there are no lanes.
    pub(crate) fn spin(&self) -> bool {
        !self.lanes.is_empty() && spin_until(|| self.any_ready())
    }

    /// Prepares to sleep in the socket by marking the reader asleep in every lane. Returns false,
    /// with nothing marked, when an entry arrived meanwhile. Also drops idle lanes whose writer
    /// closed or died.
    pub(crate) fn sleep(&mut self, mgr: &Arc<Attachment>) -> bool {
        self.sweep(mgr);
        for (i, l) in self.lanes.iter().enumerate() {
            if !l.ring().sleep().unwrap_or(false) {
                self.lanes[..=i].iter().for_each(|l| l.ring().wake_up());
                return false;
            }
        }
        true
    }

    pub(crate) fn wake_up(&self) {
        self.lanes.iter().for_each(|l| l.ring().wake_up());
    }

    fn sweep(&mut self, mgr: &Arc<Attachment>) {
        let check_alive = self.last_sweep.is_none_or(|t| t.elapsed() >= SWEEP_EVERY);
        if check_alive {
            self.last_sweep = Some(Instant::now());
        }
        self.lanes.retain(|l| {
            let ring = l.ring();
            if !ring.is_empty().unwrap_or(false) {
                return true;
            }
            let closed = ring.closed() & WRITER_CLOSED != 0;
            let dead = !closed && check_alive && !mgr.owner_alive(ring.writer());
            if dead && finish_staged(mgr, &ring) {
                return true; // read like any other entry; the lane goes once empty
            }
            if closed || dead {
                ring.close(READER_CLOSED);
            }
            if dead {
                mgr.sweep_dead(); // drops the dead writer's reference
            }
            !(closed || dead)
        });
        self.publish();
    }

    /// Returns the counter of lanes read now. Other threads can read it.
    pub(crate) fn open_count(&self) -> Arc<std::sync::atomic::AtomicU64> {
        self.open.clone()
    }

    fn publish(&self) {
        self.open.store(self.lanes.len() as u64, std::sync::atomic::Ordering::Relaxed);
    }

    /// Closes the lanes as the socket closes. A writer that is still there takes back what was not
    /// read, and sends it again. Otherwise, `Readers::close` releases what was not read.
    pub(crate) fn close(&mut self, mgr: &Arc<Attachment>) {
        self.open.store(0, std::sync::atomic::Ordering::Relaxed);
        for l in self.lanes.drain(..) {
            let ring = l.ring();
            let before = ring.close(READER_CLOSED);
            let dead = before & WRITER_CLOSED == 0 && !mgr.owner_alive(ring.writer());
            if before & WRITER_CLOSED != 0 || dead {
                // A writer that closed left no staged entry. A dead writer's staged entry is
                // released too.
                release_contents(mgr, &ring);
            }
            if dead {
                mgr.sweep_dead(); // drops the dead writer's reference
            }
            crate::kill_point::here("Readers::close: closed, the reference not dropped");
        }
    }
}
