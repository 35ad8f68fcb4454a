//! A plugin that takes control (FairMQ's custom-controller example): the builtin controller stands
//! back, the plugin drives the device through start-up, lets it run, and shuts it down.

mod common;
use fairmq::{DeviceHandle, Plugin, Program, Properties, State};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

struct MyController {
    thread: Option<std::thread::JoinHandle<()>>,
    saw_running: Arc<AtomicBool>,
}

impl Plugin for MyController {
    fn name(&self) -> &str {
        "mycontroller"
    }
    fn takes_control(&self) -> bool {
        true
    }
    fn start(&mut self, h: DeviceHandle, _config: Arc<Properties>) {
        let saw = self.saw_running.clone();
        self.thread = Some(std::thread::spawn(move || {
            let never = AtomicBool::new(false);
            if h.run_startup_sequence(&never).unwrap() {
                saw.store(h.current_state() == State::Running, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(300));
            }
            h.run_shutdown_sequence().unwrap();
        }));
    }
    fn stop(&mut self) {
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

#[test]
fn a_plugin_drives_the_device_instead_of_the_builtin_controller() {
    struct Busy;
    impl fairmq::Device for Busy {
        fn conditional_run(&mut self, ctx: &fairmq::Context) -> fairmq::HookResult<bool> {
            ctx.wait_for(Duration::from_millis(10));
            Ok(true)
        }
    }
    let saw = Arc::new(AtomicBool::new(false));
    let code =
        Program::new(|_| Ok(Busy)).plugin(MyController { thread: None, saw_running: saw.clone() }).run_with_args(
            &["--id", "cc", "--catch-signals", "0", "--severity", "warn", "--control", "static"].map(String::from),
        );
    assert_eq!(code, 0);
    assert!(saw.load(Ordering::SeqCst), "the plugin saw RUNNING; static control did not interfere");
}
