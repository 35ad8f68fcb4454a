//! How the cost grows with parts per multipart (one size, many part counts) and with the number of
//! sender processes feeding one receiver. Against payload size, see the main table.

use super::super::options::{Options, System};
use super::super::report;
use super::super::spawn::Runner;
use super::{measure, missing_note, rate_cells, rate_columns};

/// Multiparts/s against parts per multipart; also parts/s, the per-part cost's inverse.
pub fn parts(runner: &mut Runner, o: &Options, systems: &[System], missing_iceoryx2: bool) {
    for &mode in &o.modes {
        println!(
            "\n### Parts per multipart, {} parts, mode `{}`: multiparts/s (GB/s of payload), parts/s in the last columns",
            report::size(o.parts_size),
            mode.name()
        );
        println!();
        let mut columns = rate_columns(&["parts"], systems);
        columns.extend(systems.iter().map(|s| format!("{} parts/s", s.name())));
        report::header(&columns);
        for &n in &o.parts_scaling {
            let rates = measure(runner, systems, o.runs, |r, s| r.throughput(s, mode, o.parts_size, n, 1));
            let mut cells = rate_cells(vec![n.to_string()], &rates);
            cells.extend(rates.iter().map(|r| match r {
                Some((m, _)) => report::rate(m.median * n as f64),
                None => "-".into(),
            }));
            report::row(&cells);
        }
        missing_note(missing_iceoryx2);
    }
}

/// Total messages/s into one receiver from 1, 2, 4 ... sender processes.
pub fn senders(runner: &mut Runner, o: &Options, systems: &[System], missing_iceoryx2: bool) {
    for &mode in &o.modes {
        println!(
            "\n### Senders into one receiver, mode `{}`: total messages/s received (each sender sends for {} s)",
            mode.name(),
            o.seconds
        );
        println!();
        report::header(&rate_columns(&["size", "senders"], systems));
        for &size in &o.senders_sizes {
            for &n in &o.senders {
                let rates = measure(runner, systems, o.runs, |r, s| r.throughput(s, mode, size, 1, n));
                report::row(&rate_cells(vec![report::size(size), n.to_string()], &rates));
            }
        }
        missing_note(missing_iceoryx2);
    }
}
