//! Running a device as a program (FairMQ's `runDevice`), or in a thread of another program.
//!
//! - [`Program`] makes a device program. [`Program::run`] runs the device on the main thread
//!   until it reaches EXITING or ERROR.
//! - [`spawn_device`] runs a device on a thread of its own, without the builtin controller and
//!   without signal handling. [`config_from_args`] makes the device's configuration. The returned
//!   [`DeviceHandle`] requests the transitions, and [`expect_state`] waits for a state.
//! - [`run_role`] runs one of several devices that one binary holds, chosen by the first
//!   argument. [`process_args`] reads the command line and refuses an argument that is not UTF-8.
//!
//! # What a program does
//!
//! 1. It sets up logging and raises the open-files limit to its hard limit (see `fd_limit`).
//! 2. It loads the plugins: those that `-P` names, then the program's own, then the builtin
//!    controller `control`.
//! 3. It parses the options: FairMQ's, the program's own and every plugin's. A plugin option whose
//!    name is already taken is an error. `--help`, `--print-options`, `--version` and
//!    `--print-channels` print their text and end the program with exit code 0.
//! 4. It builds the device with the program's factory.
//! 5. It starts the metrics endpoint if `--metrics-address` asks for one, then starts the plugins.
//!    A plugin that fails to start ends the program before the device runs.
//! 6. It runs the state machine. Afterwards it waits until no plugin controls the device, stops
//!    the plugins (the last started first), drops the device, and last stops the metrics endpoint.
//!
//! The exit code is 0 after EXITING. It is 1 after ERROR, after bad input, and after a panic
//! anywhere in the program's thread. Such a panic is logged as FairMQ logs an exception that
//! reaches `main`.

use crate::control::DeviceHandle;
use crate::device::{ChannelRegistry, Device};
use crate::error::BoxError;
use crate::lifecycle::run_state_machine;
use crate::logging::{self, Severity, Verbosity};
use crate::options::{self, OptionGroup, Options};
use crate::panic_boundary;
use crate::plugin::{self, ControlPlugin, DeviceControl, Plugin, PluginError, PluginManager, PluginServices};
use crate::properties::Properties;
use crate::state::State;
use crate::state_machine::{ErrorState, StateMachine};
use std::sync::Arc;

/// What a device program supplies: its custom options and how to build the device.
///
/// # Examples
///
/// A device program with an option of its own and a plugin that watches the states (run it with
/// FairMQ's options: `--id`, `--channel-config`, `--control`, ...).
///
/// ```no_run
/// use fairmq::{BoxError, Context, Device, HookResult, Plugin, PluginServices, Program};
///
/// struct Counter { left: u64 }
///
/// impl Device for Counter {
///     fn init_task(&mut self, ctx: &Context) -> HookResult {
///         self.left = ctx.config().get("count")?;
///         Ok(())
///     }
///     fn conditional_run(&mut self, _ctx: &Context) -> HookResult<bool> {
///         self.left = self.left.saturating_sub(1);
///         Ok(self.left > 0)
///     }
/// }
///
/// struct Watcher;
///
/// impl Plugin for Watcher {
///     fn name(&self) -> &str { "watcher" }
///     fn start(&mut self, services: PluginServices) -> Result<(), BoxError> {
///         services.subscribe_to_state_change(|s| println!("entered {s}"));
///         Ok(())
///     }
/// }
///
/// fn main() -> std::process::ExitCode {
///     Program::new(|_config| Ok(Counter { left: 0 }))
///         .options(|o| { o.add("count", fairmq::options::Kind::U64, 10u64, "iterations"); })
///         .plugin(Watcher)
///         .version("1.0.0")
///         .run()
/// }
/// ```
pub struct Program<F> {
    custom_options: Option<OptionGroup>,
    factory: F,
    plugins: Vec<Box<dyn Plugin>>,
    version: String,
}

impl<F> std::fmt::Debug for Program<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program").field("version", &self.version).finish()
    }
}

