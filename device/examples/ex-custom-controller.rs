//! FairMQ's custom-controller example: a plugin takes control of a device without channels,
//! drives it to RUNNING, and after 3 s in RUNNING shuts it down, then releases control. Exits 0.

use fairmq::{BoxError, Context, Device, HookResult, Plugin, PluginServices, Program};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

struct MyController(Option<std::thread::JoinHandle<()>>);

impl Plugin for MyController {
    fn name(&self) -> &str {
        "mycontroller"
    }
    fn start(&mut self, services: PluginServices) -> Result<(), BoxError> {
        // Taken before the builtin controller starts (it starts last), so it stands back.
        services.take_device_control()?;
        self.0 = Some(std::thread::spawn(move || {
            let h = services.device();
            let never = AtomicBool::new(false);
            if matches!(h.run_startup_sequence(&never), Ok(true)) {
                log::info!("mycontroller: RUNNING; shutting down in 3 s");
                std::thread::sleep(Duration::from_secs(3));
            }
            let _ = h.run_shutdown_sequence();
            services.release_device_control();
        }));
        Ok(())
    }
    fn stop(&mut self) {
        if let Some(t) = self.0.take() {
            let _ = t.join();
        }
    }
}

/// A plain device: RUNNING until stopped.
struct Plain;

impl Device for Plain {
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        ctx.wait_for(Duration::from_millis(100));
        Ok(true)
    }
}

fn main() -> std::process::ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--id") {
        args.extend(["--id".into(), "custom".into()]);
    }
    args.extend(["--catch-signals".into(), "0".into()]);
    let code = Program::new(|_| Ok(Plain)).plugin(MyController(None)).run_with_args(&args);
    std::process::ExitCode::from(code as u8)
}
