//! FairMQ's sink: receives, counts, reports rates.
use fairmq::devices::Sink;
use fairmq::Program;

fn main() -> std::process::ExitCode {
    Program::new(|_| Ok(Sink::default())).options(Sink::options).run()
}
