//! Driving a device: the controller API ([`DeviceHandle`]), FairMQ's control modes (`--control`),
//! the startup and shutdown sequences, interactive keys, and signal handling.

use crate::plugin::{DeviceControl, DeviceControlError, PluginServices};
use crate::state::{State, Transition};
use crate::state_machine::{ErrorState, StateMachine, StateQueue};
use crate::{console, logging};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A handle to drive a device from another thread (FairMQ's custom controllers and plugins).
/// It keeps its own queue of entered states, so waits never miss a state. A plugin's handle
/// requests transitions only while its plugin may (see [`DeviceControl`]).
#[derive(Clone)]
pub struct DeviceHandle {
    sm: Arc<StateMachine>,
    queue: Arc<StateQueue>,
    key: String,
    /// For a plugin's handle: the device control and the plugin's name.
    plugin: Option<(Arc<DeviceControl>, String)>,
}

impl std::fmt::Debug for DeviceHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceHandle").field("key", &self.key).field("state", &self.sm.current_state()).finish()
    }
}

impl DeviceHandle {
    /// A handle subscribed (as `key`) to the state changes of `sm`, from now on.
    pub fn new(sm: &Arc<StateMachine>, key: &str) -> DeviceHandle {
        let queue = Arc::new(StateQueue::default());
        // Weak: the subscription must not keep the queue alive, or no handle would ever see itself
        // as the last one and unsubscribe (see Drop).
        let q = Arc::downgrade(&queue);
        sm.subscribe_to_state_change(key, move |s| {
            if let Some(q) = q.upgrade() {
                q.push(s);
            }
        });
        DeviceHandle { sm: sm.clone(), queue, key: key.to_owned(), plugin: None }
    }

    /// The handle of plugin `name`: its transitions go through `control`. Its state queue is
    /// subscribed under a key of its own, so the plugin's own subscriptions (keyed by its name)
    /// come and go without it.
    pub fn for_plugin(sm: &Arc<StateMachine>, name: &str, control: Arc<DeviceControl>) -> DeviceHandle {
        let mut h = DeviceHandle::new(sm, &format!("{name} (plugin handle)"));
        h.plugin = Some((control, name.to_owned()));
        h
    }

    /// Requests a transition; returns whether it was accepted (false also when another plugin
    /// controls the device: logged).
    pub fn change_state(&self, t: Transition) -> bool {
        self.try_change_state(t).unwrap_or_else(|e| {
            log::debug!("{e}");
            false
        })
    }

    /// Requests a transition; whether the state accepted it, or why this handle's plugin may not
    /// request it.
    pub fn try_change_state(&self, t: Transition) -> Result<bool, DeviceControlError> {
        if let Some((control, name)) = &self.plugin {
            control.allow_change(name)?;
        }
        Ok(self.sm.change_state(t))
    }

    /// The current state.
    pub fn current_state(&self) -> State {
        self.sm.current_state()
    }

    /// Waits (popping states seen by this handle) until `s` was entered; `Err` if the device is in
    /// ERROR, `Ok(false)` on timeout.
    pub fn wait_for_state(&self, s: State, timeout: Option<Duration>) -> Result<bool, ErrorState> {
        self.queue.wait_for_state(s, timeout)
    }

    /// Pops the next state this handle saw.
    pub fn wait_for_next_state(&self, timeout: Option<Duration>) -> Result<Option<State>, ErrorState> {
        self.queue.wait_for_next(timeout)
    }

    /// The state machine.
    pub fn state_machine(&self) -> &Arc<StateMachine> {
        &self.sm
    }

    /// Requests `t` and waits until `target` is entered.
    pub fn transition_to(&self, t: Transition, target: State, timeout: Option<Duration>) -> Result<bool, ErrorState> {
        if !self.change_state(t) {
            return Ok(false);
        }
        self.wait_for_state(target, timeout)
    }

