//! What a device is: the [`Device`] trait, and the [`Context`] that its hooks get.
//!
//! - [`Device`] has one hook per working state, and the data handlers of RUNNING. Every state
//!   hook has a default that does nothing; the data handlers' defaults return an error.
//! - [`Context`] is what a hook works with: the device's channels, messages of its transports,
//!   its configuration and its state machine. The hooks get it on the device's thread.
//! - [`ChannelRegistry`] lists the channels that a device expects, for `--print-channels`.

use crate::channel::{Channel, ChannelConfig};
use crate::error::{Error, HookResult};
use crate::properties::Properties;
use crate::state::{State, Transition};
use crate::state_machine::StateMachine;
use crate::transport::{Message, Parts, Transport};
use fairmq_zmq::Timeout;
use fairmq_zmq::{TransferResult, TransportKind};
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// A FairMQ device. Every hook has a default. The defaults do nothing, except that
/// `conditional_run` returns false and the data handlers, `handle_data` and `handle_parts`, return
/// an error.
///
/// The hooks run on the device's thread, the thread of the state loop, one at a time. An `Err` or
/// a panic in any hook takes the device to `ERROR`. In `RUNNING`, the device calls one of two
/// kinds of hooks:
///
/// - If channels are registered with [`Context::on_data`] or [`Context::on_data_parts`], the
///   device calls the data handlers.
/// - Otherwise the device calls `conditional_run` in a loop, and `run` once after it.
///
/// # Examples
///
/// A device that counts its `conditional_run` calls, driven through FairMQ's states by the
/// program that runs it (as a controller plugin or `--control` would drive it).
///
/// ```
/// use fairmq::{config_from_args, spawn_device, Context, Device, HookResult, State, Transition};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// struct Counter(Arc<AtomicU64>);
///
/// impl Device for Counter {
///     fn conditional_run(&mut self, _ctx: &Context) -> HookResult<bool> {
///         Ok(self.0.fetch_add(1, Ordering::Relaxed) + 1 < 3) // false ends RUNNING
///     }
/// }
///
/// let runs = Arc::new(AtomicU64::new(0));
/// let (h, thread) = spawn_device(Counter(runs.clone()), config_from_args(&["--id", "counter"], vec![])?);
/// let go = |t: Transition, s: State| {
///     assert!(h.change_state(t));
///     assert!(h.wait_for_state(s, Some(Duration::from_secs(60))).unwrap());
/// };
/// go(Transition::InitDevice, State::InitializingDevice);
/// go(Transition::CompleteInit, State::Initialized);
/// go(Transition::Bind, State::Bound);
/// go(Transition::Connect, State::DeviceReady);
/// go(Transition::InitTask, State::Ready);
/// go(Transition::Run, State::Running);
/// assert!(h.wait_for_state(State::Ready, Some(Duration::from_secs(60))).unwrap(), "the run ended by itself");
/// assert_eq!(runs.load(Ordering::Relaxed), 3);
/// go(Transition::ResetTask, State::DeviceReady);
/// go(Transition::ResetDevice, State::Idle);
/// go(Transition::End, State::Exiting);
/// thread.join().unwrap().unwrap();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(unused_variables)]
pub trait Device: Send {
    /// Called in `INITIALIZING DEVICE`, before the channels exist. Register data handlers and add
    /// channels here.
    fn init(&mut self, ctx: &Context) -> HookResult {
        Ok(())
    }
    /// `BINDING`, after the binding channels are bound.
    fn bind(&mut self, ctx: &Context) -> HookResult {
        Ok(())
    }
    /// `CONNECTING`, after the connecting channels are connected.
    fn connect(&mut self, ctx: &Context) -> HookResult {
        Ok(())
    }
    /// `INITIALIZING TASK`: read options, register data handlers.
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        Ok(())
    }
    /// `RUNNING`, once before the loop.
    fn pre_run(&mut self, ctx: &Context) -> HookResult {
        Ok(())
    }
    /// Called in `RUNNING`, repeatedly, while it returns true and no transition is pending. It is
    /// not called when data handlers are registered.
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        Ok(false)
    }
    /// Called in `RUNNING`, once after the `conditional_run` loop. It is not called when data
    /// handlers are registered.
    fn run(&mut self, ctx: &Context) -> HookResult {
        Ok(())
    }
    /// Called in `RUNNING`, once after the loop. A transition is then already pending, so the
    /// transports are interrupted.
    fn post_run(&mut self, ctx: &Context) -> HookResult {
        Ok(())
    }
    /// `RESETTING TASK`.
    fn reset_task(&mut self, ctx: &Context) -> HookResult {
        Ok(())
    }
    /// `RESETTING DEVICE`, before the channels are destroyed.
    fn reset(&mut self, ctx: &Context) -> HookResult {
        Ok(())
    }
    /// Handles a message that arrived on sub-channel `index` of `channel`, a channel registered
    /// with `on_data`. Returning false ends `RUNNING`. The default returns an error.
    fn handle_data(&mut self, ctx: &Context, channel: &str, msg: &mut Message, index: usize) -> HookResult<bool> {
        Err(format!("no data handler implemented for channel '{channel}'").into())
    }
    /// Handles a multipart message that arrived on sub-channel `index` of `channel`, a channel
    /// registered with `on_data_parts`. Returning false ends `RUNNING`. The default returns an
    /// error.
    fn handle_parts(&mut self, ctx: &Context, channel: &str, parts: &mut Parts, index: usize) -> HookResult<bool> {
        Err(format!("no multipart data handler implemented for channel '{channel}'").into())
    }
    /// Called before `--print-channels`: register expected channels here.
    fn register_channel_endpoints(&self, registry: &mut ChannelRegistry) {}
}

