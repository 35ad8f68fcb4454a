//! The cost of being watched: bsampler -> sink with both devices' metrics endpoints scraped every
//! 100 ms (Prometheus' `Accept` header, so OpenMetrics), beside the same devices without an
//! endpoint, interleaved run by run; both transports, 64 B and 1 MiB. The target is >= 0.97x.

use super::super::devices::{Chain, Implementation, Topology};
use super::super::options::{Options, System};
use super::super::report::{self, Summary};
use super::super::spawn::Runner;

const SIZES: [usize; 2] = [64, 1 << 20];

/// Prints one table.
pub fn run(runner: &mut Runner, o: &Options, systems: &[System]) {
    println!(
        "\n### Devices with metrics scraped every 100 ms beside none (bsampler -> sink, sampler binds): messages/s, {} runs of {} s per cell, median (min-max)",
        o.runs, o.seconds
    );
    println!();
    report::header(&["transport", "size", "no endpoint msg/s", "scraped msg/s", "scraped / none"].map(String::from));
    for &system in systems {
        let Some(name) = system.fairmq_transport() else { continue };
        for size in SIZES {
            let chain = |iterations, scraped| Chain {
                implementation: Implementation::Rust,
                transport: name,
                topology: Topology::SamplerBinds,
                size,
                parts: 1,
                iterations,
                scraped,
                profile: None,
            };
            // A first run sizes the cells: as many messages as the devices move in the cell's time.
            let iterations = match runner.devices(&chain(if size < 4096 { 200_000 } else { 2_000 }, false)) {
                Ok(r) => ((r.messages * o.seconds) as u64).max(200),
                Err(e) => {
                    eprintln!("{name} {}: {e}", report::size(size));
                    continue;
                }
            };
            let (mut none, mut scraped) = (Vec::new(), Vec::new());
            for _ in 0..o.runs {
                for (out, with) in [(&mut none, false), (&mut scraped, true)] {
                    match runner.devices(&chain(iterations, with)) {
                        Ok(r) => out.push(r.messages),
                        Err(e) => eprintln!("{name} {} scraped {with}: {e}", report::size(size)),
                    }
                }
            }
            let (none, scraped) = (Summary::of(&none), Summary::of(&scraped));
            let show = |s: &Option<Summary>| s.as_ref().map_or("failed".to_owned(), |s| s.show(report::rate));
            let median = |s: &Option<Summary>| s.as_ref().map(|s| s.median);
            report::row(&[
                name.to_owned(),
                report::size(size),
                show(&none),
                show(&scraped),
                report::ratio(median(&scraped), median(&none)),
            ]);
        }
    }
}
