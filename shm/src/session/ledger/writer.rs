//! A live transport's side of its ledger: listing the shared references it takes, and forgetting
//! them as it lets them go.

use super::overflow::{self, Link, PAGE_ENTRIES};
use super::{area, entry, head, Entry, Listed, Referent, ENTRIES};
use crate::error::ShmError;
use crate::segment::Segment;
use crate::session::management::Management;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// A transport's ledger: its liveness slot's area, its overflow pages, and which entries are free.
/// Entry indices run across the area and the pages: `0..ENTRIES` are the area's, the next
/// `PAGE_ENTRIES` are the first page's, and so on.
pub(crate) struct Ledger {
    slot: usize,
    /// The transport's owner mark. Its pages carry this mark.
    owner: u32,
    /// The transport's own segment, where its pages are.
    own: Arc<Segment>,
    state: Mutex<State>,
}

struct State {
    /// A high-water mark: the entries below this index were used, and those above it are free.
    used: u32,
    free: Vec<u32>,
    /// The overflow pages, in the order they are linked.
    pages: Vec<Link>,
    /// Whether the failure to get a page was logged. The failure is logged once, until a page is
    /// made again.
    short_logged: bool,
}

impl Ledger {
    /// The liveness slot whose ledger this is.
    #[cfg(test)]
    pub(crate) fn slot(&self) -> usize {
        self.slot
    }

    /// The ledger of the transport with owner mark `owner` in liveness slot `slot`. The slot's
    /// area was reset when the slot was claimed. The overflow pages go in `own`.
    pub(crate) fn new(slot: usize, owner: u32, own: Arc<Segment>) -> Ledger {
        let state = State { used: 0, free: Vec::new(), pages: Vec::new(), short_logged: false };
        Ledger { slot, owner, own, state: Mutex::new(state) }
    }

    /// Lists a shared reference that this transport took to the block (`seg`, `offset`, `delta`,
    /// `slot`) of kind `what`, and returns the entry's index.
    ///
    /// Returns an error when no page could be had for the entry because the segment is full. The
    /// failure is logged once, until a page is made again. The reference is then not listed, and
    /// a caller that can refuse the reference does.
    pub(crate) fn note(
        &self,
        m: &Management,
        seg: u16,
        offset: u64,
        delta: u32,
        slot: u32,
        what: Referent,
    ) -> Result<u32, ShmError> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let i = match s.free.pop() {
            Some(i) => i,
            None => {
                if s.used >= ENTRIES + s.pages.len() as u32 * PAGE_ENTRIES {
                    self.grow(m, &mut s)?;
                }
                s.used += 1;
                if s.used <= ENTRIES {
                    area(m, self.slot).used.store(u64::from(s.used), Ordering::Release);
                }
                s.used - 1
            }
        };
        let Some(e) = self.entry(m, &s, i) else {
            // Not reached: the entry is on one of our own pages, which was checked when it was
            // made.
            s.free.push(i);
            return Err(ShmError::LedgerFull { page: overflow::PAGE_BYTES, free: self.own.stats().free });
        };
        Listed { segment: seg, offset, delta, slot, what }.encode(e);
        Ok(i)
    }

    /// Clears entry `i`. The caller is about to drop or hand over the entry's reference.
    pub(crate) fn forget(&self, m: &Management, i: u32) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if i >= s.used {
            return;
        }
        if let Some(e) = self.entry(m, &s, i) {
            e.block.store(0, Ordering::Release);
            s.free.push(i);
        }
    }

    /// Unlinks the overflow pages of a transport that leaves, then frees them. By then the
    /// transport lists nothing any more. A process killed between the two steps leaves pages that
    /// it held alone, and the sweep frees them.
    pub(crate) fn leave(&self, m: &Management) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.pages.is_empty() {
            return;
        }
        Link::clear(head(area(m, self.slot)));
        for page in s.pages.drain(..) {
            overflow::free(&self.own, self.owner, page);
        }
        s.used = s.used.min(ENTRIES);
        s.free.retain(|&i| i < ENTRIES);
    }

    /// The words of entry `i`, which is below `s.used`.
    fn entry<'a>(&'a self, m: &'a Management, s: &State, i: u32) -> Option<&'a Entry> {
        if i < ENTRIES {
            return area(m, self.slot).entries.get(i as usize);
        }
        let (page, at) = ((i - ENTRIES) / PAGE_ENTRIES, (i - ENTRIES) % PAGE_ENTRIES);
        let words = overflow::words(&self.own, *s.pages.get(page as usize)?)?;
        Some(entry(overflow::entries(words), at))
    }

    /// Makes one more page and links it after the last one.
    fn grow(&self, m: &Management, s: &mut State) -> Result<(), ShmError> {
        let page = match overflow::make(&self.own, self.owner, self.slot) {
            Ok(page) => page,
            Err(e) => {
                if !std::mem::replace(&mut s.short_logged, true) {
                    log::error!(
                        "no room to list more than {} shared references: further ones are refused, or not listed \
                         (then they stay if this process is killed): {e}",
                        s.used
                    );
                }
                return Err(e);
            }
        };
        s.short_logged = false;
        let to = match s.pages.last() {
            None => head(area(m, self.slot)),
            Some(&last) => match overflow::words(&self.own, last) {
                Some(words) => overflow::next(words),
                None => {
                    overflow::free(&self.own, self.owner, page);
                    return Err(ShmError::LedgerFull { page: overflow::PAGE_BYTES, free: self.own.stats().free });
                }
            },
        };
        // The page is linked only after it is written (see `Link::write`). So a sweep finds the
        // page whole or not at all.
        page.write(to);
        s.pages.push(page);
        Ok(())
    }
}
