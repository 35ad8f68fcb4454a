//! The sections of the harness's output, each a table (or one per mode).
//!
//! Cells of one row are measured interleaved (run 1 of every system, then run 2, ...), so every
//! system of a row sees the same state of this noisy machine; ratios compare the medians of a row.

pub mod alloc;
pub mod devices;
pub mod flat;
pub mod instructions;
pub mod latency;
pub mod metrics;
pub mod scaling;
pub mod throughput;
pub mod topologies;

use super::options::System;
use super::report::{self, Summary};
use super::spawn::{Rate, Runner};

/// Medians of messages/s and bytes/s of one system in one row; `None` if every run failed.
pub type RowRate = Option<(Summary, Summary)>;

/// Measures `runs` rates per system, interleaved; failures go to stderr and count as missing runs.
pub fn measure(
    runner: &mut Runner,
    systems: &[System],
    runs: usize,
    mut cell: impl FnMut(&mut Runner, System) -> Result<Rate, String>,
) -> Vec<RowRate> {
    let mut rates: Vec<Vec<Rate>> = vec![Vec::new(); systems.len()];
    for _ in 0..runs {
        for (i, &s) in systems.iter().enumerate() {
            match cell(runner, s) {
                Ok(r) => rates[i].push(r),
                Err(e) => eprintln!("{}: {e}", s.name()),
            }
        }
    }
    rates
        .iter()
        .map(|v| {
            let m: Vec<f64> = v.iter().map(|r| r.messages).collect();
            let b: Vec<f64> = v.iter().map(|r| r.bytes).collect();
            Some((Summary::of(&m)?, Summary::of(&b)?))
        })
        .collect()
}

/// Column titles of a rate table: per system messages/s and GB/s, then each system's ratio to the
/// first (the reference, fairmq-shm by default).
pub fn rate_columns(lead: &[&str], systems: &[System]) -> Vec<String> {
    let mut c: Vec<String> = lead.iter().map(|s| s.to_string()).collect();
    for s in systems {
        c.push(format!("{} msg/s", s.name()));
        c.push(format!("{} GB/s", s.name()));
    }
    if let Some(reference) = systems.first() {
        for s in &systems[1..] {
            c.push(format!("{} / {}", s.name(), reference.name()));
        }
    }
    c
}

/// The cells matching [`rate_columns`].
pub fn rate_cells(lead: Vec<String>, rates: &[RowRate]) -> Vec<String> {
    let mut c = lead;
    for r in rates {
        match r {
            Some((m, b)) => {
                c.push(m.show(report::rate));
                c.push(report::gbps(b.median));
            }
            None => c.extend(["failed".to_owned(), "-".to_owned()]),
        }
    }
    let median = |r: &RowRate| r.as_ref().map(|(m, _)| m.median);
    if let Some(reference) = rates.first() {
        for r in &rates[1..] {
            c.push(report::ratio(median(r), median(reference)));
        }
    }
    c
}

/// The note printed under a table when iceoryx2 was asked for but is not in this build.
pub fn missing_note(missing_iceoryx2: bool) {
    if missing_iceoryx2 {
        println!("\n{}", super::systems::ICEORYX2_MISSING);
    }
}