    /// FairMQ's startup sequence, up to RUNNING; stops early (false) when `stop` becomes true.
    pub fn run_startup_sequence(&self, stop: &AtomicBool) -> Result<bool, ErrorState> {
        let steps = [
            (Transition::InitDevice, State::InitializingDevice),
            (Transition::CompleteInit, State::Initialized),
            (Transition::Bind, State::Bound),
            (Transition::Connect, State::DeviceReady),
            (Transition::InitTask, State::Ready),
            (Transition::Run, State::Running),
        ];
        for (t, target) in steps {
            if stop.load(Ordering::SeqCst) {
                return Ok(false);
            }
            if let Err(e) = self.try_change_state(t) {
                log::debug!("{e}");
                return Ok(false);
            }
            while !self.wait_for_state(target, Some(Duration::from_millis(100)))? {
                if stop.load(Ordering::SeqCst) || self.current_state() == State::Error {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// FairMQ's shutdown sequence from whatever the live state is, until EXITING (`Ok(true)`),
    /// ERROR, or another plugin took control (`Ok(false)`, logged). Each request is derived from
    /// the current state (so a state entered meanwhile is never missed).
    pub fn run_shutdown_sequence(&self) -> Result<bool, ErrorState> {
        loop {
            let s = self.current_state();
            let request = match s {
                State::Exiting => return Ok(true),
                State::Error => return Err(ErrorState),
                State::Idle => Some(Transition::End),
                State::InitializingDevice => Some(Transition::CompleteInit),
                State::Initialized | State::Bound | State::DeviceReady => Some(Transition::ResetDevice),
                State::Ready => Some(Transition::ResetTask),
                State::Running => Some(Transition::Stop),
                _ => None, // a working state that ends by itself (Auto)
            };
            if let Some(t) = request {
                if !self.sm.new_state_pending() {
                    if let Err(e) = self.try_change_state(t) {
                        log::debug!("{e}");
                        return Ok(false);
                    }
                }
            }
            // Wait for the state to move on (checked again every 100 ms).
            let _ = self.wait_for_next_state(Some(Duration::from_millis(100)))?;
        }
    }
}

impl Drop for DeviceHandle {
    fn drop(&mut self) {
        if Arc::strong_count(&self.queue) == 1 {
            self.sm.unsubscribe_from_state_change(&self.key);
        }
    }
}

/// `--control`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlMode {
    /// Start, run, and shut down by itself when RUNNING ends.
    Static,
    /// Start, then keys from the terminal (`dynamic`, `interactive`, `external`).
    Interactive,
    /// Start, then wait for a signal.
    Gui,
    /// Request nothing.
    None,
}

impl FromStr for ControlMode {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<ControlMode, Self::Err> {
        Ok(match s {
            "static" => ControlMode::Static,
            "dynamic" | "interactive" | "external" => ControlMode::Interactive,
            "gui" => ControlMode::Gui,
            "none" => ControlMode::None,
            other => {
                log::error!(
                    "Unrecognized control mode '{other}' requested. Ignoring and falling back to static control mode."
                );
                ControlMode::Static
            }
        })
    }
}

/// The built-in controller: runs the mode in its own thread and handles signals.
pub struct Controller {
    shutdown: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller").field("threads", &self.threads.len()).finish()
    }
}

/// The mode thread and the signal thread of the builtin controller (plugin `control`); the signal
/// thread steals control when a signal arrives.
struct Shared {
    services: PluginServices,
    ended: AtomicBool,
    sequence: parking_lot::Mutex<()>,
    /// Set when the program stops the controller (after the device exited).
    joined: Arc<AtomicBool>,
}

impl Shared {
    /// The device, driven through the builtin controller's control.
    fn handle(&self) -> &DeviceHandle {
        self.services.device()
    }

    /// Releases control if the builtin controller still has it.
    fn release(&self) {
        self.services.release_device_control();
    }
}

impl Controller {
    /// Starts the control mode (after taking control of the device; if another plugin has it,
    /// no mode runs) and, with `catch_signals`, signal handling.
    pub fn start(
        services: PluginServices,
        mode: ControlMode,
        catch_signals: bool,
        color: bool,
    ) -> std::io::Result<Controller> {
        let in_control =
            mode != ControlMode::None && services.take_device_control().map_err(|e| log::debug!("{e}")).is_ok();
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            services,
            ended: AtomicBool::new(false),
            sequence: parking_lot::Mutex::new(()),
            joined: stop.clone(),
        });
        let mut threads = Vec::new();
        if catch_signals {
            log::debug!("Plugin 'control' is setting up signal handling for SIGINT and SIGTERM");
            let signalled = Arc::new(AtomicBool::new(false));
            // A SIGINT after any earlier SIGINT or SIGTERM ends the process at once (the default
            // action); the first one only sets the flag. Registration order matters.
            signal_hook::flag::register_conditional_default(signal_hook::consts::SIGINT, signalled.clone())?;
            signal_hook::flag::register(signal_hook::consts::SIGINT, signalled.clone())?;
            signal_hook::flag::register(signal_hook::consts::SIGTERM, signalled.clone())?;
            let (s, st) = (shared.clone(), stop.clone());
            threads.push(std::thread::spawn(move || signal_thread(&s, &signalled, &st)));
        } else {
            log::warn!("Signal handling (e.g. Ctrl-C) has been deactivated.");
        }
        match mode {
            ControlMode::None => log::debug!("Builtin controller: disabled"),
            _ if !in_control => {}
            mode => {
                log::debug!(
                    "Running builtin controller: {}",
                    match mode {
                        ControlMode::Static => "static",
                        ControlMode::Gui => "gui",
                        _ => "interactive",
                    }
                );
                let s = shared.clone();
                threads.push(std::thread::spawn(move || mode_thread(&s, mode, color)));
            }
        }
        Ok(Controller { shutdown: stop, threads })
    }

