//! Plugins built into a program (issue 19): a plugin that takes control drives the device and the
//! builtin controller stands back; a second one can watch but not drive; the program does not end
//! while a plugin holds control.

use fairmq::plugin::DeviceControlError;
use fairmq::{BoxError, Plugin, PluginServices, Program, State, Transition};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// FairMQ's custom controller: takes control as it starts, drives the device through its life,
/// releases control once EXITING is reached, after `linger`.
struct MyController {
    thread: Option<std::thread::JoinHandle<()>>,
    saw_running: Arc<AtomicBool>,
    linger: Duration,
    released_at: Arc<AtomicU64>,
}

fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

impl Plugin for MyController {
    fn name(&self) -> &str {
        "mycontroller"
    }
    fn start(&mut self, services: PluginServices) -> Result<(), BoxError> {
        services.take_device_control()?;
        let (saw, linger, released_at) = (self.saw_running.clone(), self.linger, self.released_at.clone());
        self.thread = Some(std::thread::spawn(move || {
            let h = services.device();
            let never = AtomicBool::new(false);
            if h.run_startup_sequence(&never).unwrap() {
                saw.store(h.current_state() == State::Running, Ordering::SeqCst);
                // Pacing, as FairMQ's example controller: the device runs a while before it is stopped.
                std::thread::sleep(Duration::from_millis(300));
            }
            assert!(h.run_shutdown_sequence().unwrap(), "the controller reaches EXITING");
            // Deliberate: control is held past EXITING; the program must wait for its release.
            std::thread::sleep(linger);
            released_at.store(now_ns(), Ordering::SeqCst);
            services.release_device_control();
        }));
        Ok(())
    }
    fn stop(&mut self) {
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

fn controller(linger: Duration) -> (MyController, Arc<AtomicBool>, Arc<AtomicU64>) {
    let saw = Arc::new(AtomicBool::new(false));
    let released = Arc::new(AtomicU64::new(0));
    (MyController { thread: None, saw_running: saw.clone(), linger, released_at: released.clone() }, saw, released)
}

/// RUNNING until a transition is requested.
struct Busy;

impl fairmq::Device for Busy {
    fn conditional_run(&mut self, ctx: &fairmq::Context) -> fairmq::HookResult<bool> {
        ctx.wait_for(Duration::from_millis(10));
        Ok(true)
    }
}

fn args(extra: &str) -> Vec<String> {
    format!("--id cc --catch-signals 0 --severity warn {extra}").split_whitespace().map(String::from).collect()
}

#[test]
fn i19_a_plugin_drives_the_device_instead_of_the_builtin_controller() {
    let (c, saw, _) = controller(Duration::ZERO);
    let code = Program::new(|_| Ok(Busy)).plugin(c).run_with_args(&args("--control static"));
    assert_eq!(code, 0);
    assert!(saw.load(Ordering::SeqCst), "the plugin saw RUNNING; static control did not interfere");
}

#[test]
fn i19_the_program_ends_only_once_the_controlling_plugin_released_control() {
    let (c, _, released_at) = controller(Duration::from_millis(400));
    let code = Program::new(|_| Ok(Busy)).plugin(c).run_with_args(&args("--control none"));
    let ended = now_ns();
    assert_eq!(code, 0);
    let released = released_at.load(Ordering::SeqCst);
    assert!(released != 0 && released <= ended, "released {released}, program ended {ended}");
}

/// Tries to drive and to take control while `mycontroller` has it; records what it was told and
/// every state it saw.
struct Watcher {
    told: Arc<Mutex<Vec<String>>>,
    states: Arc<Mutex<Vec<State>>>,
}

impl Plugin for Watcher {
    fn name(&self) -> &str {
        "watcher"
    }
    fn start(&mut self, services: PluginServices) -> Result<(), BoxError> {
        let states = self.states.clone();
        services.subscribe_to_state_change(move |s| states.lock().unwrap().push(s));
        let mut told = self.told.lock().unwrap();
        assert_eq!(services.device_controller().as_deref(), Some("mycontroller"));
        match services.take_device_control() {
            Err(e @ DeviceControlError::Take { .. }) => told.push(e.to_string()),
            other => panic!("took control from another plugin: {other:?}"),
        }
        match services.change_state(Transition::InitDevice) {
            Err(e @ DeviceControlError::Change { .. }) => told.push(e.to_string()),
            other => panic!("changed the state of a device another plugin controls: {other:?}"),
        }
        // The device handle refuses too (logged), and so does the builtin controller's sequence.
        assert!(!services.device().change_state(Transition::InitDevice));
        assert_eq!(services.current_state(), State::Idle);
        Ok(())
    }
}

#[test]
fn i19_a_second_plugin_watches_but_cannot_take_control_or_change_states() {
    let (c, saw, _) = controller(Duration::ZERO);
    let told = Arc::new(Mutex::new(Vec::new()));
    let states = Arc::new(Mutex::new(Vec::new()));
    let w = Watcher { told: told.clone(), states: states.clone() };
    let code = Program::new(|_| Ok(Busy)).plugin(c).plugin(w).run_with_args(&args("--control static"));
    assert_eq!(code, 0);
    assert!(saw.load(Ordering::SeqCst));
    assert_eq!(
        *told.lock().unwrap(),
        [
            "Plugin 'watcher' is not allowed to take over control. Currently, plugin 'mycontroller' has taken control.",
            "Plugin 'watcher' is not allowed to change device states. Currently, plugin 'mycontroller' has taken control.",
        ]
    );
    let seen = states.lock().unwrap().clone();
    assert_eq!(seen.first(), Some(&State::Idle), "{seen:?}");
    assert_eq!(seen.last(), Some(&State::Exiting), "{seen:?}");
    assert_eq!(seen.iter().filter(|s| **s == State::Running).count(), 1, "one run, one controller: {seen:?}");
}

/// Fails to start.
struct Broken;

impl Plugin for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    fn start(&mut self, _: PluginServices) -> Result<(), BoxError> {
        Err("no licence server".into())
    }
}

#[test]
fn i19_a_plugin_that_cannot_start_ends_the_program_with_1_before_the_device_runs() {
    let ran = Arc::new(AtomicBool::new(false));
    struct Marks(Arc<AtomicBool>);
    impl fairmq::Device for Marks {
        fn init(&mut self, _: &fairmq::Context) -> fairmq::HookResult {
            self.0.store(true, Ordering::SeqCst);
            Ok(())
        }
    }
    let r = ran.clone();
    let code = Program::new(move |_| Ok(Marks(r))).plugin(Broken).run_with_args(&args("--control static"));
    assert_eq!(code, 1);
    assert!(!ran.load(Ordering::SeqCst), "the device never initialised");
}

#[test]
fn i19_unknown_plugins_are_errors_not_ignored() {
    /// Ends RUNNING at once: with static control the program exits 0 unless a plugin fails.
    struct Once;
    impl fairmq::Device for Once {
        fn conditional_run(&mut self, _: &fairmq::Context) -> fairmq::HookResult<bool> {
            Ok(false)
        }
    }
    for p in ["dds", "s:dds", "p:dds"] {
        let code = Program::new(|_| Ok(Once)).run_with_args(&args(&format!("--control static -P {p}")));
        assert_eq!(code, 1, "-P {p}");
    }
    // A builtin one by its static name is fine.
    let code = Program::new(|_| Ok(Once)).run_with_args(&args("--control static -P s:control"));
    assert_eq!(code, 0);
}

/// Panics as it starts.
struct Panicky;

impl Plugin for Panicky {
    fn name(&self) -> &str {
        "panicky"
    }
    fn start(&mut self, _: PluginServices) -> Result<(), BoxError> {
        panic!("a bug in the plugin");
    }
}

/// Records that it was stopped.
struct Stopped(Arc<AtomicBool>);

impl Plugin for Stopped {
    fn name(&self) -> &str {
        "stopped"
    }
    fn start(&mut self, _: PluginServices) -> Result<(), BoxError> {
        Ok(())
    }
    fn stop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn i19_a_plugin_that_panics_as_it_starts_ends_the_program_with_1_and_the_started_ones_are_stopped() {
    let stopped = Arc::new(AtomicBool::new(false));
    let code = Program::new(|_| Ok(Busy))
        .plugin(Stopped(stopped.clone()))
        .plugin(Panicky)
        .run_with_args(&args("--control static"));
    assert_eq!(code, 1);
    assert!(stopped.load(Ordering::SeqCst), "the plugin started before was stopped");
}

/// Takes control and waits (up to two minutes) for RUNNING in a thread that its stop joins.
struct Waiter(Option<std::thread::JoinHandle<Result<bool, fairmq::state_machine::ErrorState>>>);

impl Plugin for Waiter {
    fn name(&self) -> &str {
        "waiter"
    }
    fn start(&mut self, services: PluginServices) -> Result<(), BoxError> {
        services.take_device_control()?;
        self.0 = Some(std::thread::spawn(move || {
            let r = services.wait_for_state(State::Running, Some(Duration::from_secs(120)));
            services.release_device_control();
            r
        }));
        Ok(())
    }
    fn stop(&mut self) {
        let r = self.0.take().unwrap().join().unwrap();
        assert!(r.is_err(), "the wait ended with the device's ERROR, not a timeout: {r:?}");
    }
}

#[test]
fn i19_when_a_plugin_cannot_start_the_plugins_already_waiting_hear_error_at_once() {
    let began = std::time::Instant::now();
    let code = Program::new(|_| Ok(Busy)).plugin(Waiter(None)).plugin(Broken).run_with_args(&args("--control static"));
    assert_eq!(code, 1);
    assert!(began.elapsed() < Duration::from_secs(60), "the waiting plugin was not left to its timeout");
}

/// Declares an option the device already has.
struct Clash(&'static str);

impl Plugin for Clash {
    fn name(&self) -> &str {
        "clash"
    }
    fn options(&self) -> Option<fairmq::options::OptionGroup> {
        let mut g = fairmq::options::OptionGroup::new("Clash Plugin");
        g.add(self.0, fairmq::options::Kind::Str, "x", "an option");
        Some(g)
    }
    fn start(&mut self, _: PluginServices) -> Result<(), BoxError> {
        Ok(())
    }
}

#[test]
fn i19_a_plugin_option_that_clashes_with_the_devices_or_cannot_be_given_is_refused() {
    /// Ends RUNNING at once: without the check the program would exit 0.
    struct Quick;
    impl fairmq::Device for Quick {
        fn conditional_run(&mut self, _: &fairmq::Context) -> fairmq::HookResult<bool> {
            Ok(false)
        }
    }
    for name in ["rate", "transport", "plugin", "", "-x", "a b"] {
        let code = Program::new(|_| Ok(Quick)).plugin(Clash(name)).run_with_args(&args("--control static"));
        assert_eq!(code, 1, "option '{name}'");
    }
}
