//! A segment whose shared tables another process damaged.

use super::*;

/// The depot lists slots whose entries another process of the session damaged (an offset past
/// the heap, one that is a live block's, a size not the magazine's): a refill hands none of them
/// out, and every block it hands out checks out. Before, the depot's entries were handed out as
/// they were: a message outside the mapping (a panic at its first access), or one aliasing a
/// live block.
#[test]
fn a_refill_hands_out_no_damaged_depot_entry() {
    let (_scratch, mgr) = crate::scratch::attachment("seg-depot");
    let seg = mgr.own();
    let mut live = Vec::new();
    seg.allocate(100, 16, mgr.owner(), 1, &mut live).unwrap();
    let live = live[0];
    let need = Tlsf::block_size_for(16, 16).unwrap();
    let damaged = [
        Entry { offset: seg.heap_end + 4096, size: need, delta: tlsf::HDR },
        Entry { offset: live.offset, size: need, delta: tlsf::HDR },
        Entry { offset: HEAP_START + 4096, size: need + 4096, delta: tlsf::HDR },
    ];
    let slots: Vec<u64> = damaged.iter().map(|&e| u64::from(seg.slots().take(e, DEPOSITED).unwrap())).collect();
    assert!(seg.depot().put(need, &slots));
    let mut out = Vec::new();
    seg.allocate(16, 16, 7, 4, &mut out).unwrap();
    assert!(out.iter().all(|b| b.offset != live.offset && b.offset + b.size <= seg.heap_end), "{out:?}");
    for b in &out {
        seg.rc(b.offset, b.slot).store(7 << 32 | 1, Ordering::Relaxed);
        seg.check_block(b.offset, b.delta, 16, b.slot).unwrap();
    }
}

/// A free-list head naming a slot in use (another process damaged the list): the slot is not
/// taken again, the damaged list is dropped, and slots come from the table's unused end. Before,
/// the slot in use was overwritten.
#[test]
fn a_slot_in_use_at_the_free_list_head_is_not_taken_again() {
    let (_scratch, mgr) = crate::scratch::attachment("seg-slots");
    let seg = mgr.own();
    let mut blocks = Vec::new();
    seg.allocate(100, 16, mgr.owner(), 1, &mut blocks).unwrap();
    let b = blocks[0];
    let before = seg.slots().entry(b.slot).unwrap();
    seg.header().slot_head.store(u64::from(b.slot) + 1, Ordering::Relaxed);
    let fresh = Entry { offset: HEAP_START + 8192, size: 64, delta: tlsf::HDR };
    let taken = seg.slots().take(fresh, 1).expect("a slot from the unused end");
    assert_ne!(taken, b.slot);
    assert_eq!(seg.slots().entry(b.slot), Some(before), "the slot in use is unchanged");
    assert_eq!(seg.slots().entry(taken), Some(fresh));
    assert_eq!(seg.header().slot_head.load(Ordering::Relaxed), 0, "the damaged list was dropped");
}

/// Four blocks of 1000 bytes, the second freed again: its free neighbour list words are what a
/// message written past the end of the first reaches.
fn four_blocks_second_freed(mgr: &crate::transport::attachment::Attachment) -> [Block; 4] {
    let seg = mgr.own();
    let mut blocks = Vec::new();
    for _ in 0..4 {
        seg.allocate(1000, 16, mgr.owner(), 1, &mut blocks).unwrap();
    }
    let blocks: [Block; 4] = blocks.try_into().expect("four blocks");
    seg.free_block(blocks[1].offset).unwrap();
    blocks
}

/// The four header words of the block at `offset`.
fn header_words(seg: &Segment, offset: u64) -> Vec<u64> {
    (0..4).map(|i| seg.words()[(offset / 8 + i) as usize].load(Ordering::Relaxed)).collect()
}

/// How many blocks of 1000 bytes one allocation call got.
fn allocated(mgr: &crate::transport::attachment::Attachment) -> usize {
    let mut more = Vec::new();
    mgr.own().allocate(1000, 16, mgr.owner(), 1, &mut more).unwrap();
    more.len()
}

/// Free-list words damaged by a message written past its end: the operation that finds the
/// damage fails, the lists are rebuilt from the blocks under the same lock, and the heap is
/// sound for what follows. Before, every later allocation and free that reached the damaged
/// list failed for the session's life.
#[test]
fn a_heap_whose_free_list_was_damaged_is_rebuilt() {
    let (_scratch, mgr) = crate::scratch::attachment("seg-heal");
    let seg = mgr.own();
    let [a, b, c, _d] = four_blocks_second_freed(&mgr);
    // B's next link names C, a used block.
    seg.words()[(b.offset / 8 + 2) as usize].store(c.offset, Ordering::Relaxed);
    assert!(seg.free_block(a.offset).is_err(), "the damage is found");
    seg.check().unwrap();
    seg.check_block(c.offset, c.delta, 1000, c.slot).unwrap();
    assert_eq!(allocated(&mgr), 1);
    seg.check().unwrap();
}

/// A message written past its end breaks the next block's header, a free one's size among it:
/// the operation that finds it fails, and the lists stay as they are, so allocations from other
/// blocks go on and the used blocks keep their words. (A rebuild from a broken chain would have
/// emptied every list and failed every later allocation; it stops at the first bad block.)
#[test]
fn a_broken_block_chain_is_not_rebuilt() {
    let (_scratch, mgr) = crate::scratch::attachment("seg-broken");
    let seg = mgr.own();
    let [a, b, c, _d] = four_blocks_second_freed(&mgr);
    let words_of_c = header_words(seg, c.offset);
    // A's overrun zeroes B's header.
    (0..4).for_each(|i| seg.words()[(b.offset / 8 + i) as usize].store(0, Ordering::Relaxed));
    assert!(seg.free_block(a.offset).is_err(), "the damage is found");
    assert_eq!(allocated(&mgr), 1, "the other free blocks are still listed");
    assert_eq!(header_words(seg, c.offset), words_of_c, "C's header is untouched");
}