impl<D: Device + 'static, F: FnOnce(&Arc<Properties>) -> Result<D, BoxError>> Program<F> {
    /// A program whose device `factory` builds from the parsed configuration.
    pub fn new(factory: F) -> Self {
        Program { custom_options: None, factory, plugins: Vec::new(), version: "0.0.0".into() }
    }

    /// Adds the device's own options (FairMQ's `addCustomOptions`).
    pub fn options(mut self, add: impl FnOnce(&mut OptionGroup)) -> Self {
        let mut g = OptionGroup::new("Custom options");
        add(&mut g);
        self.custom_options = Some(g);
        self
    }

    /// Adds a plugin. It starts after the plugins that `-P` names, and before the builtin
    /// controller.
    pub fn plugin(mut self, p: impl Plugin + 'static) -> Self {
        self.plugins.push(Box::new(p));
        self
    }

    /// The device version `--version` prints.
    pub fn version(mut self, v: &str) -> Self {
        self.version = v.to_owned();
        self
    }

    /// Runs the program with the process's arguments. Returns the exit code: 0 after EXITING, 1
    /// after ERROR or bad input.
    pub fn run(self) -> std::process::ExitCode {
        match process_args() {
            Ok(args) => std::process::ExitCode::from(self.run_with_args(&args) as u8),
            Err(code) => code,
        }
    }

    /// Runs the program with explicit arguments, without the program name, and returns the exit
    /// code. A panic anywhere in the program's thread ends the program, as an exception that
    /// reaches `main` ends a FairMQ program: the panic is logged, and the exit code is 1. Such a
    /// panic may come from building the device, from a plugin, or from the device's `Drop`.
    pub fn run_with_args(self, args: &[String]) -> i32 {
        logging::init();
        panic_boundary::log_panics();
        crate::fd_limit::raise_open_files_limit();
        let code = panic_boundary::catch(move || self.run_program(args)).unwrap_or_else(|p| {
            log::error!("Uncaught exception reached the top of main: {p}");
            1
        });
        // The logger may still hold back repeated lines. `logging::flush` summarises them before
        // the process ends.
        logging::flush();
        code
    }

    fn run_program(mut self, args: &[String]) -> i32 {
        // `known` holds the options known before any plugin is loaded. `-P` and `-S` are read
        // with these options, so that a known option's value is never taken for a plugin.
        // The plugins' options may not clash with these options, nor with each other's.
        let mut known = options::standard();
        known.add_group(PluginManager::options());
        if let Some(g) = &self.custom_options {
            known.add_group(g.clone());
        }
        let mut plugins = match self.load_plugins(&known, args) {
            Ok(p) => p,
            Err(e) => {
                log::error!("Uncaught exception reached the top of main: {e}");
                return 1;
            }
        };
        let mut groups: Vec<(String, OptionGroup)> =
            plugins.iter().filter_map(|p| Some((p.name().to_owned(), p.options()?))).collect();
        for (name, g) in &groups {
            if let Err(reason) = check_plugin_options(&known, g) {
                let e = PluginError::Instantiation { name: name.clone(), reason };
                log::error!("Uncaught exception reached the top of main: {e}");
                return 1;
            }
            known.add_group(g.clone());
        }
        // The groups follow FairMQ's order: the general options, then the program's own, then
        // every plugin's group sorted by plugin name, then the plugin manager's. The groups of
        // the builtin config and control plugins are sorted in with the other plugins' groups.
        let mut opts = options::standard();
        for (plugin, title) in [("config", options::DEVICE_GROUP), ("control", options::CONTROL_GROUP)] {
            if let Some(g) = opts.take_group(title) {
                groups.push((plugin.to_owned(), g));
            }
        }
        if let Some(g) = self.custom_options {
            opts.add_group(g);
        }
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, g) in groups {
            opts.add_group(g);
        }
        opts.add_group(PluginManager::options());
        let config = Properties::new();
        if let Err(e) = opts.parse(args, &config) {
            log::error!("{e}");
            eprintln!("error: {e}");
            return 1;
        }
        let flag = |k: &str| config.get_or(k, false).unwrap_or(false);
        if flag("help") {
            crate::console::text(&opts.help());
            return 0;
        }
        if flag("print-options") {
            crate::console::text(&opts.print_options(&config));
            return 0;
        }
        if let Err(e) = apply_logging(&config) {
            log::error!("{e}");
            eprintln!("error: {e}");
            return 1;
        }
        if flag("version") {
            crate::console::line(&format!("FairMQ version: fairmq-rs {}", env!("CARGO_PKG_VERSION")));
            crate::console::line(&format!("User device version: {}", self.version));
            return 0;
        }
        if let Err(e) = opts.check_required(&config) {
            log::error!("{e}");
            eprintln!("error: {e}");
            return 1;
        }
        let mut device = match (self.factory)(&config) {
            Ok(d) => d,
            Err(e) => {
                log::error!("getDevice(): no valid device provided ({e}). Exiting.");
                return 1;
            }
        };
        if flag("print-channels") {
            let mut reg = ChannelRegistry::default();
            device.register_channel_endpoints(&mut reg);
            crate::console::text(&reg.print());
            return 0;
        }
        log::debug!("PID: {}", std::process::id());
        log::debug!("{}", opts.configuration_dump(&config));
        for u in &opts.unregistered {
            log::debug!("detected unregistered option: {u}");
        }
        let sm = StateMachine::new();
        // The metrics endpoint starts before the plugins, because the pmix plugin publishes the
        // endpoint's address with its first fence.
        let metrics = match crate::metrics::start_for_device(&config, &sm) {
            Ok(m) => m,
            Err(e) => {
                log::error!("{e}");
                eprintln!("error: {e}");
                return 1;
            }
        };
        let control = Arc::new(DeviceControl::new());
        let mut started: Vec<Box<dyn Plugin>> = Vec::new();
        for mut p in plugins.drain(..) {
            log::debug!("Loaded plugin: {}", plugin::describe(p.as_ref()));
            let services = PluginServices::new(p.name(), &sm, config.clone(), control.clone());
            let started_ok = panic_boundary::catch(|| p.start(services))
                .unwrap_or_else(|panic| Err(format!("it panicked: {panic}").into()));
            if let Err(e) = started_ok {
                let e = PluginError::Instantiation { name: p.name().to_owned(), reason: e.to_string() };
                log::error!("Uncaught exception reached the top of main: {e}");
                // The device will not run. `StateMachine::abandon` tells the plugins that wait
                // for the device's states that the device is in ERROR.
                sm.abandon();
                stop_plugins(started);
                return 1;
            }
            started.push(p);
        }
        let result = run_state_machine(&mut device, config.clone(), sm.clone());
        wait_for_release(&control);
        stop_plugins(started);
        drop(device);
        // The metrics endpoint stops last, so that the final states stay readable until here.
        drop(metrics);
        match result {
            Ok(()) => 0,
            Err(e) => {
                log::error!("Uncaught exception reached the top of main: {e}");
                1
            }
        }
    }

    /// The plugins in the order they start: the plugins that `-P` names, then the program's own,
    /// then the builtin controller.
    fn load_plugins(&mut self, known: &Options, args: &[String]) -> Result<Vec<Box<dyn Plugin>>, PluginError> {
        let manager = PluginManager::from_args_with(known, args)?;
        let own: Vec<String> = self.plugins.iter().map(|p| p.name().to_owned()).collect();
        let mut builtin: Vec<&str> = own.iter().map(String::as_str).collect();
        builtin.extend(["control", "config"]);
        let mut plugins = manager.load(&builtin)?;
        plugins.append(&mut self.plugins);
        plugins.push(Box::new(ControlPlugin::default()));
        Ok(plugins)
    }
}