/// The channels that a device declares for `--print-channels`, printed as `<name>:<min>:<max>`.
#[derive(Debug, Default)]
pub struct ChannelRegistry {
    entries: Vec<(String, u16, u16)>,
}

impl ChannelRegistry {
    /// Declares channel `name` with `min..=max` sub-channels. Returns false if `name` is already
    /// declared.
    pub fn register(&mut self, name: &str, min: u16, max: u16) -> bool {
        if self.entries.iter().any(|e| e.0 == name) {
            log::warn!("Registering channel: name already registered: \"{name}\"");
            return false;
        }
        self.entries.push((name.to_owned(), min, max));
        true
    }

    /// The `--print-channels` text.
    pub fn print(&self) -> String {
        if self.entries.is_empty() {
            return "no channels registered.\n".into();
        }
        self.entries.iter().map(|(n, a, b)| format!("{n}:{a}:{b}\n")).collect()
    }
}

/// Whether a data handler takes single messages or multiparts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputKind {
    Single,
    Parts,
}

/// What hooks use: channels, messages, configuration, and the state machine.
pub struct Context {
    pub(crate) id: RefCell<String>,
    pub(crate) config: Arc<Properties>,
    pub(crate) sm: Arc<StateMachine>,
    pub(crate) channels: BTreeMap<String, Vec<Channel>>,
    pub(crate) transports: Arc<Mutex<Vec<Transport>>>,
    pub(crate) default_transport: Option<Transport>,
    pub(crate) inputs: RefCell<Vec<(String, InputKind)>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("id", &self.id.borrow()).field("channels", &self.channels.keys()).finish()
    }
}

impl Context {
    pub(crate) fn new(config: Arc<Properties>, sm: Arc<StateMachine>) -> Context {
        Context {
            id: RefCell::new(String::new()),
            config,
            transports: sm.telemetry().transports().clone(),
            sm,
            channels: BTreeMap::new(),
            default_transport: None,
            inputs: RefCell::new(Vec::new()),
        }
    }

    /// The device id, from `--id`. It is empty until `INITIALIZING DEVICE` reads it, just before
    /// the `init` hook runs.
    pub fn id(&self) -> String {
        self.id.borrow().clone()
    }

    /// The configuration store (options, custom options, channel properties).
    pub fn config(&self) -> &Properties {
        &self.config
    }

    /// The configuration store as an `Arc`, which the device shares with its plugins and
    /// controller.
    pub fn shared_config(&self) -> &Arc<Properties> {
        &self.config
    }

