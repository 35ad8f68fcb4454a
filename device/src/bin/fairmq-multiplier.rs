//! FairMQ's builtin multiplier device.
use fairmq::devices::Multiplier;
use fairmq::Program;

fn main() -> std::process::ExitCode {
    Program::new(|_| Ok(Multiplier::default())).options(Multiplier::options).run()
}