/// Checks a plugin's option names. A name may not be one that the program or the plugin already
/// has, because its default would replace the other option's default. A name must also be one that
/// a command line can give.
fn check_plugin_options(opts: &Options, g: &OptionGroup) -> Result<(), String> {
    for (i, o) in g.options.iter().enumerate() {
        let n = &o.name;
        if n.is_empty() || n.starts_with('-') || !n.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
            return Err(format!("'{n}' is not an option name"));
        }
        if opts.has(n) || g.options[..i].iter().any(|earlier| earlier.name == *n) {
            return Err(format!("option '--{n}' is already defined"));
        }
    }
    Ok(())
}

/// Waits until no plugin controls the device. FairMQ's runner waits too, so that a controller
/// finishes its sequence. If the wait takes more than 2 seconds, `wait_for_release` logs which
/// plugin it waits for.
fn wait_for_release(control: &DeviceControl) {
    if !control.wait_for_release(Some(std::time::Duration::from_secs(2))) {
        if let Some(c) = control.controller() {
            log::info!("Waiting for plugin '{c}' to release device control");
        }
        control.wait_for_release(None);
    }
}

/// Stops plugins, the last started first.
fn stop_plugins(mut started: Vec<Box<dyn Plugin>>) {
    while let Some(mut p) = started.pop() {
        if panic_boundary::catch(|| p.stop()).is_err() {
            log::error!("plugin '{}' panicked while stopping", p.name());
        }
        log::debug!("Unloaded plugin: {}", plugin::describe(p.as_ref()));
    }
}

