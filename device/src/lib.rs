//! # fairmq: FairMQ devices in Rust
//!
//! This crate runs FairMQ devices. A *device* is one step of a processing chain: a process, or a
//! thread of one, that exchanges messages with other devices over named *channels*. Every device
//! goes through FairMQ's state machine. The command-line options, the channel configuration, the
//! control modes, the signals and the log lines follow FairMQ, so launch scripts and
//! configuration files written for C++ FairMQ keep working.
//!
//! # A first device
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
//!         self.left = self.left.saturating_sub(1);
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
//!
//! The sampler reads its option `--max-iterations` when its task is initialised. Each call of
//! `conditional_run` then sends one message on sub-channel 0 of the channel `data`. Returning
//! false ends RUNNING. A launch script starts it as it would start a C++ FairMQ device:
//!
//! ```text
//! sampler --id sampler1 --max-iterations 10 --control static \
//!     --channel-config name=data,type=push,method=bind,address=tcp://*:5555
//! ```
//!
//! # The state machine
//!
//! In a *working* [`State`], the device's thread does the state's work and calls a hook. In the
//! other states, the device waits for a controller to request a [`Transition`]. The working
//! states BINDING, CONNECTING, INITIALIZING TASK, RESETTING TASK and RESETTING DEVICE move on by
//! themselves when their work is done. RUNNING moves on to READY when its loop ends, or on `Stop`.
//!
//! ```text
//! IDLE --InitDevice--> INITIALIZING DEVICE --CompleteInit--> INITIALIZED
//! INITIALIZED --Bind--> BINDING --> BOUND --Connect--> CONNECTING --> DEVICE READY
//! DEVICE READY --InitTask--> INITIALIZING TASK --> READY --Run--> RUNNING --Stop--> READY
//! READY --ResetTask--> RESETTING TASK --> DEVICE READY
//! INITIALIZED, BOUND or DEVICE READY --ResetDevice--> RESETTING DEVICE --> IDLE
//! IDLE --End--> EXITING
//! every state but ERROR --ErrorFound--> ERROR
//! ```
//!
//! | state | what the framework does | the hooks it calls |
//! |---|---|---|
//! | INITIALIZING DEVICE | reads the channel configuration, waits for `CompleteInit`, then creates the transports and the channels | [`Device::init`], before the channels exist |
//! | BINDING | binds the channels whose method is `bind` | [`Device::bind`] |
//! | CONNECTING | connects the other channels, retrying until `--init-timeout` | [`Device::connect`] |
//! | INITIALIZING TASK | | [`Device::init_task`] |
//! | RUNNING | calls the run hooks or the data handlers | [`Device::pre_run`]; then [`Device::conditional_run`] and [`Device::run`], or [`Device::handle_data`] and [`Device::handle_parts`]; then [`Device::post_run`] |
//! | RESETTING TASK | | [`Device::reset_task`] |
//! | RESETTING DEVICE | closes the channels and the transports | [`Device::reset`] |
//!
//! An error or a panic in a hook takes the device to ERROR. In ERROR or EXITING, the device's
//! state loop returns. The module [`state`] names the states and their legal edges. The module
//! [`state_machine`] holds the engine that runs them.
//!
//! # Channels
//!
//! A channel has a name (`data`) and one or more sub-channels (`data[0]`, `data[1]`, ...). Each
//! sub-channel is a [`Channel`]: a socket with its [`ChannelConfig`] (socket type, `bind` or
//! `connect`, address, buffer sizes, timeouts, ...). Two options describe the channels, in
//! FairMQ's formats (see [`channel_parsers`]):
//!
//! - `--channel-config name=data,type=push,method=bind,address=tcp://*:5555` describes one
//!   channel per token.
//! - `--mq-config topology.json` reads a JSON file that describes many devices. The device takes
//!   the entry whose `key` (or `id`) equals its `--config-key`, or else its `--id`.
//!
//! The configuration is kept in the device's [`Properties`], under the keys
//! `chans.<name>.<index>.<property>`. Hooks reach the channels through the [`Context`]:
//! [`Context::channel`], [`Context::send`], [`Context::receive`] and their variants.
//!
//! # Transports
//!
//! A channel moves its messages with one of two transports:
//!
//! - `zeromq` puts the payload into ZeroMQ frames. It is wire-compatible with C++ FairMQ.
//! - `shmem` keeps the payload in shared memory and passes only a small record to the receiver.
//!   No send or receive copies the payload. Processes share memory when they use the same
//!   `--session`.
//!
//! `--transport` sets the device's default transport (`zeromq` unless given). A sub-channel's
//! `transport` property overrides it, so one device may use both. [`Transport`], [`Message`],
//! [`Socket`] and [`Poller`] serve either transport (see [`transport`]). An [`UnmanagedRegion`]
//! is a large buffer whose pieces travel as messages (see [`region`]).
//!
//! # Writing a device
//!
//! A device implements the [`Device`] trait. Every hook has a default that does nothing. RUNNING
//! works in one of two ways:
//!
//! - Without data handlers, the device calls [`Device::conditional_run`] until it returns false,
//!   then [`Device::run`] once. `--rate` limits the calls per second.
//! - With data handlers, every message that a registered channel receives goes to
//!   [`Device::handle_data`] or [`Device::handle_parts`]. [`Context::on_data`] and
//!   [`Context::on_data_parts`] register a channel, in [`Device::init`] or [`Device::init_task`].
//!   A handler that returns false ends RUNNING.
//!
//! Every accepted transition interrupts the device's transports. A blocking send or receive then
//! returns an error, and the loops of RUNNING end. A hook with a loop of its own should end it
//! when [`Context::new_state_pending`] is true. A hook reads the options through
//! [`Context::config`]. The `log` macros write lines in FairMQ's format (see [`logging`]).
//!
//! # Running a device
//!
//! [`Program`] turns a device into a program, as FairMQ's `runDevice` does. [`Program::run`]
//! parses FairMQ's options (see [`options`]) and the program's own ([`Program::options`]). It
//! then builds the device, starts the plugins and runs the state machine on the main thread. The
//! exit code is 0 when the device reached EXITING, and 1 after ERROR or bad input.
//!
//! The builtin controller drives the states (see [`control`]). `--control` chooses how:
//!
//! - `static` goes up to RUNNING, and shuts the device down once RUNNING ends.
//! - `dynamic` (the default; also `interactive` and `external`) goes up to RUNNING, then reads
//!   single keys from the terminal.
//! - `gui` goes up to RUNNING, then waits for a signal.
//! - `none` requests nothing: another plugin drives the device.
//!
//! SIGINT or SIGTERM shuts the device down through its states. A second SIGINT ends the process
//! at once. A [`Plugin`] runs beside the device and may drive it. `-P` loads a plugin from a
//! shared library, and [`Program::plugin`] adds one built into the program (see [`plugin`]).
//!
//! A program may also run a device in a thread of its own. [`config_from_args`] makes the
//! device's configuration, and [`spawn_device`] starts it without a controller. The returned
//! [`DeviceHandle`] then requests the transitions. [`run_role`] runs one of several devices that
//! one binary holds, chosen by the first argument.
//!
//! # Where things are
//!
//! - [`devices`]: FairMQ's builtin devices (benchmark sampler, sink, splitter, merger,
//!   multiplier, proxy). This crate also builds each as a binary: `fairmq-bsampler`,
//!   `fairmq-sink`, ... The binary `fairmq-shmmonitor` inspects and cleans shared-memory
//!   sessions.
//! - [`metrics`]: the Prometheus endpoint that `--metrics-address` starts.
//! - [`iterations`]: the `--max-iterations` limit of FairMQ's examples.
//! - [`properties`]: the configuration store that the device, its controller and its plugins
//!   share.
//! - `device/examples/`: FairMQ's examples in Rust, and `quickstart`, a topology of three
//!   processes over shared memory.
#![warn(missing_docs, unreachable_pub)]
// The crate denies unsafe code. Only the modules that cross C ABIs allow it: loading plugins
// (`plugin/dynamic.rs`), exporting a Rust plugin (`plugin/export.rs`), and calling libpmix
// (`plugin/pmix/ffi.rs`).
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
/// Entry points of the fuzz targets in `fuzz/` and of the test that replays their corpora. The
/// module exists only with the cargo feature `fuzzing`, and it is not part of the API.
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
