//! What a message costs in instructions and cache misses, which this noisy 2-core machine cannot
//! hide as it hides time: `fairmq-bsampler -> fairmq-sink` (sampler bound, FairMQ's command
//! lines) with both devices under callgrind (cache simulation on), run twice with different
//! message counts; the difference of the two runs' totals over the difference of the counts is
//! the cost per message, start-up and shut-down cancelled out. Send and receive are the two
//! processes' costs, without the instructions spent spinning for the peer or for memory (the
//! scheduler's doing, shown apart as waiting); D1 and LL are callgrind's simulated first-level
//! data and last-level misses,
//! for caches given on its command line (32 KiB 8-way L1s, a 32 MiB 16-way last level), not this
//! machine's: the counts compare across machines. A count near 0 may come out slightly negative
//! (the difference of two runs).

use super::super::devices::{Chain, Topology};
use super::super::options::System;
use super::super::report;
use super::super::spawn::Runner;

const SIZES: [usize; 4] = [64, 1024, 64 << 10, 1 << 20];

/// Per-message counts of one process.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    /// Outside the waiting functions.
    pub instructions: f64,
    /// First-level data cache misses, outside the waiting functions.
    pub d1_misses: f64,
    /// Last-level cache misses, outside the waiting functions.
    pub ll_misses: f64,
    /// Inside them (spinning for the peer or for memory).
    pub waiting: f64,
}

/// The totals of a callgrind output file: (instructions, D1 misses, LL misses), from its
/// `events:` and `summary:` (or `totals:`) lines.
pub fn totals(text: &str) -> Option<(f64, f64, f64)> {
    let events: Vec<&str> = text.lines().find_map(|l| l.strip_prefix("events:"))?.split_whitespace().collect();
    let values: Vec<f64> = text
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("summary:").or_else(|| l.strip_prefix("totals:")))?
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0.0))
        .collect();
    let get = |name: &str| events.iter().position(|e| *e == name).and_then(|i| values.get(i)).copied().unwrap_or(0.0);
    Some((get("Ir"), get("D1mr") + get("D1mw"), get("DLmr") + get("DLmw")))
}

/// Message counts of the two runs of a cell: enough that the difference dominates, few enough
/// for callgrind (about 50-100 times slower; zeromq copies every byte).
fn counts(transport: &str, size: usize) -> (u64, u64) {
    match (transport, size) {
        ("zeromq", s) if s >= 1 << 20 => (50, 250),
        ("zeromq", s) if s >= 64 << 10 => (500, 2_500),
        _ => (2_000, 12_000),
    }
}

/// Functions in which a process waits (spins) for its peer or for memory: their instructions are
/// the scheduler's doing, not the message's, and are counted apart.
const WAITING: [&str; 2] = ["spin_until", "spin_for_memory"];

/// The instructions spent in the [`WAITING`] functions (inclusive), from `callgrind_annotate`.
fn waiting(file: &std::path::Path) -> Result<f64, String> {
    let out = std::process::Command::new("callgrind_annotate")
        .args(["--inclusive=yes", "--show=Ir", "--threshold=100"])
        .arg(file)
        .output()
        .map_err(|e| format!("callgrind_annotate: {e}"))?;
    Ok(waiting_in(&String::from_utf8_lossy(&out.stdout)))
}

/// [`waiting`] from `callgrind_annotate`'s text: the first number of each line naming a waiting
/// function (its inclusive count, with thousands separators).
fn waiting_in(annotated: &str) -> f64 {
    annotated
        .lines()
        .filter(|l| WAITING.iter().any(|w| l.contains(&format!("::{w} ")) || l.contains(&format!("::{w}["))))
        .filter_map(|l| l.split_whitespace().next()?.replace(',', "").parse::<f64>().ok())
        .sum()
}

