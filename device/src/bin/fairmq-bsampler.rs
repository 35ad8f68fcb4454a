//! FairMQ's benchmark sampler.
use fairmq::devices::BenchmarkSampler;
use fairmq::Program;

fn main() -> std::process::ExitCode {
    Program::new(|_| Ok(BenchmarkSampler::default())).options(BenchmarkSampler::options).run()
}
