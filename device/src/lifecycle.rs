//! A device's lifecycle: the work that each state does (FairMQ's `*Wrapper` functions).
//!
//! [`run_state_machine`] runs a [`Device`] on the calling thread, which becomes the device's
//! thread. It runs the loop of the [`StateMachine`] and hands it the work of each [`State`]. The
//! work runs inside the panic boundary (`panic_boundary`): an error or a panic requests
//! `ErrorFound`, and the device goes to ERROR.
//!
//! Every accepted transition interrupts the device's transports, in the thread that requested it.
//! A blocking send or receive therefore returns at once. Entering the next state resumes the
//! transports.
//!
//! # The work of each state
//!
//! - INITIALIZING DEVICE writes the channel configuration of `--mq-config` (or else
//!   `--channel-config`) into the [`Properties`]. A bad configuration fails the state. (FairMQ
//!   logs the error and goes on without the channels, to fail later.) The state then waits for
//!   `CompleteInit`, so that a controller may still change the configuration. It calls
//!   [`Device::init`], creates one [`Transport`] per transport kind the channels use, and one
//!   [`Channel`] per sub-channel. A `bind` channel without an address gets one on
//!   `--network-interface` (see `network`).
//! - BINDING binds the channels whose method is `bind`. If one fails, the state fails. It then
//!   calls [`Device::bind`].
//! - CONNECTING attaches the other channels: those whose method is `connect`, and those whose
//!   addresses carry their own method (`@`, `+`, `>`). It retries every 50 ms and reads the
//!   addresses again each time, because a controller may publish an address meanwhile. It stops
//!   when every channel is attached, when a transition is pending, or when a signal asked for a
//!   shutdown. After `--init-timeout` seconds it fails. It calls [`Device::connect`] only when
//!   every channel is attached.
//! - INITIALIZING TASK and RESETTING TASK call [`Device::init_task`] and [`Device::reset_task`].
//! - RUNNING calls [`Device::pre_run`], then the run loop, then [`Device::post_run`]. Between
//!   them it requests `Stop`, so a transition is always pending when `post_run` runs. The loop
//!   calls [`Device::conditional_run`] and then [`Device::run`], or delivers messages to the data
//!   handlers. With one input sub-channel, the handler loop receives from it directly. With
//!   several, a [`Poller`] waits on all of them, and each round takes at most one message from
//!   each ready sub-channel, in the order of registration. Meanwhile a thread logs the rates of
//!   every channel whose `rateLogging` is above 0 (see `channel_rates`).
//! - RESETTING DEVICE calls [`Device::reset`], then closes the channels. The transports end
//!   with their last channel.
//!
//! Every working state but RUNNING ends by requesting `Auto`, unless a transition is already
//! pending.

use crate::channel::{Channel, ChannelConfig};
use crate::channel_parsers;
use crate::device::{Context, Device, InputKind};
use crate::error::{BoxError, Error, HookResult};
use crate::panic_boundary;
use crate::properties::Properties;
use crate::rate_limiter::RateLimiter;
use crate::state::{State, Transition};
use crate::state_machine::{ErrorState, StateMachine};
use crate::transport::{Poller, Transport};
use fairmq_zmq::{Counters, TransportKind};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs the state loop of `device` in this thread until `EXITING` (Ok) or `ERROR` (Err).
pub fn run_state_machine(
    device: &mut dyn Device,
    config: Arc<Properties>,
    sm: Arc<StateMachine>,
) -> Result<(), ErrorState> {
    let mut r = Runner { device, ctx: Context::new(config, sm.clone()), binding: Vec::new(), connecting: Vec::new() };
    let transports = r.ctx.transports.clone();
    // Every accepted transition interrupts the transports, in the requesting thread.
    sm.subscribe_to_new_transition("device", move |t| {
        log::trace!("device notified on new transition: {t}");
        for tr in transports.lock().iter() {
            tr.interrupt();
        }
    });
    let resume = r.ctx.transports.clone();
    let result = sm.run(
        |state| {
            log::trace!("Resuming transports for {state} state");
            for tr in resume.lock().iter() {
                tr.resume();
            }
        },
        |state| {
            // All of a state's work runs inside the panic boundary, not only the hooks. The
            // framework's own work may panic too, such as a receive for a data callback or
            // building the channels.
            if let Err(e) = panic_boundary::guarded(&state, || r.work(state)) {
                log::error!("{e}");
                sm.change_state(Transition::ErrorFound);
            }
        },
    );
    sm.unsubscribe_from_new_transition("device");
    log::debug!("Shutting down device {}", r.ctx.id());
    result
}

