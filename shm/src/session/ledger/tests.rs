use super::*;
use crate::error::LedgerError;
use crate::segment::Segment;
use crate::transport::attachment::Attachment;
use crate::transport::message::Message;
use std::sync::Arc;

/// The entries of slot `slot`'s area that list something.
fn listing(m: &Management, slot: usize) -> usize {
    used(area(m, slot)).filter(|e| e.block.load(Ordering::Relaxed) != 0).count()
}

/// Free bytes of `mgr`'s segment once its caches and the depot went back to the heap.
fn settled_free(mgr: &Attachment) -> u64 {
    mgr.flush(true);
    mgr.own().drain_depot().unwrap();
    mgr.own().stats().free
}

/// `n` messages of `mgr`, each with `copies` copies, left as a killed process leaves them (never
/// dropped); their block records.
fn held_as_if_killed(mgr: &Arc<Attachment>, n: usize, copies: usize) -> Vec<crate::meta::Record> {
    (0..n)
        .map(|_| {
            let m = Message::allocate(mgr.clone(), 100, 0).unwrap();
            for _ in 0..copies {
                let mut c = Message::empty(mgr.clone());
                c.copy_from(&m).unwrap();
                std::mem::forget(c);
            }
            let rec = m.record();
            std::mem::forget(m);
            rec
        })
        .collect()
}

/// A process killed while it held a message and a copy of it (a shared block, two references
/// listed): the sweep drops both and the block is freed; entries that do not name a shared
/// block with a reference left are ignored.
#[test]
fn the_references_a_dead_transport_listed_are_dropped_once() {
    let (_scratch, mgr) = crate::scratch::attachment("ledger");
    let free0 = settled_free(&mgr);
    let m = Message::allocate(mgr.clone(), 1000, 0).unwrap();
    let mut copy = Message::empty(mgr.clone());
    copy.copy_from(&m).unwrap();
    let crate::meta::Record::Block { offset, slot, .. } = m.record() else { panic!("a block") };
    let count = || mgr.own().rc(offset, slot).load(Ordering::Acquire);
    assert_eq!(count(), u64::from(crate::segment::slots::SHARED) << 32 | 2);
    // Killed: its messages are never dropped; the sweep releases its entries in place.
    std::mem::forget((m, copy));
    let (mng, slot, me) = (mgr.management(), mgr.ledger().slot(), mgr.owner());
    assert_eq!(listing(mng, slot), 2, "both listed");
    // A damaged entry (its offset moved) names no block: it drops nothing, the other its one.
    let first = &area(mng, slot).entries[0];
    let good = first.block.load(Ordering::Relaxed);
    first.block.store(good + 8, Ordering::Relaxed);
    assert_eq!(
        release(&*mgr, &mut crate::region::count::Orphans::new(mng), mng, slot, me),
        1,
        "only the good entry dropped its reference"
    );
    assert_eq!(count(), u64::from(crate::segment::slots::SHARED) << 32 | 1);
    // The good value back (as if it had been so): dropped, and with it the last reference.
    first.block.store(good, Ordering::Relaxed);
    assert_eq!(release(&*mgr, &mut crate::region::count::Orphans::new(mng), mng, slot, me), 1);
    assert_eq!(count() as u32, 0, "the block was freed with the last one");
    // A sweeper that takes over from one killed after it released finds nothing to drop twice.
    assert_eq!(
        release(&*mgr, &mut crate::region::count::Orphans::new(mng), mng, slot, me),
        0,
        "every entry was cleared as it was released"
    );
    assert_eq!(settled_free(&mgr), free0);
    mgr.own().check().unwrap();
}

