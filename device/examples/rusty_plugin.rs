//! A plugin library written in Rust (`cargo build --example rusty_plugin` makes
//! `librusty_plugin.so`; install it as `libfairmq-plugin-rusty.so` and load it with `-P rusty`).
//! It appends the states the device enters to `--rusty-log`, and with `--rusty-take` tries to
//! take control of the device, writing what the device answered.

use fairmq::plugin::c_abi::{FMQ_OPTION_FLAG, FMQ_OPTION_STRING};
use fairmq::plugin::export::{LibraryPlugin, LibraryServices};
use fairmq::BoxError;
use std::io::Write;
use std::sync::{Arc, Mutex};

struct Rusty {
    log: Arc<Mutex<std::fs::File>>,
}

fn note(log: &Mutex<std::fs::File>, line: &str) {
    if let Ok(mut f) = log.lock() {
        let _ = writeln!(f, "{line}");
    }
}

impl LibraryPlugin for Rusty {
    fn start(services: LibraryServices) -> Result<Self, BoxError> {
        let path = services.property("rusty-log")?.filter(|p| !p.is_empty()).ok_or("--rusty-log is required")?;
        let log = Arc::new(Mutex::new(std::fs::OpenOptions::new().create(true).append(true).open(path)?));
        let l = log.clone();
        services.subscribe_to_state_change(move |s| note(&l, &format!("state {s}")))?;
        if services.property("rusty-take")?.as_deref() == Some("true") {
            match services.take_device_control() {
                Ok(()) => note(&log, "took control"),
                Err(e) => note(&log, &format!("control refused: {}", e.message)),
            }
        }
        services.log(log::Level::Info, "rusty plugin started");
        Ok(Rusty { log })
    }
    fn stop(&mut self) {
        note(&self.log, "stopped");
    }
}

fairmq::export_plugin!(fmq_plugin_rusty, Rusty, name: c"rusty", version: (0, 3, 1),
maintainer: c"fairmq-rs", homepage: c"",
options: c"Rusty Plugin", [
    (c"rusty-log", FMQ_OPTION_STRING, c"", c"File to append the states to"),
    (c"rusty-take", FMQ_OPTION_FLAG, c"", c"Try to take control of the device"),
]);