    /// Whether a transition is pending. If one is, loops in hooks should end.
    pub fn new_state_pending(&self) -> bool {
        self.sm.new_state_pending()
    }

    /// Sleeps for up to `d`. Returns false early when a transition becomes pending, and true if
    /// the full time passed.
    pub fn wait_for(&self, d: Duration) -> bool {
        self.sm.wait_for(d)
    }

    /// The current state.
    pub fn current_state(&self) -> State {
        self.sm.current_state()
    }

    /// Requests a transition (e.g. `ErrorFound`); returns whether it was accepted.
    pub fn change_state(&self, t: Transition) -> bool {
        self.sm.change_state(t)
    }

    /// The device's state machine. It is thread-safe, so other threads can follow or drive the
    /// device through it.
    pub fn state_machine(&self) -> &Arc<StateMachine> {
        &self.sm
    }

    /// Registers `channel` for single-message data handling: in `RUNNING`, the device's
    /// `handle_data` gets the channel's messages.
    pub fn on_data(&self, channel: &str) {
        self.register_input(channel, InputKind::Single);
    }

    /// Registers `channel` for multipart data handling: in `RUNNING`, the device's
    /// `handle_parts` gets the channel's messages.
    pub fn on_data_parts(&self, channel: &str) {
        self.register_input(channel, InputKind::Parts);
    }

    fn register_input(&self, channel: &str, kind: InputKind) {
        let mut inputs = self.inputs.borrow_mut();
        match inputs.iter_mut().find(|(n, _)| n == channel) {
            // Multipart wins when a channel has both kinds (as in FairMQ).
            Some(e) if kind == InputKind::Parts => e.1 = kind,
            Some(_) => {}
            None => inputs.push((channel.to_owned(), kind)),
        }
    }

    /// Adds a sub-channel to the configuration, and returns its configuration with its index. The
    /// sub-channel is created the next time `INITIALIZING DEVICE` creates the channels. So when
    /// `init` calls `add_channel`, the sub-channel is created in the same state.
    pub fn add_channel(&self, config: &ChannelConfig) -> ChannelConfig {
        let index = self.config.channel_info().get(&config.prefix).copied().unwrap_or(0);
        let c = ChannelConfig { index, ..config.clone() };
        c.write_to(&self.config);
        c
    }

    /// Sub-channel `index` of `name`.
    pub fn channel(&self, name: &str, index: usize) -> Result<&Channel, Error> {
        self.channels.get(name).and_then(|v| v.get(index)).ok_or_else(|| {
            let full = format!("{name}[{index}]");
            log::error!("GetChannel(): '{full}' does not exist.");
            Error::NoChannel(full)
        })
    }

    /// Number of sub-channels of `name`.
    pub fn num_sub_channels(&self, name: &str) -> Result<usize, Error> {
        self.channels.get(name).map(Vec::len).ok_or_else(|| Error::NoChannel(name.to_owned()))
    }

    /// All channels by name.
    pub fn channels(&self) -> &BTreeMap<String, Vec<Channel>> {
        &self.channels
    }

    /// Sends on `name[index]` with the channel's default timeout.
    pub fn send(&self, msg: &mut Message, name: &str, index: usize) -> TransferResult {
        self.channel(name, index).map_err(boxed)?.send(msg)
    }

    /// Sends with an explicit timeout (see [`Timeout`](fairmq_zmq::Timeout)).
    pub fn send_timeout(
        &self,
        msg: &mut Message,
        name: &str,
        index: usize,
        timeout: impl Into<Timeout>,
    ) -> TransferResult {
        self.channel(name, index).map_err(boxed)?.send_timeout(msg, timeout)
    }

    /// Receives from `name[index]` with the channel's default timeout.
    pub fn receive(&self, msg: &mut Message, name: &str, index: usize) -> TransferResult {
        self.channel(name, index).map_err(boxed)?.receive(msg)
    }

