//! FairMQ's builtin devices. This crate also builds each as a binary of its own.
//!
//! - [`BenchmarkSampler`] (`fairmq-bsampler`) sends messages of a chosen size as fast as allowed.
//! - [`Sink`] (`fairmq-sink`) receives and counts messages, and reports counts and rates.
//! - [`Splitter`] (`fairmq-splitter`) deals messages round robin over the sub-channels of its
//!   output.
//! - [`Merger`] (`fairmq-merger`) sends what arrives on any input sub-channel to one output.
//! - [`Multiplier`] (`fairmq-multiplier`) sends each message to every sub-channel of every
//!   output channel.
//! - [`Proxy`] (`fairmq-proxy`) forwards one input to one output.

mod bsampler;
mod routing;
mod sink;

pub use bsampler::BenchmarkSampler;
pub use routing::{Merger, Multiplier, Proxy, Splitter};
pub use sink::Sink;
