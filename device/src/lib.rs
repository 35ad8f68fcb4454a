//! # fairmq: FairMQ devices in Rust
//!
//! A device is a process with FairMQ's state machine (`IDLE` ... `RUNNING` ... `EXITING`) that
//! exchanges messages over named channels; each channel uses the zeromq or the shmem transport.
//! Options, channel configuration (`--channel-config`, JSON `--mq-config`), control modes,
//! signals and log lines follow FairMQ, so launch scripts and configs keep working.
//!
//! ```no_run
//! use fairmq::{Context, Device, HookResult, Program};
//!
//! struct Sampler { left: u64 }
//!
//! impl Device for Sampler {
//!     fn init_task(&mut self, ctx: &Context) -> HookResult {
//!         self.left = ctx.config().get::<u64>("max-iterations")?;
//!         Ok(())
//!     }
//!     fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
//!         let mut msg = ctx.new_simple_message("Hello")?;
//!         if ctx.send(&mut msg, "data", 0).is_err() {
//!             return Ok(false); // interrupted: a transition is pending
//!         }
//!         self.left -= 1;
//!         Ok(self.left > 0)
//!     }
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     Program::new(|_config| Ok(Sampler { left: 0 }))
//!         .options(|o| {
//!             o.add("max-iterations", fairmq::options::Kind::U64, 1u64, "messages to send");
//!         })
//!         .run()
//! }
//! ```
#![warn(missing_docs, unreachable_pub)]
// Unsafe code only where plugins cross their C ABI (`plugin/dynamic.rs`, allowed there alone).
#![deny(unsafe_code)]

mod channel;
pub mod channel_parsers;
mod channel_rates;
mod config_error;
mod console;
pub mod control;
mod device;
pub mod devices;
mod error;
mod fd_limit;
mod file_trust;
/// Entry points of the fuzz targets (`fuzz/`) and of the test replaying their corpora (cargo
/// feature `fuzzing`, not part of the API).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod handle;
pub mod iterations;
mod lifecycle;
mod log_limiter;
pub mod logging;
pub mod metrics;
pub mod network;
pub mod options;
mod panic_boundary;
pub mod plugin;
mod program;
pub mod properties;
mod rate_limiter;
pub mod region;
pub mod state;
pub mod state_machine;

mod telemetry;
pub mod terminal;
pub mod transport;

pub use channel::{Channel, ChannelConfig, ChannelError};
pub use control::{ControlMode, DeviceHandle};
pub use device::{ChannelRegistry, Context, Device};
pub use error::{BoxError, Error, ErrorKind, HookResult};
pub use fairmq_zmq::{SocketType, Timeout, TransferCode, TransferError, TransportKind};
pub use iterations::Iterations;
pub use lifecycle::run_state_machine;
pub use plugin::{Plugin, PluginServices};
pub use program::{config_from_args, expect_state, process_args, run_role, spawn_device, Program};
pub use properties::{Properties, Value};
pub use rate_limiter::RateLimiter;
pub use region::UnmanagedRegion;
pub use state::{State, Transition};
pub use transport::{Message, Parts, Poller, Socket, Transport};