/// Issue 37 item 4: references past the area's entries go to overflow pages in the transport's
/// segment, and the sweep drops every one of them. Before, entries past 1023 were not listed: a
/// killed holder of 3000 messages and a copy of each left 2489 blocks.
#[test]
fn references_past_the_area_are_listed_on_pages_and_all_dropped() {
    let (_scratch, mgr) = crate::scratch::attachment("ledger-pages");
    let free0 = settled_free(&mgr);
    let (mng, slot, me) = (mgr.management(), mgr.ledger().slot(), mgr.owner());
    let records = held_as_if_killed(&mgr, 1500, 1);
    let pages = (3000 - ENTRIES).div_ceil(overflow::PAGE_ENTRIES) as usize;
    assert_eq!(listing(mng, slot), ENTRIES as usize, "the area is full");
    let mine: &[Segment] = std::slice::from_ref(&**mgr.own());
    assert_eq!(overflow_pages(mng, mine, std::process::id()).unwrap(), Ok(pages));
    assert_eq!(listed_blocks(&*mgr, mng, slot).len(), 3000, "every reference is listed");
    assert_eq!(release(&*mgr, &mut crate::region::count::Orphans::new(mng), mng, slot, me), 3000, "and dropped");
    for r in records {
        let crate::meta::Record::Block { offset, slot, .. } = r else { panic!("a block") };
        assert_eq!(mgr.own().rc(offset, slot).load(Ordering::Acquire) as u32, 0, "freed with its last reference");
    }
    assert_eq!(overflow_pages(mng, mine, std::process::id()).unwrap(), Ok(0), "the pages are unlinked");
    // They are blocks held alone by the transport: the sweep of a dead one frees them with the
    // others; this live one gives them back as it leaves.
    mgr.flush(true); // what the sweep freed through our caches
    assert_eq!(mgr.own().owned_by(me).unwrap(), (pages as u64, pages as u64 * (PAGE_BYTES + 32)));
    mgr.ledger().leave(mng);
    assert_eq!(settled_free(&mgr), free0, "every block back");
    mgr.own().check().unwrap();
}

/// Entries freed on a page are used again; a live transport that leaves frees its pages.
#[test]
fn entries_are_reused_and_pages_go_when_the_transport_leaves() {
    let (_scratch, mgr) = crate::scratch::attachment("ledger-reuse");
    let free0 = settled_free(&mgr);
    let m = Message::allocate(mgr.clone(), 100, 0).unwrap();
    let copies = |n: usize| -> Vec<Message> {
        (0..n)
            .map(|_| {
                let mut c = Message::empty(mgr.clone());
                c.copy_from(&m).unwrap();
                c
            })
            .collect()
    };
    let mine: &[Segment] = std::slice::from_ref(&**mgr.own());
    let pages = || overflow_pages(mgr.management(), mine, std::process::id()).unwrap().unwrap();
    let many = copies(ENTRIES as usize + 10);
    assert_eq!(pages(), 1);
    drop(many);
    let again = copies(ENTRIES as usize + 10);
    assert_eq!(pages(), 1, "the freed entries were used again");
    assert_eq!(listed_blocks(&*mgr, mgr.management(), mgr.ledger().slot()).len(), ENTRIES as usize + 11);
    drop((again, m));
    mgr.ledger().leave(mgr.management());
    assert_eq!(pages(), 0);
    assert_eq!(settled_free(&mgr), free0);
}

