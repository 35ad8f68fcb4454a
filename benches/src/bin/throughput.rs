//! Cross-process throughput and latency of fairmq-shm, fairmq-zmq (ipc), bare zmq (ipc) and iceoryx2,
//! side by side in one run, plus how the cost grows with parts, senders and fragmentation.
//!
//! `cargo run --release -p fairmq-benches --bin throughput [--features iceoryx2] -- [--help]`
//!
//! The same binary is also each measurement's sender, receiver, ping and pong process (the hidden
//! `role` subcommand), and each device of the devices section (hidden `device` command); see
//! `fairmq_benches::harness`.

use clap::Parser;
use fairmq_benches::harness::{self, options::Cli, options::RoleCommand};

fn main() {
    // `device <name> <device options>`: one of FairMQ's builtin devices (the devices section).
    let args: Vec<String> = std::env::args().skip(1).collect();
    if matches!(args.first().map(String::as_str), Some("device" | "role")) {
        harness::spawn::end_with_harness();
    }
    if let [command, name, rest @ ..] = &args[..] {
        if command == "device" {
            std::process::exit(harness::devices::run_device(name, rest));
        }
    }
    let cli = Cli::parse();
    let result = match &cli.role {
        Some(RoleCommand::Role(a)) => harness::systems::run_role(a),
        None => harness::run(&cli.options),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
