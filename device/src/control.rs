//! Driving a device: the builtin controller, its control modes (`--control`) and its signal
//! handling.
//!
//! - [`DeviceHandle`] drives a device from another thread. Every controller uses one: the builtin
//!   controller, a plugin, or a program that runs a device in a thread of its own.
//! - [`ControlMode`] is the mode that `--control` names.
//! - [`Controller`] is the builtin controller. It runs the mode in one thread and waits for
//!   signals in another. The builtin plugin `control` starts it, after every other plugin.
//!
//! # The modes
//!
//! Every mode but `none` first takes control of the device (see `DeviceControl`). If another
//! plugin already has it, no mode runs. Each mode then runs FairMQ's startup sequence
//! ([`DeviceHandle::run_startup_sequence`]) up to RUNNING.
//!
//! - `static` waits until RUNNING ends, then runs the shutdown sequence
//!   ([`DeviceHandle::run_shutdown_sequence`]) down to EXITING.
//! - `dynamic` (the default), `interactive` and `external` read single keys from the terminal:
//!   `i` init, `b` bind, `x` connect, `j` init task, `r` run, `s` stop, `t` reset task,
//!   `d` reset device, `q` end, and `h` for the full list. `q` runs the shutdown sequence. When
//!   the input ends, the device keeps its state until a signal arrives.
//! - `gui` waits for a signal.
//! - `none` requests nothing: another plugin drives the device.
//!
//! An unknown mode name is logged, and `static` runs instead.
//!
//! # Signals
//!
//! With `--catch-signals 1` (the default), the first SIGINT or SIGTERM shuts the device down. The
//! controller tells the state machine that a shutdown was requested, so that work that waits (such
//! as connecting) ends now. It takes control from whichever plugin has it and runs the shutdown
//! sequence. A second SIGINT ends the process at once.

pub use crate::handle::DeviceHandle;
use crate::handle::PluginServices;
use crate::state::{State, Transition};
use crate::state_machine::ErrorState;
use crate::{console, logging};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The control mode that `--control` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlMode {
    /// Starts the device, runs it, and shuts it down by itself when RUNNING ends.
    Static,
    /// Starts the device, then acts on keys read from the terminal. The names `dynamic`,
    /// `interactive` and `external` select this mode.
    Interactive,
    /// Starts the device, then waits for a signal.
    Gui,
    /// Requests no transition. Another plugin drives the device.
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

/// The builtin controller. It runs the control mode in a thread of its own, and it handles
/// signals.
pub struct Controller {
    shutdown: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller").field("threads", &self.threads.len()).finish()
    }
}

/// The state that the mode thread and the signal thread of the builtin controller (plugin
/// `control`) share. The signal thread steals control of the device when a signal arrives.
struct Shared {
    services: PluginServices,
    ended: AtomicBool,
    sequence: parking_lot::Mutex<()>,
    /// Set when the program stops the controller with `Controller::join`, after the device
    /// exited.
    joined: Arc<AtomicBool>,
}

impl Shared {
    /// Returns the handle that drives the device while the builtin controller has control.
    fn handle(&self) -> &DeviceHandle {
        self.services.device()
    }

    /// Releases control if the builtin controller still has it.
    fn release(&self) {
        self.services.release_device_control();
    }
}

impl Controller {
    /// Starts the control mode and, with `catch_signals`, the signal handling. Before it starts
    /// the mode, `Controller::start` takes control of the device. If another plugin has control,
    /// no mode runs.
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
            // The first SIGINT or SIGTERM only sets the flag `signalled`. A SIGINT after an earlier
            // SIGINT or SIGTERM takes the default action, which ends the process at once. The
            // registration order matters: the conditional default must read the flag before the
            // first SIGINT sets it.
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

    /// Stops the controller threads. Call it after the state loop ended.
    pub fn join(mut self) {
        self.shutdown.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn mode_thread(s: &Shared, mode: ControlMode, color: bool) {
    let h = s.handle();
    // The signal thread sets this flag when a signal arrives.
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
                // Wait until RUNNING ends (normally by itself) or a signal arrives.
                while !stop.load(Ordering::SeqCst) && !s.joined.load(Ordering::SeqCst) {
                    if h.wait_for_next_state(Some(Duration::from_millis(100)))?.is_some() {
                        break;
                    }
                }
            }
            ControlMode::Gui => {
                // Wait for a signal, or until the device ended some other way: a plugin drove it
                // to its end.
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
    // Release control, unless a signal arrived. After a signal, the signal thread runs the
    // shutdown and holds the control.
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

/// Reads single keys from the terminal and acts on them. Returns `Ok(true)` when `q` asks for
/// the shutdown sequence, and `Ok(false)` when stdin ended or a signal arrived.
fn repl(s: &Shared, color: bool) -> Result<bool, ErrorState> {
    let h = s.handle();
    let _raw = crate::terminal::RawMode::enable();
    print_help(color);
    loop {
        match h.current_state() {
            State::Error => return Err(ErrorState),
            // Another plugin took control and ended the device, so no more keys are read.
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
            // The input ended, so no more keys are read. The device keeps running until a
            // signal arrives.
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
