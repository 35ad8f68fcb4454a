//! The builtin controller as a plugin: [`ControlPlugin`] (FairMQ's `control` plugin).
//!
//! The plugin reads `--control` and `--catch-signals`, and starts a [`Controller`] with them.
//! A program starts it after every other plugin, so a plugin that takes control first keeps it.
//! Signals are handled either way.

use super::{Plugin, PluginServices, Version};
use crate::control::{ControlMode, Controller};
use crate::BoxError;

/// The `control` plugin.
#[derive(Debug, Default)]
pub struct ControlPlugin {
    controller: Option<Controller>,
}

impl Plugin for ControlPlugin {
    fn name(&self) -> &str {
        "control"
    }
    fn version(&self) -> Version {
        crate_version()
    }
    fn maintainer(&self) -> &str {
        "fairmq-rs"
    }
    fn homepage(&self) -> &str {
        ""
    }
    fn start(&mut self, services: PluginServices) -> Result<(), BoxError> {
        let config = services.config().clone();
        let mode: ControlMode = config
            .get_or::<String>("control", "dynamic".into())
            .unwrap_or_default()
            .parse()
            .unwrap_or(ControlMode::Static);
        let catch = config.get_or::<i32>("catch-signals", 1).unwrap_or(1) > 0;
        let color = config.get_or("color", true).unwrap_or(true);
        self.controller = Some(Controller::start(services, mode, catch, color)?);
        Ok(())
    }
    fn stop(&mut self) {
        if let Some(c) = self.controller.take() {
            c.join();
        }
    }
}

/// This crate's version as a plugin version.
pub(crate) fn crate_version() -> Version {
    let n = |s: &str| s.parse().unwrap_or(0);
    Version {
        major: n(env!("CARGO_PKG_VERSION_MAJOR")),
        minor: n(env!("CARGO_PKG_VERSION_MINOR")),
        patch: n(env!("CARGO_PKG_VERSION_PATCH")),
    }
}
