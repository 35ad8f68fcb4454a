//! FairMQ's builtin proxy device.
use fairmq::devices::Proxy;
use fairmq::Program;

fn main() -> std::process::ExitCode {
    Program::new(|_| Ok(Proxy::default())).options(Proxy::options).run()
}
