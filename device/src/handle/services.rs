//! What the device offers a plugin: [`PluginServices`] (FairMQ's `PluginServices`).

use super::device_control::{DeviceControl, DeviceControlError};
use super::DeviceHandle;
use crate::properties::Properties;
use crate::state::{State, Transition};
use crate::state_machine::{ErrorState, StateMachine};
use std::sync::Arc;
use std::time::Duration;

/// A plugin's access to its device. `PluginServices` offers the device's states, transitions
/// (while the plugin may control the device), device control, and the configuration. A clone is
/// another handle of the same plugin.
#[derive(Clone, Debug)]
pub struct PluginServices {
    name: String,
    device: DeviceHandle,
    config: Arc<Properties>,
    control: Arc<DeviceControl>,
}

impl PluginServices {
    /// Creates the services of plugin `name` for the device that `sm` drives.
    pub fn new(name: &str, sm: &Arc<StateMachine>, config: Arc<Properties>, control: Arc<DeviceControl>) -> Self {
        PluginServices {
            name: name.to_owned(),
            device: DeviceHandle::for_plugin(sm, name, control.clone()),
            config,
            control,
        }
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's current state.
    pub fn current_state(&self) -> State {
        self.device.current_state()
    }

    /// Requests a transition. Returns whether the current state accepted it, or an error when
    /// another plugin controls the device. If no plugin is in control, this plugin becomes the
    /// controller.
    pub fn change_state(&self, t: Transition) -> Result<bool, DeviceControlError> {
        self.device.try_change_state(t)
    }

    /// Takes control of the device. Returns an error when another plugin has control.
    pub fn take_device_control(&self) -> Result<(), DeviceControlError> {
        self.control.take(&self.name)
    }

    /// Takes control of the device, even when another plugin has it.
    pub fn steal_device_control(&self) {
        self.control.steal(&self.name)
    }

    /// Releases control, if this plugin has it. The device does not exit while a plugin holds
    /// control.
    pub fn release_device_control(&self) {
        if self.control.controller().as_deref() == Some(self.name.as_str()) {
            self.control.release(&self.name);
        }
    }

    /// Returns the name of the plugin that controls the device, if any.
    pub fn device_controller(&self) -> Option<String> {
        self.control.controller()
    }

    /// Whether any plugin controls the device.
    pub fn is_device_controlled(&self) -> bool {
        self.control.controller().is_some()
    }

    /// Waits until no plugin controls the device. Returns false on timeout.
    pub fn wait_for_release_device_control(&self, timeout: Option<Duration>) -> bool {
        self.control.wait_for_release(timeout)
    }

    /// Calls `f` for every state that the device enters from now on. `f` runs on the state
    /// machine's thread. The subscription's key is the plugin's name.
    pub fn subscribe_to_state_change(&self, f: impl Fn(State) + Send + Sync + 'static) {
        self.device.state_machine().subscribe_to_state_change(&self.name, f);
    }

    /// Ends the plugin's state subscriptions.
    pub fn unsubscribe_from_state_change(&self) {
        self.device.state_machine().unsubscribe_from_state_change(&self.name);
    }

    /// Waits until the device has entered `s` since the plugin started. Returns `Ok(false)` on
    /// timeout, and `Err` if the device is in ERROR.
    pub fn wait_for_state(&self, s: State, timeout: Option<Duration>) -> Result<bool, ErrorState> {
        self.device.wait_for_state(s, timeout)
    }

    /// Returns a handle that drives the device with FairMQ's sequences. The handle's transitions
    /// go through this plugin's device control.
    pub fn device(&self) -> &DeviceHandle {
        &self.device
    }

    /// Returns the configuration: properties that the plugin can get, set and subscribe to.
    pub fn config(&self) -> &Arc<Properties> {
        &self.config
    }
}
