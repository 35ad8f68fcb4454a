//! Round-trip latency between two processes: ping sends a fresh message, pong answers with a fresh
//! one of the same size. ZeroMQ-based systems use PAIR sockets over ipc and block in receive (unless
//! `--busy-poll`); iceoryx2 uses two publish-subscribe services and busy-polls, as its own benchmark.

use super::super::options::{Options, System};
use super::super::report::{self, Summary};
use super::super::spawn::Runner;
use super::missing_note;

/// Prints median and p99 per size and mode, with each system's median over fairmq-shm's.
pub fn run(runner: &mut Runner, o: &Options, systems: &[System], missing_iceoryx2: bool) {
    let wait = if o.busy_poll { "busy-polling" } else { "blocking" };
    println!(
        "\n### Round trip, ZeroMQ-based systems {wait}, iceoryx2 busy-polling: median / p99 (median of {} runs of {} s)",
        o.runs, o.seconds
    );
    println!();
    let mut columns: Vec<String> = vec!["size".into(), "mode".into()];
    columns.extend(systems.iter().map(|s| format!("{} median / p99", s.name())));
    if let Some(reference) = systems.first() {
        columns.extend(systems[1..].iter().map(|s| format!("{} / {}", s.name(), reference.name())));
    }
    report::header(&columns);
    for &size in &o.latency_sizes {
        for &mode in &o.modes {
            let mut medians = vec![Vec::new(); systems.len()];
            let mut p99s = vec![Vec::new(); systems.len()];
            for _ in 0..o.runs {
                for (i, &s) in systems.iter().enumerate() {
                    match runner.latency(s, mode, size) {
                        Ok(l) => {
                            medians[i].push(l.median_ns);
                            p99s[i].push(l.p99_ns);
                        }
                        Err(e) => eprintln!("{}: {e}", s.name()),
                    }
                }
            }
            let summaries: Vec<Option<(Summary, Summary)>> =
                medians.iter().zip(&p99s).map(|(m, p)| Some((Summary::of(m)?, Summary::of(p)?))).collect();
            let mut cells = vec![report::size(size), mode.name().to_owned()];
            for s in &summaries {
                cells.push(match s {
                    Some((m, p)) => format!("{} / {}", report::duration_ns(m.median), report::duration_ns(p.median)),
                    None => "failed".into(),
                });
            }
            let median = |s: &Option<(Summary, Summary)>| s.as_ref().map(|(m, _)| m.median);
            if let Some(reference) = summaries.first() {
                cells.extend(summaries[1..].iter().map(|s| report::ratio(median(s), median(reference))));
            }
            report::row(&cells);
        }
    }
    missing_note(missing_iceoryx2);
}
