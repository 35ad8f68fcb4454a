//! FairMQ's builtin merger device.
use fairmq::devices::Merger;
use fairmq::Program;

fn main() -> std::process::ExitCode {
    Program::new(|_| Ok(Merger::default())).options(Merger::options).run()
}
