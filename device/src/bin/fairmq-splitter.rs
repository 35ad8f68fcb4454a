//! FairMQ's builtin splitter device.
use fairmq::devices::Splitter;
use fairmq::Program;

fn main() -> std::process::ExitCode {
    Program::new(|_| Ok(Splitter::default())).options(Splitter::options).run()
}