/// A link that does not name a page of the ledger (another segment, a block that is no page, out
/// of bounds, another transport's page, a page linked again) ends the walk with an error: the
/// sweep drops what it found before and does not crash. Whatever a damaged link names, what the
/// checks let through is a block held alone by the dead transport with a page's header.
#[test]
fn a_link_that_names_no_page_of_the_ledger_ends_the_walk() {
    let (_scratch, mgr) = crate::scratch::attachment("ledger-damaged");
    let (mng, slot, me) = (mgr.management(), mgr.ledger().slot(), mgr.owner());
    let seg = mgr.own().id();
    let mine: &[Segment] = std::slice::from_ref(&**mgr.own());
    let m = Message::allocate(mgr.clone(), 100, 0).unwrap();
    // The message's reference and ENTRIES + 5 copies': 6 on a page.
    let copies: Vec<Message> = (0..ENTRIES + 5)
        .map(|_| {
            let mut c = Message::empty(mgr.clone());
            c.copy_from(&m).unwrap();
            c
        })
        .collect();
    let link = head(area(mng, slot));
    let good = Link::read(link).expect("a page is linked");
    let crate::meta::Record::Block { offset: message, slot: message_slot, .. } = m.record() else { panic!("a block") };
    let walk = |w0: u64, w1: u64| {
        link.block.store(w0, Ordering::Relaxed);
        link.check.store(w1, Ordering::Relaxed);
        overflow_pages(mng, mine, std::process::id()).unwrap()
    };
    let word = |seg: u16, offset: u64| (offset + 1) | u64::from(seg) << 48;
    let at = |slot: u32, generation: u32| u64::from(slot) | u64::from(generation) << 32;
    let good_b = at(good.slot, good.generation);
    assert!(matches!(walk(word(seg + 1, good.offset), good_b), Err(LedgerError::UnknownSegment { .. })));
    assert!(matches!(walk(word(seg, good.offset + 16), good_b), Err(LedgerError::NotAPage { .. })), "moved");
    assert!(matches!(walk(word(seg, (1 << 48) - 2), good_b), Err(LedgerError::NotAPage { .. })), "out of bounds");
    assert!(matches!(
        walk(word(seg, good.offset), at(good.slot, good.generation + 1)),
        Err(LedgerError::NotAPage { .. })
    ));
    assert!(matches!(walk(word(seg, message), at(message_slot, 0)), Err(LedgerError::NotAPage { .. })), "a message");
    // Our page as another slot's ledger: not its transport's.
    link.block.store(word(seg, good.offset), Ordering::Relaxed);
    link.check.store(good_b, Ordering::Relaxed);
    let other = head(area(mng, slot + 1));
    Link::read(link).unwrap().write(other);
    let theirs = overflow::walk(mine, other, me, slot + 1, |_| {});
    assert!(matches!(theirs, Err(LedgerError::NotAPage { .. })), "{theirs:?}");
    Link::clear(other);
    // A page that links itself.
    let page = overflow::open(mine, good, me, slot).unwrap();
    good.write(overflow::next(page));
    assert!(matches!(walk(word(seg, good.offset), good_b), Err(LedgerError::Cycle { .. })));
    Link::clear(overflow::next(page));
    assert_eq!(walk(word(seg, good.offset), good_b), Ok(1), "the good link back");
    // Damaged, the sweep drops the area's references and refuses the link.
    link.block.store(word(seg, good.offset + 16), Ordering::Relaxed);
    assert_eq!(
        release(&*mgr, &mut crate::region::count::Orphans::new(mng), mng, slot, me),
        ENTRIES as usize,
        "the area's, not the page's"
    );
    // As the dead would: the references the sweep dropped are not dropped again.
    std::mem::forget((copies, m));
    mgr.ledger().leave(mng);
    mgr.own().check().unwrap();
}

/// A writer killed with a lane nobody claimed: while an offer of it is out, its reference goes
/// to the offer's claimant; with none out, nobody can claim the lane any more, and the sweep
/// drops the reference and frees the lane. Before, it waited for a claimant that never came
/// (a writer whose reader had died, killed while its new lane had no peer to be offered to).
#[test]
fn a_dead_writers_unclaimed_lane_waits_for_a_claimant_only_while_an_offer_is_out() {
    use crate::segment::ring::{self, Ring, ORPHANED};
    let (_scratch, mgr) = crate::scratch::attachment("ledger-lane");
    mgr.set_shared();
    let (mng, slot, me) = (mgr.management(), mgr.ledger().slot(), mgr.owner());
    // As a writer makes a lane (see `lanes::Writer::offer`), then is killed.
    let lane = || {
        let block = Message::allocate(mgr.clone(), ring::block_bytes(ring::MIN_CAPACITY) as usize, 64).unwrap();
        block.list_lane();
        block.mark_held(crate::segment::slots::SHARED);
        Ring::init(block.words().unwrap(), ring::MIN_CAPACITY, me);
        let rec = block.record();
        std::mem::forget(block);
        rec
    };
    let count = |rec: crate::meta::Record| {
        let crate::meta::Record::Block { offset, slot, .. } = rec else { panic!("a block") };
        mgr.own().rc(offset, slot).load(Ordering::Acquire)
    };
    let reader = |rec: crate::meta::Record| {
        let crate::meta::Record::Block { offset, delta, size, .. } = rec else { panic!("a block") };
        Ring::open(mgr.own().block_words(offset, delta, size).unwrap()).unwrap().reader()
    };
    let offered = lane();
    let ticket = mgr.issue(crate::segment::tickets::Kind::Offer, &offered).unwrap();
    assert_eq!(release(&*mgr, &mut crate::region::count::Orphans::new(mng), mng, slot, me), 1);
    assert_eq!(count(offered), u64::from(crate::segment::slots::SHARED) << 32 | 1, "kept for the claimant");
    assert_eq!(reader(offered), ORPHANED, "handed to the first claimant");
    assert!(mgr.take_back(&ticket));
    let alone = lane();
    assert_eq!(release(&*mgr, &mut crate::region::count::Orphans::new(mng), mng, slot, me), 1);
    assert_eq!(count(alone) as u32, 0, "no offer out: the lane was freed");
}
