//! FairMQ's builtin devices (each also a binary: `fairmq-bsampler`, `fairmq-sink`, ...).

mod bsampler;
mod sink;

pub use bsampler::BenchmarkSampler;
pub use sink::Sink;