    /// Stops the controller threads (after the state loop ended).
    pub fn join(mut self) {
        self.shutdown.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn mode_thread(s: &Shared, mode: ControlMode, color: bool) {
    let h = s.handle();
    // Set by the signal thread when a signal arrives.
    let stop = h.state_machine().shutdown_flag();
    let result = (|| -> Result<(), ErrorState> {
        {
            let _g = s.sequence.lock();
            if !h.run_startup_sequence(stop)? {
                return Ok(());
            }
        }
        match mode {
            ControlMode::Static => {
                // RUNNING ends (normally by itself) or a signal arrives.
                while !stop.load(Ordering::SeqCst) && !s.joined.load(Ordering::SeqCst) {
                    if h.wait_for_next_state(Some(Duration::from_millis(100)))?.is_some() {
                        break;
                    }
                }
            }
            ControlMode::Gui => {
                // Until a signal, or until the device ended some other way (a plugin drove it).
                while !stop.load(Ordering::SeqCst) && !s.joined.load(Ordering::SeqCst) {
                    match h.current_state() {
                        State::Error => return Err(ErrorState),
                        State::Exiting => return Ok(()),
                        _ => std::thread::sleep(Duration::from_millis(100)),
                    }
                }
                return Ok(());
            }
            ControlMode::Interactive => {
                if !repl(s, color)? {
                    return Ok(()); // stdin ended or a signal arrived: the signal thread shuts down
                }
            }
            ControlMode::None => return Ok(()),
        }
        if stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        let _g = s.sequence.lock();
        if h.run_shutdown_sequence()? {
            s.ended.store(true, Ordering::SeqCst);
        }
        Ok(())
    })();
    if result.is_err() {
        log::debug!("control: device in ERROR, requesting no more transitions");
    }
    // Unless a signal arrived: the signal thread has the shutdown (and the control) now.
    if !stop.load(Ordering::SeqCst) || result.is_err() {
        s.release();
    }
}

fn signal_thread(s: &Shared, signalled: &AtomicBool, stop: &AtomicBool) {
    loop {
        if stop.load(Ordering::SeqCst) || s.handle().current_state() == State::Error {
            return;
        }
        if signalled.load(Ordering::SeqCst) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    log::info!("Received device shutdown request (signal).");
    log::info!("Waiting for graceful device shutdown. Hit Ctrl-C again to abort immediately.");
    s.handle().state_machine().request_shutdown();
    let _g = s.sequence.lock();
    if s.ended.load(Ordering::SeqCst) || s.handle().current_state() == State::Error {
        s.release();
        return;
    }
    s.services.steal_device_control();
    match s.handle().run_shutdown_sequence() {
        Ok(true) => {}
        Ok(false) => log::info!(
            "Graceful device shutdown failed: another plugin took control. If hanging, hit Ctrl-C again to abort immediately."
        ),
        Err(ErrorState) => {
            log::info!("Graceful device shutdown failed. If hanging, hit Ctrl-C again to abort immediately.")
        }
    }
    s.release();
}

const HELP: &str = "Following control commands are available:\n\n \
[h] help, [c] check current device state, [p] print number of connected peers for channels\n \
[i] init device, [b] bind, [x] connect, [j] init task,\n \
[r] run, [s] stop,\n \
[t] reset task, [d] reset device,\n \
[q] end,\n \
[k] increase log severity, [l] decrease log severity, [n] increase log verbosity, [m] decrease log verbosity\n";

/// The key loop. Returns Ok(true) when `q` asks for the shutdown sequence, Ok(false) when stdin
/// ended or a signal arrived.
fn repl(s: &Shared, color: bool) -> Result<bool, ErrorState> {
    let h = s.handle();
    let _raw = crate::terminal::RawMode::enable();
    print_help(color);
    loop {
        match h.current_state() {
            State::Error => return Err(ErrorState),
            // Another plugin took control and ended the device: no more keys.
            State::Exiting => return Ok(false),
            _ => {}
        }
        if s.handle().state_machine().shutdown_requested() || s.joined.load(Ordering::SeqCst) {
            return Ok(false);
        }
        if !crate::terminal::stdin_ready(Duration::from_millis(100)) {
            continue;
        }
        let mut b = [0u8; 1];
        match crate::terminal::read_byte(&mut b) {
            Ok(1) => {}
            // End of input: no more keys; the device keeps running until a signal.
            _ => {
                while !s.handle().state_machine().shutdown_requested() && !s.joined.load(Ordering::SeqCst) {
                    match h.current_state() {
                        State::Error => return Err(ErrorState),
                        State::Exiting => return Ok(false),
                        _ => std::thread::sleep(Duration::from_millis(100)),
                    }
                }
                return Ok(false);
            }
        }
        let key = b[0] as char;
        if key.is_whitespace() {
            continue;
        }
        let _g = s.sequence.lock();
        let request = |t: Transition, text: &str| {
            console::line(&format!("\n --> [{key}] {text}\n"));
            h.change_state(t);
        };
        match key {
            'h' => print_help(color),
            'c' => {
                console::line("\n --> [c] check current state\n");
                crate::logging::state!("{}", h.current_state());
            }
            'p' => {
                console::line("\n --> [p] print number of connected peers for all channels\n");
                for (channel, n) in h.state_machine().channel_peers() {
                    log::info!("{channel}: {n} peers connected");
                }
            }
            'i' => {
                console::line("\n --> [i] init device\n");
                if h.change_state(Transition::InitDevice) {
                    h.wait_for_state(State::InitializingDevice, Some(Duration::from_secs(10)))?;
                    h.change_state(Transition::CompleteInit);
                }
            }
            'b' => request(Transition::Bind, "bind"),
            'x' => request(Transition::Connect, "connect"),
            'j' => request(Transition::InitTask, "init task"),
            'r' => request(Transition::Run, "run"),
            's' => request(Transition::Stop, "stop"),
            't' => request(Transition::ResetTask, "reset task"),
            'd' => request(Transition::ResetDevice, "reset device"),
            'k' => {
                console::line(&format!("\n --> [k] increase log severity: {}\n", logging::cycle_severity(true).name()))
            }
            'l' => {
                console::line(&format!("\n --> [l] decrease log severity: {}\n", logging::cycle_severity(false).name()))
            }
            'n' => console::line(&format!(
                "\n --> [n] increase log verbosity: {}\n",
                logging::cycle_verbosity(true).name()
            )),
            'm' => console::line(&format!(
                "\n --> [m] decrease log verbosity: {}\n",
                logging::cycle_verbosity(false).name()
            )),
            'q' => {
                console::line("\n --> [q] end\n");
                return Ok(true);
            }
            other => {
                console::text(&format!("Invalid input: [{other}]. "));
                print_help(color);
            }
        }
    }
}

fn print_help(color: bool) {
    if color {
        console::line(&format!("\x1b[01;32m{HELP}\x1b[0m"));
    } else {
        console::line(HELP);
    }
}
