//! The cross-process harness behind `cargo run --release -p fairmq-benches --bin throughput`.
//!
//! - [`options`]: the command line (sections, systems, modes, sizes, time) and the hidden `role`
//!   subcommand of child processes.
//! - [`spawn`]: one measurement as separate processes (the harness starts itself), with a watchdog
//!   and clean-up of shared memory.
//! - [`systems`]: one module per system (fairmq-shm, fairmq-zmq, bare zmq, iceoryx2), all built on
//!   the shared loops of [`workload`].
//! - [`devices`]: FairMQ's builtin devices run as the harness's children, for device-level cells;
//!   [`device_ping`]: two devices timing round trips.
//! - [`sections`]: the tables: throughput, flatness against size, latency, parts, senders, allocator,
//!   devices beside the transport.
//! - [`topologies`]: multi-peer topologies of builtin devices (fan-out, fan-in, n-m, publish,
//!   proxy), fairmq-rs's or C++ FairMQ's.
//! - [`report`]: summaries and formatting.
//! - [`scraper`]: a scraper of the devices' metrics endpoints (the `metrics` section's cost).

pub mod device_ping;
pub mod devices;
pub mod options;
pub mod report;
pub mod scraper;
pub mod sections;
pub mod spawn;
pub mod systems;
pub mod topologies;
pub mod workload;

use options::{Options, Section, System};

/// Runs the selected sections; returns an error only when the harness itself cannot start.
pub fn run(o: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let missing_iceoryx2 = o.systems.iter().any(|&s| !systems::built(s));
    let chosen: Vec<System> = o.systems.iter().copied().filter(|&s| systems::built(s)).collect();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "fairmq-rs benchmark harness: {cores} cores; systems {}; modes {}",
        chosen.iter().map(|s| s.name()).collect::<Vec<_>>().join(", "),
        o.modes.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
    );
    println!("command: {}", std::env::args().collect::<Vec<_>>().join(" "));
    if missing_iceoryx2 {
        println!("{}", systems::ICEORYX2_MISSING);
    }
    let mut runner = spawn::Runner::new(o)?;
    for section in &o.sections {
        match section {
            Section::Throughput => sections::throughput::run(&mut runner, o, &chosen, missing_iceoryx2),
            Section::Latency => sections::latency::run(&mut runner, o, &chosen, missing_iceoryx2),
            Section::Parts => sections::scaling::parts(&mut runner, o, &chosen, missing_iceoryx2),
            Section::Senders => sections::scaling::senders(&mut runner, o, &chosen, missing_iceoryx2),
            Section::Alloc => sections::alloc::run(o),
            Section::Flat => sections::flat::run(&mut runner, o),
            Section::Devices => sections::devices::run(&mut runner, o, &chosen),
            Section::Metrics => sections::metrics::run(&mut runner, o, &chosen),
            Section::Instructions => sections::instructions::run(&mut runner, &chosen),
            Section::Topologies => sections::topologies::run(&mut runner, o, &chosen),
        }
    }
    Ok(())
}