    /// Receives with an explicit timeout (see [`Timeout`](fairmq_zmq::Timeout)).
    pub fn receive_timeout(
        &self,
        msg: &mut Message,
        name: &str,
        index: usize,
        timeout: impl Into<Timeout>,
    ) -> TransferResult {
        self.channel(name, index).map_err(boxed)?.receive_timeout(msg, timeout)
    }

    /// Sends a multipart message.
    pub fn send_parts(&self, parts: &mut Parts, name: &str, index: usize) -> TransferResult {
        self.channel(name, index).map_err(boxed)?.send_parts(parts)
    }

    /// Sends a multipart message with an explicit timeout.
    pub fn send_parts_timeout(
        &self,
        parts: &mut Parts,
        name: &str,
        index: usize,
        timeout: impl Into<Timeout>,
    ) -> TransferResult {
        self.channel(name, index).map_err(boxed)?.send_parts_timeout(parts, timeout)
    }

    /// Receives a multipart message (appending to `parts`).
    pub fn receive_parts(&self, parts: &mut Parts, name: &str, index: usize) -> TransferResult {
        self.channel(name, index).map_err(boxed)?.receive_parts(parts)
    }

    /// The device's default transport (`--transport`). It is `None` before `INITIALIZING DEVICE`
    /// ends, and again after `RESETTING DEVICE`.
    pub fn transport(&self) -> Option<&Transport> {
        self.default_transport.as_ref()
    }

    fn default_transport_or_err(&self) -> Result<&Transport, Error> {
        self.default_transport
            .as_ref()
            .ok_or_else(|| Error::Transport("no transport before INITIALIZING DEVICE".into()))
    }

    /// An empty message of the default transport.
    pub fn new_message(&self) -> Result<Message, Error> {
        Ok(self.default_transport_or_err()?.new_message())
    }

    /// A message of `size` bytes of the default transport.
    pub fn new_message_with_size(&self, size: usize) -> Result<Message, Error> {
        self.default_transport_or_err()?.new_message_with_size(size)
    }

    /// A copy of `bytes` as a message of the default transport (FairMQ's `NewSimpleMessage`).
    pub fn new_simple_message(&self, bytes: impl AsRef<[u8]>) -> Result<Message, Error> {
        self.default_transport_or_err()?.new_simple_message(bytes.as_ref())
    }

    /// A message of `size` bytes of the transport of channel `name[index]` (FairMQ's
    /// `NewMessageFor`).
    pub fn new_message_for(&self, name: &str, index: usize, size: usize) -> Result<Message, Error> {
        self.channel(name, index)?.new_message_with_size(size)
    }

    /// An unmanaged region of the transport of channel `name[index]` (FairMQ's
    /// `NewUnmanagedRegionFor`). A panic in `callback` takes the device to ERROR, as a panic in a
    /// hook does.
    pub fn new_unmanaged_region_for(
        &self,
        name: &str,
        index: usize,
        size: usize,
        callback: crate::region::RegionCallback,
        config: &crate::region::RegionConfig,
    ) -> Result<crate::region::UnmanagedRegion, Error> {
        let sm = self.sm.clone();
        let callback = crate::region::guarded_callback(callback, move |p| {
            log::error!("region callback panicked: {p}");
            sm.change_state(Transition::ErrorFound);
        });
        self.channel(name, index)?.transport().create_region(size, callback, config)
    }

    /// A message for channel `name[index]` referring to `size` bytes at `offset` of `region`
    /// (FairMQ's `NewMessageFor` with a region).
    pub fn new_message_for_region(
        &self,
        name: &str,
        index: usize,
        region: &crate::region::UnmanagedRegion,
        offset: usize,
        size: usize,
        hint: u64,
    ) -> Result<Message, Error> {
        self.channel(name, index)?.transport().new_message_from_region(region, offset, size, hint)
    }

    /// The transport of kind `kind` if the device uses it.
    pub fn transport_of(&self, kind: TransportKind) -> Option<Transport> {
        self.transports.lock().iter().find(|t| t.kind() == kind).cloned()
    }
}

fn boxed(e: Error) -> fairmq_zmq::TransferError {
    fairmq_zmq::TransferError::Transport(Box::new(e))
}
