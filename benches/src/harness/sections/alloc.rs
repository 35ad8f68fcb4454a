//! Allocator time against segment fragmentation, in this process.
//!
//! A heap is fragmented by a pattern of held blocks: blocks of pseudo-random sizes (64 B to 128 KiB,
//! log-uniform) are allocated until a fraction `fill` of the heap is used, then every other one is
//! freed, leaving holes between held blocks. Then alloc+free of one size is timed in batches of 16
//! (16 allocations, then 16 frees), reported per alloc+free pair. Two views:
//!
//! - the TLSF heap itself (`fairmq_shm::testing::tlsf`) over process memory: the algorithm, without the
//!   segment lock or any cache;
//! - fairmq-shm messages (`Transport::new_message_with_size` and drop) in a segment of the same size:
//!   what a sender pays, with the segment lock and the per-process caches. The caches are flushed
//!   after fragmenting and between sizes, so every size starts from the fragmented heap.

use super::super::options::Options;
use super::super::report;
use crate::session::{unique_session, SessionGuard};
use fairmq_shm::testing::tlsf::{Tlsf, CONTROL_WORDS};
use fairmq_shm::{BadAllocPolicy, Message, ShmConfig, Transport};
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

const BATCH: usize = 16;

/// Prints both tables.
pub fn run(o: &Options) {
    let budget = Duration::from_secs_f64((o.seconds / 5.0).max(0.05));
    println!(
        "\n### Allocator against fragmentation: {} heap, every other held block freed; ns per alloc+free (batches of {BATCH})",
        report::size(o.alloc_heap)
    );
    println!("\nTLSF heap alone (no lock, no caches):\n");
    let mut columns: Vec<String> = vec!["fill".into(), "fragmentation".into(), "free blocks".into()];
    columns.extend(o.alloc_sizes.iter().map(|&s| report::size(s)));
    report::header(&columns);
    for &fill in &o.alloc_fill {
        report::row(&tlsf_row(o, fill, budget));
    }
    println!("\nfairmq-shm messages (new_message_with_size + drop: segment lock, per-process caches):\n");
    report::header(&columns);
    for &fill in &o.alloc_fill {
        match message_row(o, fill, budget) {
            Ok(cells) => report::row(&cells),
            Err(e) => eprintln!("allocator section, fill {fill}: {e}"),
        }
    }
    println!("\nfragmentation = 1 - largest free block / free bytes; `no fit`: no free block is big enough.");
}

/// xorshift64*: the same pattern in both views and every run.
struct Pattern(u64);

impl Pattern {
    fn next_size(&mut self) -> usize {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let base = 64usize << (r % 11);
        base + (r >> 16) as usize % base
    }
}

/// Allocates pattern sizes with `alloc` until `fill` of `heap` bytes is held (or nothing fits);
/// returns the held blocks with every other one already given to `free`.
fn fragment<B>(heap: usize, fill: f64, mut alloc: impl FnMut(usize) -> Option<B>, mut free: impl FnMut(B)) -> Vec<B> {
    let mut pattern = Pattern(0x9E37_79B9_7F4A_7C15);
    let target = (heap as f64 * fill) as usize;
    let mut held = Vec::new();
    let mut used = 0;
    while used < target {
        let size = pattern.next_size();
        match alloc(size) {
            Some(b) => held.push(b),
            None => break,
        }
        used += size + 32;
    }
    let mut kept = Vec::with_capacity(held.len() / 2 + 1);
    for (i, b) in held.into_iter().enumerate() {
        if i % 2 == 1 {
            free(b);
        } else {
            kept.push(b);
        }
    }
    kept
}

/// Runs `batch` (which reports the operations it did, or `None` when nothing fits) for `budget`;
/// returns nanoseconds per operation.
fn time_per_op(budget: Duration, mut batch: impl FnMut() -> Option<usize>) -> Option<f64> {
    let start = Instant::now();
    let mut ops = 0;
    while start.elapsed() < budget {
        ops += batch()?;
    }
    Some(start.elapsed().as_nanos() as f64 / ops as f64)
}

fn cell(ns: Option<f64>) -> String {
    ns.map_or_else(|| "no fit".into(), report::duration_ns)
}

fn tlsf_row(o: &Options, fill: f64, budget: Duration) -> Vec<String> {
    let words: Vec<AtomicU64> = (0..o.alloc_heap / 8).map(|_| AtomicU64::new(0)).collect();
    let start = ((CONTROL_WORDS * 8).div_ceil(4096) * 4096) as u64;
    let t = Tlsf::new(&words, 0, start, (o.alloc_heap / 16 * 16) as u64);
    t.format();
    let owner = std::process::id();
    let alloc = |size: usize| t.alloc(size as u64, 16, owner).expect("heap intact").map(|b| b.offset);
    let free = |off: u64| {
        t.free(off).expect("heap intact");
    };
    let _held = fragment(o.alloc_heap, fill, alloc, free);
    let stats = t.stats();
    let fragmentation =
        if stats.free_bytes == 0 { 0.0 } else { 1.0 - stats.largest_free as f64 / stats.free_bytes as f64 };
    let mut cells = vec![format!("{fill}"), format!("{fragmentation:.3}"), stats.free_blocks.to_string()];
    for &size in &o.alloc_sizes {
        let mut offs = Vec::with_capacity(BATCH);
        let ns = time_per_op(budget, || {
            for _ in 0..BATCH {
                match alloc(size) {
                    Some(off) => offs.push(off),
                    None => break,
                }
            }
            let n = offs.len();
            for off in offs.drain(..) {
                free(off);
            }
            (n == BATCH).then_some(n)
        });
        cells.push(cell(ns));
    }
    cells
}

fn message_row(o: &Options, fill: f64, budget: Duration) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    // Declared first, dropped last: after the transport detached.
    let guard = SessionGuard::new(&unique_session("fmqbench-alloc"));
    let mut c = ShmConfig::new("alloc", guard.session());
    c.segment_size = o.alloc_heap as u64;
    // Fail at once when nothing fits: the table says "no fit" instead of waiting for frees.
    c.bad_alloc = BadAllocPolicy::default();
    let t = Transport::new(&c)?;
    let alloc = |size: usize| t.new_message_with_size(size).ok();
    let _held: Vec<Message> = fragment(o.alloc_heap, fill, alloc, drop);
    t.flush();
    let stats = t.segment_stats();
    let mut cells = vec![format!("{fill}"), format!("{:.3}", stats.fragmentation), stats.free_blocks.to_string()];
    for &size in &o.alloc_sizes {
        let mut msgs = Vec::with_capacity(BATCH);
        let ns = time_per_op(budget, || {
            for _ in 0..BATCH {
                match t.new_message_with_size(size) {
                    Ok(m) => msgs.push(m),
                    Err(_) => break,
                }
            }
            let n = msgs.len();
            msgs.clear();
            (n == BATCH).then_some(n)
        });
        t.flush();
        cells.push(cell(ns));
    }
    Ok(cells)
}
