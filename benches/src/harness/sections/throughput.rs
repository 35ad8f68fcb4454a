//! The main table: one-way messages/s and GB/s per payload size and parts per multipart, one table
//! per mode, with each system's ratio to fairmq-shm. Read down a column for the cost against size.

use super::super::options::{Options, System};
use super::super::report::{self};
use super::super::spawn::Runner;
use super::{measure, missing_note, rate_cells, rate_columns};

/// Prints one table per mode.
pub fn run(runner: &mut Runner, o: &Options, systems: &[System], missing_iceoryx2: bool) {
    for &mode in &o.modes {
        println!(
            "\n### One-way throughput, mode `{}`: {} runs of {} s per cell, median (min-max); a multipart counts as one message",
            mode.name(),
            o.runs,
            o.seconds
        );
        println!();
        report::header(&rate_columns(&["size", "parts"], systems));
        for &size in &o.sizes {
            for &parts in &o.parts {
                let rates = measure(runner, systems, o.runs, |r, s| r.throughput(s, mode, size, parts, 1));
                report::row(&rate_cells(vec![report::size(size), parts.to_string()], &rates));
            }
        }
        missing_note(missing_iceoryx2);
    }
}
