//! How flat fairmq-shm is: messages/s per payload size with the sizes interleaved (every size in
//! run 1, then every size in run 2, ...), so the comparison across sizes sees the same machine state
//! the way a row of the throughput table compares systems. Each run's rate of a size is divided by
//! the same run's rate at the first size; the table shows the median of those ratios.

use super::super::options::{Mode, Options, System};
use super::super::report::{self, Summary};
use super::super::spawn::Runner;

/// Prints the table, in FairMQ's benchmark mode only: in `touch` mode the bytes are moved, so the
/// rate follows the memory bandwidth, not the per-message cost this section is about.
pub fn run(runner: &mut Runner, o: &Options) {
    for mode in o.modes.iter().copied().filter(|&m| m == Mode::Fairmq) {
        println!(
            "\n### fairmq-shm against payload size, mode `{}`, sizes interleaved: {} runs of {} s per size, segment {}",
            mode.name(),
            o.runs,
            o.seconds,
            report::size(o.segment_size)
        );
        println!();
        let first = o.sizes.first().map_or_else(String::new, |&s| report::size(s));
        report::header(&["size".into(), "msg/s".into(), "GB/s".into(), format!("msg/s / msg/s at {first}, per run")]);
        // rates[size][run]; a failed cell leaves a hole (NaN) that the ratios skip.
        let mut rates = vec![Vec::new(); o.sizes.len()];
        for _ in 0..o.runs {
            for (i, &size) in o.sizes.iter().enumerate() {
                match runner.throughput(System::Shm, mode, size, 1, 1) {
                    Ok(r) => rates[i].push(r.messages),
                    Err(e) => {
                        eprintln!("fairmq-shm {}: {e}", report::size(size));
                        rates[i].push(f64::NAN);
                    }
                }
            }
        }
        for (i, &size) in o.sizes.iter().enumerate() {
            let ok: Vec<f64> = rates[i].iter().copied().filter(|r| r.is_finite()).collect();
            let ratios: Vec<f64> =
                rates[i].iter().zip(&rates[0]).map(|(r, base)| r / base).filter(|q| q.is_finite()).collect();
            let cells = match (Summary::of(&ok), Summary::of(&ratios)) {
                (Some(m), Some(q)) => vec![
                    report::size(size),
                    m.show(report::rate),
                    report::gbps(m.median * size as f64),
                    q.show(|v| format!("{v:.2}")),
                ],
                _ => vec![report::size(size), "failed".into(), "-".into(), "-".into()],
            };
            report::row(&cells);
        }
    }
}
