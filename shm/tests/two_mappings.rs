//! Random sequences of alloc, copy and drop through two transports of one session (two mappings of
//! the same segment): live blocks never overlap, bytes stay as written, and all memory comes back.

mod common;
use common::*;
use fairmq_shm::testing::meta::Record;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Alloc { via_b: bool, size: usize },
    Copy { which: usize, via_b: bool },
    Drop { which: usize },
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<bool>(), prop_oneof![1usize..64, 64usize..5000, 5000usize..300_000])
            .prop_map(|(via_b, size)| Op::Alloc { via_b, size }),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(which, via_b)| Op::Copy { which, via_b }),
        3 => any::<usize>().prop_map(|which| Op::Drop { which }),
        1 => Just(Op::Flush),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn random_alloc_copy_free_across_two_mappings(ops in prop::collection::vec(op(), 1..150)) {
        let s = Session::new("prop");
        let a = s.transport("a");
        let b = s.transport("b");
        a.flush();
        let free0 = a.segment_stats().free;
        // (message, stamp byte): copies share a block and therefore a stamp.
        let mut live: Vec<(fairmq_shm::Message, u8)> = Vec::new();
        let mut stamp = 0u8;
        for op in ops {
            match op {
                Op::Alloc { via_b, size } => {
                    let t = if via_b { &b } else { &a };
                    let mut m = t.new_message_with_size(size).unwrap();
                    stamp = stamp.wrapping_add(1);
                    m.data_mut().unwrap().fill(stamp);
                    live.push((m, stamp));
                }
                Op::Copy { which, via_b } if !live.is_empty() => {
                    let (src, st) = &live[which % live.len()];
                    let mut c = if via_b { b.new_message() } else { a.new_message() };
                    c.copy_from(src).unwrap();
                    let st = *st;
                    live.push((c, st));
                }
                Op::Drop { which } if !live.is_empty() => {
                    let (m, st) = live.swap_remove(which % live.len());
                    prop_assert!(m.data().iter().all(|&x| x == st), "bytes changed under a live message");
                }
                Op::Flush => { a.flush(); b.flush(); }
                _ => {}
            }
            // No two distinct live blocks overlap, compared by (segment, offset) whichever mapping
            // made them (copies share one block exactly).
            let mut ranges: Vec<(u16, u64, u64)> = live
                .iter()
                .filter_map(|(m, _)| match m.record() {
                    Record::Block { segment, offset, delta, size, .. } => {
                        let start = offset + u64::from(delta);
                        Some((segment, start, start + size))
                    }
                    _ => None,
                })
                .collect();
            ranges.sort();
            ranges.dedup();
            for w in ranges.windows(2) {
                prop_assert!(w[0].0 != w[1].0 || w[0].2 <= w[1].1, "blocks overlap: {:?}", w);
            }
        }
        for (m, st) in &live {
            prop_assert!(m.data().iter().all(|&x| x == *st), "bytes changed under a live message");
        }
        drop(live);
        a.flush();
        b.flush();
        a.check_segment().map_err(TestCaseError::fail)?;
        prop_assert_eq!(a.segment_stats().free, free0, "every byte freed came back");
    }
}