/// One run of `iterations` messages under callgrind; (sender, receiver) totals, the first being
/// the instructions outside the waiting functions, with the waiting ones as a fourth figure.
fn profiled(
    runner: &mut Runner,
    transport: &'static str,
    size: usize,
    iterations: u64,
) -> Result<[(f64, f64, f64, f64); 2], String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path();
    let profile = Some(path.to_path_buf());
    let chain =
        Chain { transport, topology: Topology::SamplerBinds, size, parts: 1, iterations, scraped: false, profile };
    runner.devices(&chain)?;
    let read = |id: &str| -> Result<(f64, f64, f64, f64), String> {
        let file = path.join(format!("{id}.callgrind"));
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{id}: {e}"))?;
        let (ir, d1, ll) = totals(&text).ok_or_else(|| format!("{id}: no totals in its callgrind output"))?;
        let wait = waiting(&file)?;
        Ok((ir - wait, d1, ll, wait))
    };
    Ok([read("sampler1")?, read("sink1")?])
}

/// (sender, receiver) cost per message at `size` on `transport`.
pub fn per_message(runner: &mut Runner, transport: &'static str, size: usize) -> Result<[Cost; 2], String> {
    let (n1, n2) = counts(transport, size);
    let (a, b) = (profiled(runner, transport, size, n1)?, profiled(runner, transport, size, n2)?);
    let n = (n2 - n1) as f64;
    Ok([0, 1].map(|i| Cost {
        instructions: (b[i].0 - a[i].0) / n,
        d1_misses: (b[i].1 - a[i].1) / n,
        ll_misses: (b[i].2 - a[i].2) / n,
        waiting: (b[i].3 - a[i].3) / n,
    }))
}

/// Prints one table.
pub fn run(runner: &mut Runner, systems: &[System]) {
    println!("\n### Instructions and cache misses per message, bsampler -> sink (sampler binds), callgrind");
    println!();
    report::header(
        &[
            "transport",
            "size",
            "send instr",
            "receive instr",
            "send + receive instr",
            "D1 misses (send + receive)",
            "LL misses (send + receive)",
            "waiting instr (send + receive)",
        ]
        .map(String::from),
    );
    for &system in systems {
        let transport = match system {
            System::Shm => "shmem",
            System::FmqZmq => "zeromq",
            _ => continue,
        };
        for size in SIZES {
            match per_message(runner, transport, size) {
                Ok([s, r]) => report::row(&[
                    transport.to_owned(),
                    report::size(size),
                    format!("{:.0}", s.instructions),
                    format!("{:.0}", r.instructions),
                    format!("{:.0}", s.instructions + r.instructions),
                    format!("{:.1}", s.d1_misses + r.d1_misses),
                    format!("{:.1}", s.ll_misses + r.ll_misses),
                    format!("{:.0}", s.waiting + r.waiting),
                ]),
                Err(e) => eprintln!("{transport} {}: {e}", report::size(size)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::totals;

    #[test]
    fn callgrind_totals_are_read_by_event_name() {
        let out = "version: 1\nevents: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\nfn=main\n1 5 0\nsummary: 1000 300 200 10 20 30 1 2 3\n";
        assert_eq!(totals(out), Some((1000.0, 50.0, 5.0)));
        let no_cache = "events: Ir\ntotals: 777\n";
        assert_eq!(totals(no_cache), Some((777.0, 0.0, 0.0)));
        assert_eq!(totals("events: Ir\n"), None);
    }

    #[test]
    fn waiting_is_read_from_the_inclusive_annotation() {
        let annotated = "\
   12,345,678 (100.0%)  ???:main [/x]
    1,000,000 ( 8.1%)  shm/src/transport/socket/lanes/mod.rs:fairmq_shm::transport::socket::lanes::spin_until [/x]
      200,000 ( 1.6%)  ???:fairmq_shm::transport::attachment::Attachment::spin_for_memory [/x]
       50,000 ( 0.4%)  ???:fairmq_shm::transport::socket::lanes::spin_until_other [/x]
";
        assert_eq!(super::waiting_in(annotated), 1_200_000.0);
    }
}