/// The process's arguments without the program name. An argument that is not UTF-8 is refused
/// like any bad input: `process_args` prints a message and returns exit code 1. (`std::env::args`
/// would panic on such an argument.)
pub fn process_args() -> Result<Vec<String>, std::process::ExitCode> {
    std::env::args_os().skip(1).map(std::ffi::OsString::into_string).collect::<Result<_, _>>().map_err(|bad| {
        eprintln!("error: the argument {bad:?} is not valid UTF-8");
        std::process::ExitCode::from(1)
    })
}

/// Runs one of the devices that a program holds, chosen by the program's first argument:
/// `<program> <role> <device options>`. This crate's examples are built this way. `run` gets the
/// role (one of `roles`) and the arguments after it. `run` returns the exit code, usually that of
/// [`Program::run_with_args`]. A missing or unknown role prints the usage and exits with 1.
pub fn run_role(program: &str, roles: &[&str], run: impl FnOnce(&str, &[String]) -> i32) -> std::process::ExitCode {
    let args = match process_args() {
        Ok(args) => args,
        Err(code) => return code,
    };
    match args.split_first() {
        Some((role, rest)) if roles.contains(&role.as_str()) => {
            std::process::ExitCode::from(u8::try_from(run(role, rest)).unwrap_or(1))
        }
        _ => {
            eprintln!("usage: {program} {} <device options>", roles.join("|"));
            std::process::ExitCode::from(1)
        }
    }
}

/// Applies the logging options: `--severity` (or `$FAIRMQ_SEVERITY`, which takes precedence),
/// `--verbosity`, `--color`, `--file-severity`, `--log-summary` and `--log-to-file`.
fn apply_logging(c: &Properties) -> Result<(), BoxError> {
    logging::set_verbosity(c.get_or::<String>("verbosity", "medium".into())?.parse::<Verbosity>()?);
    logging::set_color(c.get_or("color", true)?);
    logging::set_file_severity(c.get_or::<String>("file-severity", "debug".into())?.parse::<Severity>()?);
    logging::set_summary_policy(
        c.get_or::<String>("log-summary", "library".into())?.parse::<logging::SummaryPolicy>()?,
    );
    let file = c.get_or::<String>("log-to-file", String::new())?;
    if !file.is_empty() {
        logging::log_to_file(&file)?;
    }
    let severity = std::env::var("FAIRMQ_SEVERITY").ok().unwrap_or(c.get_or::<String>("severity", String::new())?);
    if !severity.is_empty() {
        logging::set_console_severity(severity.parse::<Severity>()?);
    }
    Ok(())
}

/// Parses `args` into a new configuration, with the standard options and the `extra` groups. It
/// is meant for devices that run inside another program (see [`spawn_device`]).
pub fn config_from_args(args: &[&str], extra: Vec<OptionGroup>) -> Result<Arc<Properties>, options::OptionsError> {
    let mut opts: Options = options::standard();
    for g in extra {
        opts.add_group(g);
    }
    let config = Properties::new();
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    opts.parse(&args, &config)?;
    Ok(config)
}

/// Runs `device` on its own thread with `config`. The returned `DeviceHandle` drives the device.
/// There is no builtin controller and no signal handling: the calling program is the controller.
/// The thread ends when the device reaches EXITING (`Ok`) or ERROR (`Err`).
pub fn spawn_device<D: Device + 'static>(
    mut device: D,
    config: Arc<Properties>,
) -> (DeviceHandle, std::thread::JoinHandle<Result<(), ErrorState>>) {
    logging::init();
    let sm = StateMachine::new();
    let handle = DeviceHandle::new(&sm, "controller");
    let t = std::thread::spawn(move || run_state_machine(&mut device, config, sm));
    (handle, t)
}

/// Waits for `state` with a generous timeout (60 seconds). A convenience for controllers.
pub fn expect_state(h: &DeviceHandle, state: State) -> Result<(), BoxError> {
    match h.wait_for_state(state, Some(std::time::Duration::from_secs(60))) {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!("device did not reach {state} in time (now {})", h.current_state()).into()),
        Err(e) => Err(e.into()),
    }
}