struct Runner<'a> {
    device: &'a mut dyn Device,
    ctx: Context,
    binding: Vec<(String, usize)>,
    connecting: Vec<(String, usize)>,
}

/// Calls a hook. An error or a panic in the hook becomes an error that names the hook
/// (`InitTask() failed: ...`).
fn hook<T>(name: &str, f: impl FnOnce() -> HookResult<T>) -> Result<T, BoxError> {
    panic_boundary::guarded(&format_args!("{name}()"), || f().map_err(|e| format!("{name}() failed: {e}").into()))
}

impl Runner<'_> {
    fn work(&mut self, state: State) -> Result<(), BoxError> {
        match state {
            State::InitializingDevice => self.init_device(),
            State::Binding => self.bind(),
            State::Connecting => self.connect(),
            State::InitializingTask => {
                let (d, c) = (&mut *self.device, &self.ctx);
                hook("InitTask", || d.init_task(c))?;
                self.auto()
            }
            State::Running => self.running(),
            State::ResettingTask => {
                let (d, c) = (&mut *self.device, &self.ctx);
                hook("ResetTask", || d.reset_task(c))?;
                self.auto()
            }
            State::ResettingDevice => self.reset_device(),
            _ => Ok(()),
        }
    }

    fn sm(&self) -> &StateMachine {
        &self.ctx.sm
    }

    fn props(&self) -> &Properties {
        &self.ctx.config
    }

    fn auto(&self) -> Result<(), BoxError> {
        self.request_unless_pending(Transition::Auto)
    }

    /// Requests `t` unless a transition is pending. Another requester may win the race, for
    /// example a controller that has just requested `Stop`; that is fine. A refusal while no
    /// transition is pending is an error.
    fn request_unless_pending(&self, t: Transition) -> Result<(), BoxError> {
        let sm = self.sm();
        if !sm.new_state_pending() && !sm.change_state(t) && !sm.new_state_pending() {
            return Err(Error::Transition(t).into());
        }
        Ok(())
    }

    /// Does the work of FairMQ's config plugin. At every entry into INITIALIZING DEVICE,
    /// `parse_channel_configuration` writes the channel configuration of `--mq-config` (or else
    /// `--channel-config`) into the properties. A bad configuration fails INITIALIZING DEVICE.
    /// FairMQ instead logs the parser's error and goes on without the channels. The device then
    /// fails later, with `GetChannel(): 'data[0]' does not exist`.
    fn parse_channel_configuration(&self) -> Result<(), channel_parsers::ConfigError> {
        let p = self.props();
        let id = p.get::<String>("config-key").or_else(|_| p.get::<String>("id")).unwrap_or_default();
        if id.is_empty() {
            // The parser finds this device's channels in a topology file by its device id.
            // Without an id, the file would be skipped in silence.
            if p.get::<String>("mq-config").is_ok() {
                return Err(channel_parsers::ConfigError::NoDeviceId);
            }
            log::warn!("No device ID or config-key provided for the configuration parser.");
            return Ok(());
        }
        let tokens = p.get::<Vec<String>>("channel-config").ok();
        let parsed = if let Ok(path) = p.get::<String>("mq-config") {
            log::debug!("mq-config: Using default JSON parser");
            let chans = channel_parsers::parse_json_file(&path, &id)?;
            if let Some(tokens) = tokens {
                // When both options are given, FairMQ reads only `--mq-config`. A channel defined
                // in both would lose one of its definitions.
                let ignored = channel_parsers::parse_channel_config(&tokens)?;
                channel_parsers::check_disjoint(&chans, &ignored, "in --mq-config and in --channel-config")?;
                log::warn!("--channel-config is ignored: --mq-config is given");
            }
            Ok(chans)
        } else if let Some(tokens) = tokens {
            log::debug!("channel-config: Parsing channel configuration");
            channel_parsers::parse_channel_config(&tokens)
        } else {
            log::info!(
                "fair::mq::plugins::Config: no channels configuration provided via --mq-config or --channel-config"
            );
            return Ok(());
        };
        parsed?.iter().for_each(|c| c.write_to(p));
        Ok(())
    }

    fn init_device(&mut self) -> Result<(), BoxError> {
        self.parse_channel_configuration()?;
        // INITIALIZING DEVICE waits here for `CompleteInit`. Until then, controllers may still
        // change the configuration.
        self.sm().wait_for_pending(None);
        *self.ctx.id.borrow_mut() = self.props().get_or::<String>("id", String::new())?;
        let (d, c) = (&mut *self.device, &self.ctx);
        hook("Init", || d.init(c))?;
        let name = self.props().get_or::<String>("transport", "zeromq".into())?;
        let default = match name.parse::<TransportKind>() {
            Ok(TransportKind::Default) => TransportKind::Zeromq,
            Ok(k) => k,
            Err(_) => return Err(Error::Transport(name).into()),
        };
        log::debug!("Setting '{default}' as default transport for the device");
        self.ctx.default_transport = Some(self.transport(default)?);
        self.build_channels(default)
    }

    /// The transport of `kind`. It is created on first use; a device has one transport per kind.
    fn transport(&self, kind: TransportKind) -> Result<Transport, Error> {
        let mut list = self.ctx.transports.lock();
        if let Some(t) = list.iter().find(|t| t.kind() == kind) {
            log::debug!("Reusing existing '{kind}' transport");
            return Ok(t.clone());
        }
        log::debug!("Adding '{kind}' transport");
        let t = crate::transport::create(kind, &self.ctx.id(), self.props())?;
        list.push(t.clone());
        Ok(t)
    }

    fn build_channels(&mut self, default: TransportKind) -> Result<(), BoxError> {
        let interface = self.props().get_or::<String>("network-interface", "default".into())?;
        self.binding.clear();
        self.connecting.clear();
        for (name, count) in self.props().channel_info() {
            let mut subs = Vec::new();
            for i in 0..count {
                let mut cfg = ChannelConfig::from_properties(self.props(), &name, i)?;
                let kind = cfg.transport_kind()?.resolve(default);
                match cfg.method.as_str() {
                    "bind" => {
                        if cfg.address.is_empty() || cfg.address == "unspecified" {
                            cfg.address = crate::network::default_bind_address(&interface).map_err(|e| {
                                log::error!("{e}");
                                Error::NoInterface(interface.clone())
                            })?;
                        }
                        self.binding.push((name.clone(), i));
                    }
                    "connect" => self.connecting.push((name.clone(), i)),
                    _ if cfg.address.contains(['@', '+', '>']) => self.connecting.push((name.clone(), i)),
                    _ => return Err(Error::NoMethod(cfg.name()).into()),
                }
                let transport = self.transport(kind)?;
                subs.push(Channel::new(cfg, transport)?);
            }
            self.ctx.channels.insert(name, subs);
        }
        Ok(())
    }

    /// Validates and attaches one sub-channel; `Ok(false)` if it cannot be attached yet.
    fn attach(&mut self, name: &str, i: usize) -> Result<bool, BoxError> {
        let ch = self
            .ctx
            .channels
            .get_mut(name)
            .and_then(|v| v.get_mut(i))
            .ok_or_else(|| Error::NoChannel(format!("{name}[{i}]")))?;
        if !ch.config().validate()? {
            return Ok(false);
        }
        let configured = ch.config().address.clone();
        match ch.attach() {
            Ok(actual) => {
                if actual != configured {
                    self.ctx.config.set(&ch.config().key("address"), actual);
                }
                Ok(true)
            }
            Err(e) => {
                log::error!("failed to attach channel {} ({} on {configured}): {e}", ch.name(), ch.config().method);
                Ok(false)
            }
        }
    }

    fn bind(&mut self) -> Result<(), BoxError> {
        let list = std::mem::take(&mut self.binding);
        let mut failed = 0;
        for (name, i) in &list {
            if !self.attach(name, *i)? {
                failed += 1;
            }
        }
        if failed > 0 {
            return Err(Error::Binding(failed).into());
        }
        let (d, c) = (&mut *self.device, &self.ctx);
        hook("Bind", || d.bind(c))?;
        self.auto()
    }

    /// FairMQ's `ConnectWrapper`. It attaches the connecting channels, and retries every 50 ms,
    /// reading the addresses again each time. It stops when one of these happens:
    ///
    /// - Every channel is attached.
    /// - A transition is pending.
    /// - A shutdown was requested, as after a signal. Retrying would otherwise hold the device
    ///   until `--init-timeout`.
    /// - `--init-timeout` seconds passed.
    fn connect(&mut self) -> Result<(), BoxError> {
        let mut left = std::mem::take(&mut self.connecting);
        let seconds = u64::try_from(self.props().get_or::<i32>("init-timeout", 120)?).unwrap_or(0);
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let mut attempts = 0u64;
        loop {
            attempts += 1;
            let mut still = Vec::new();
            for (name, i) in left {
                // A controller may publish the address while we are CONNECTING.
                let key = format!("chans.{name}.{i}.address");
                if let Ok(addr) = self.props().get::<String>(&key) {
                    if let Some(ch) = self.ctx.channels.get_mut(&name).and_then(|v| v.get_mut(i)) {
                        if ch.config().address != addr {
                            let mut cfg = ch.config().clone();
                            cfg.address = addr;
                            let transport = ch.transport().clone();
                            *ch = Channel::new(cfg, transport)?;
                        }
                    }
                }
                if !self.attach(&name, i)? {
                    still.push((name, i));
                }
            }
            left = still;
            self.publish_channels();
            if left.is_empty() || self.sm().new_state_pending() || self.sm().shutdown_requested() {
                break;
            }
            if Instant::now() >= deadline {
                log::error!("following channels are still invalid:");
                for (n, i) in &left {
                    if let Some(ch) = self.ctx.channels.get(n).and_then(|v| v.get(*i)) {
                        log::error!("channel: {}", ch.config());
                    }
                }
                return Err(Error::Connecting { attempts, seconds }.into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if !left.is_empty() {
            // The loop stopped early, so the `connect` hook is skipped. The hook expects
            // connected channels, and the missing ones will not come.
            let why = if self.sm().shutdown_requested() { "the device shuts down" } else { "a transition is pending" };
            log::info!("Stopped connecting with {} channel(s) not connected: {why}", left.len());
            return self.request_unless_pending(Transition::Auto);
        }
        if self.ctx.channels.is_empty() {
            log::warn!("No channels created after finishing initialization");
        }
        let (d, c) = (&mut *self.device, &self.ctx);
        hook("Connect", || d.connect(c))?;
        self.auto()
    }

    fn running(&mut self) -> Result<(), BoxError> {
        log::info!("fair::mq::Device running...");
        let logger = self.start_rate_logger();
        // Panics are caught here too, so that the rate logger's thread is joined whatever
        // happens.
        let result = panic_boundary::guarded(&"RUNNING", || self.run_hooks());
        if result.is_err() {
            self.sm().change_state(Transition::ErrorFound);
        }
        if let Some(h) = logger {
            let _ = h.join();
        }
        result
    }

    fn run_hooks(&mut self) -> Result<(), BoxError> {
        let (d, c) = (&mut *self.device, &self.ctx);
        hook("PreRun", || d.pre_run(c))?;
        let inputs = self.ctx.inputs.borrow().clone();
        if inputs.is_empty() {
            let rate = f64::from(self.props().get_or::<f32>("rate", 0.0)?);
            let mut limiter = (rate > 0.0).then(|| RateLimiter::new(rate));
            let (d, c) = (&mut *self.device, &self.ctx);
            while !c.sm.new_state_pending() && hook("ConditionalRun", || d.conditional_run(c))? {
                if let Some(l) = limiter.as_mut() {
                    l.tick();
                }
            }
            hook("Run", || d.run(c))?;
        } else {
            self.data_loop(&inputs)?;
        }
        self.request_unless_pending(Transition::Stop)?;
        let (d, c) = (&mut *self.device, &self.ctx);
        hook("PostRun", || d.post_run(c))
    }

    /// Delivers messages to the data handlers. With a single input sub-channel, the loop
    /// receives from it directly. Otherwise one poller waits on all input sub-channels, of any
    /// transport. Each round takes at most one message from each ready sub-channel, in the order
    /// of registration. A failed receive, or a handler that returns false, ends RUNNING.
    fn data_loop(&mut self, inputs: &[(String, InputKind)]) -> Result<(), BoxError> {
        let (device, ctx) = (&mut *self.device, &self.ctx);
        let mut items: Vec<(&str, usize, InputKind, &Channel)> = Vec::new();
        for (name, kind) in inputs {
            let subs = ctx.channels.get(name).ok_or_else(|| Error::NoChannel(name.clone()))?;
            items.extend(subs.iter().enumerate().map(|(i, ch)| (name.as_str(), i, *kind, ch)));
        }
        let deliver = |device: &mut dyn Device,
                       (name, i, kind, ch): (&str, usize, InputKind, &Channel)|
         -> Result<bool, BoxError> {
            match kind {
                InputKind::Single => {
                    let mut msg = ch.new_message();
                    if ch.receive(&mut msg).is_err() {
                        return Ok(false);
                    }
                    hook("HandleData", || device.handle_data(ctx, name, &mut msg, i))
                }
                InputKind::Parts => {
                    let mut parts = Vec::new();
                    if ch.receive_parts(&mut parts).is_err() {
                        return Ok(false);
                    }
                    hook("HandleData", || device.handle_parts(ctx, name, &mut parts, i))
                }
            }
        };
        if let [single] = items[..] {
            while !ctx.sm.new_state_pending() {
                if !deliver(device, single)? {
                    break;
                }
            }
            return Ok(());
        }
        let sockets: Vec<_> = items.iter().map(|it| it.3.socket()).collect();
        let mut poller = Poller::new(&sockets);
        'outer: while !ctx.sm.new_state_pending() {
            match poller.poll(200) {
                Ok(_) | Err(fairmq_zmq::PollError::Interrupted) => {}
                Err(e) => return Err(Error::Poll(e).into()),
            }
            for (idx, item) in items.iter().enumerate() {
                if poller.check_input(idx) && !deliver(device, *item)? {
                    break 'outer;
                }
            }
        }
        Ok(())
    }

    /// Starts the thread that logs the channel rates while RUNNING, if a channel's `rateLogging`
    /// is above 0. The thread wakes every second, and logs each such channel every `rateLogging`
    /// seconds.
    fn start_rate_logger(&self) -> Option<std::thread::JoinHandle<()>> {
        let chans: Vec<(String, i32, Arc<Counters>)> = self
            .ctx
            .channels
            .values()
            .flatten()
            .filter(|c| c.config().rate_logging > 0)
            .map(|c| (c.name(), c.config().rate_logging, c.socket().shared_counters()))
            .collect();
        if chans.is_empty() {
            return None;
        }
        let sm = self.ctx.sm.clone();
        Some(std::thread::spawn(move || crate::channel_rates::log_rates(&sm, &chans)))
    }

    /// Publishes every channel's counters and count of connected peers, for the metrics endpoint
    /// and for the interactive control's `[p]`.
    fn publish_channels(&self) {
        let views = self.ctx.channels.iter().flat_map(|(name, v)| {
            v.iter().enumerate().map(move |(index, c)| crate::telemetry::ChannelView {
                name: name.clone(),
                index,
                transport: c.transport().kind(),
                counters: c.socket().shared_counters(),
                peers: c.socket().peer_count(),
                lanes: c.socket().lane_counts(),
            })
        });
        self.sm().telemetry().set_channels(views.collect());
    }

    fn reset_device(&mut self) -> Result<(), BoxError> {
        self.sm().telemetry().set_channels(Vec::new());
        // The transports are dropped outside the lock. Dropping a transport may take a moment,
        // for example for a sweep of the dead processes, and a metrics scrape waits for the lock
        // meanwhile.
        let transports = std::mem::take(&mut *self.ctx.transports.lock());
        drop(transports);
        let (d, c) = (&mut *self.device, &self.ctx);
        let r = hook("Reset", || d.reset(c));
        // The channels close here. Linger applies to the queued outgoing messages; the messages
        // in receive queues are lost.
        self.ctx.channels.clear();
        self.ctx.default_transport = None;
        r?;
        self.auto()
    }
}
