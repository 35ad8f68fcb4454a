//! Cross-process throughput and latency of fairmq-shm, fairmq-zmq (ipc), bare zmq (ipc) and iceoryx2,
//! side by side in one run, plus how the cost grows with parts, senders and fragmentation.
//!
//! `cargo run --release -p fairmq-benches --bin throughput [--features iceoryx2] -- [--help]`
//!
//! The same binary is also each measurement's sender, receiver, ping and pong process (the hidden
//! `role` subcommand); see `fairmq_benches::harness`.

use clap::Parser;
use fairmq_benches::harness::{self, options::Cli, options::RoleCommand};

fn main() {
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
