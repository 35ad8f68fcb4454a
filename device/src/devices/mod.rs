//! FairMQ's builtin devices (each also a binary: `fairmq-bsampler`, `fairmq-sink`, ...).

mod bsampler;
mod routing;
mod sink;

pub use bsampler::BenchmarkSampler;
pub use routing::{Merger, Multiplier, Proxy, Splitter};
pub use sink::Sink;
