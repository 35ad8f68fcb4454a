//! Which plugin controls the device: [`DeviceControl`] (FairMQ's device control in
//! `PluginServices`).
//!
//! At most one plugin controls the device at a time. Only that plugin may request transitions;
//! the others may watch the states but not change them. While no plugin has control, the first
//! plugin that requests a transition takes it. The builtin controller steals control on a signal,
//! to shut the device down. After the device's state loop ends, the program waits until no plugin
//! holds control.

use parking_lot::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The error returned when a plugin asks for something that another plugin's control forbids
/// (FairMQ's `DeviceControlError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceControlError {
    /// A plugin tried to take control while another plugin holds it.
    #[error("Plugin '{plugin}' is not allowed to take over control. Currently, plugin '{holder}' has taken control.")]
    Take {
        /// The plugin that asked.
        plugin: String,
        /// The plugin in control.
        holder: String,
    },
    /// A plugin tried to change the state while another plugin holds control.
    #[error(
        "Plugin '{plugin}' is not allowed to change device states. Currently, plugin '{holder}' has taken control."
    )]
    Change {
        /// The plugin that asked.
        plugin: String,
        /// The plugin in control.
        holder: String,
    },
}

/// The device's controller, shared by all plugins of a program.
#[derive(Debug, Default)]
pub struct DeviceControl {
    controller: Mutex<Option<String>>,
    released: Condvar,
}

impl DeviceControl {
    /// Creates a `DeviceControl` with no plugin in control.
    pub fn new() -> DeviceControl {
        DeviceControl::default()
    }

    /// Makes `plugin` the controller. Returns an error if another plugin is the controller.
    pub fn take(&self, plugin: &str) -> Result<(), DeviceControlError> {
        let mut c = self.controller.lock();
        match c.as_deref() {
            None => {
                log::trace!("Plugin '{plugin}' took over control.");
                *c = Some(plugin.to_owned());
                Ok(())
            }
            Some(holder) if holder == plugin => {
                log::trace!("Plugin '{plugin}' is already in control.");
                Ok(())
            }
            Some(holder) => Err(DeviceControlError::Take { plugin: plugin.to_owned(), holder: holder.to_owned() }),
        }
    }

    /// Makes `plugin` the controller, whichever plugin held control before. The builtin controller
    /// does this on a signal, to shut the device down.
    pub fn steal(&self, plugin: &str) {
        log::trace!("Plugin '{plugin}' steals control!");
        *self.controller.lock() = Some(plugin.to_owned());
    }

    /// Ends `plugin`'s control. If `plugin` is not in control, nothing changes and a debug message
    /// is logged.
    pub fn release(&self, plugin: &str) {
        let mut c = self.controller.lock();
        if c.as_deref() == Some(plugin) {
            log::trace!("Plugin '{plugin}' releases control.");
            *c = None;
        } else {
            log::debug!("Plugin '{plugin}' cannot release control because it has no control.");
        }
        self.released.notify_all();
    }

    /// Returns the name of the plugin in control, if any.
    pub fn controller(&self) -> Option<String> {
        self.controller.lock().clone()
    }

    /// Checks whether `plugin` may request a transition now, and returns an error if it may not.
    /// If no plugin is in control, this call makes `plugin` the controller, as in FairMQ.
    pub fn allow_change(&self, plugin: &str) -> Result<(), DeviceControlError> {
        let mut c = self.controller.lock();
        match c.as_deref() {
            None => {
                *c = Some(plugin.to_owned());
                Ok(())
            }
            Some(holder) if holder == plugin => Ok(()),
            Some(holder) => Err(DeviceControlError::Change { plugin: plugin.to_owned(), holder: holder.to_owned() }),
        }
    }

    /// Waits until no plugin is in control. Returns false if `timeout` passed first.
    pub fn wait_for_release(&self, timeout: Option<Duration>) -> bool {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t)); // too far off: no deadline
        let mut c = self.controller.lock();
        while c.is_some() {
            match deadline {
                None => self.released.wait(&mut c),
                Some(d) => {
                    if self.released.wait_until(&mut c, d).timed_out() {
                        return c.is_none();
                    }
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_plugin_cannot_take_or_change_until_the_first_releases() {
        let c = DeviceControl::new();
        c.take("dds").unwrap();
        c.take("dds").unwrap();
        let e = c.take("control").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Plugin 'control' is not allowed to take over control. Currently, plugin 'dds' has taken control."
        );
        let e = c.allow_change("control").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Plugin 'control' is not allowed to change device states. Currently, plugin 'dds' has taken control."
        );
        c.release("control");
        assert_eq!(c.controller().as_deref(), Some("dds"), "a plugin without control releases nothing");
        c.release("dds");
        assert_eq!(c.controller(), None);
        c.allow_change("control").unwrap();
        assert_eq!(c.controller().as_deref(), Some("control"), "changing a state takes free control");
        c.steal("signal");
        assert_eq!(c.controller().as_deref(), Some("signal"));
        assert!(!c.wait_for_release(Some(Duration::from_millis(10))));
    }

    #[test]
    fn waiting_for_release_ends_when_the_controller_releases() {
        let c = std::sync::Arc::new(DeviceControl::new());
        c.take("p").unwrap();
        let c2 = c.clone();
        let t = std::thread::spawn(move || c2.wait_for_release(Some(Duration::from_secs(60))));
        std::thread::sleep(Duration::from_millis(20));
        c.release("p");
        assert!(t.join().unwrap());
    }
}
