//! Handles that drive a device from another thread.
//!
//! - [`DeviceHandle`] requests transitions and waits for states. It keeps its own queue of the
//!   states entered since it was made, so a wait never misses a state.
//! - [`PluginServices`] is what the device offers a plugin: its configuration, its states, and a
//!   [`DeviceHandle`] of the plugin's own.
//! - [`DeviceControl`] records which plugin controls the device. Only that plugin may request
//!   transitions; the others may only watch the states. While no plugin has control, the first
//!   plugin that requests a transition takes it.
//!
//! The builtin controller (`control`) and the plugins (`plugin`) both use these handles. This
//! module sits below both, so that neither imports the other.

mod device_control;
mod services;

pub use device_control::{DeviceControl, DeviceControlError};
pub use services::PluginServices;

use crate::state::{State, Transition};
use crate::state_machine::{ErrorState, StateMachine, StateQueue};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A handle that drives a device from another thread, as FairMQ's custom controllers and plugins
/// do. Each handle keeps its own queue of the states that the device entered, so a wait never
/// misses a state. A plugin's handle requests transitions only while its plugin is allowed to (see
/// [`DeviceControl`]).
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
    /// Creates a handle that subscribes, under `key`, to the state changes of `sm`. The handle sees
    /// only the states entered from now on.
    pub fn new(sm: &Arc<StateMachine>, key: &str) -> DeviceHandle {
        let queue = Arc::new(StateQueue::default());
        // The subscription holds only a weak reference to the queue. A strong reference would keep
        // the queue alive, so no handle would ever see itself as the last one and unsubscribe (see
        // `Drop for DeviceHandle`).
        let q = Arc::downgrade(&queue);
        sm.subscribe_to_state_change(key, move |s| {
            if let Some(q) = q.upgrade() {
                q.push(s);
            }
        });
        DeviceHandle { sm: sm.clone(), queue, key: key.to_owned(), plugin: None }
    }

    /// Creates the handle of plugin `name`. The handle's transitions go through `control`.
    ///
    /// The handle's state queue subscribes under a key of its own. The plugin's own subscriptions
    /// use the plugin's name as key, so they can come and go without removing the handle's queue.
    pub fn for_plugin(sm: &Arc<StateMachine>, name: &str, control: Arc<DeviceControl>) -> DeviceHandle {
        let mut h = DeviceHandle::new(sm, &format!("{name} (plugin handle)"));
        h.plugin = Some((control, name.to_owned()));
        h
    }

    /// Requests a transition and returns whether it was accepted. Also returns false, and logs
    /// why, when another plugin controls the device.
    pub fn change_state(&self, t: Transition) -> bool {
        self.try_change_state(t).unwrap_or_else(|e| {
            log::debug!("{e}");
            false
        })
    }

    /// Requests a transition. Returns whether the current state accepted it, or an error that says
    /// why this handle's plugin may not request it.
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

    /// Waits until the device has entered `s`, and pops the states that this handle saw on the
    /// way. Returns `Ok(false)` on timeout, and `Err` if the device is in ERROR.
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

    /// Runs FairMQ's startup sequence up to RUNNING. Stops early and returns false when `stop`
    /// becomes true.
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

    /// Runs FairMQ's shutdown sequence, starting from the current state.
    ///
    /// Returns `Ok(true)` when the device reaches EXITING, and `Err` when it reaches ERROR. Returns
    /// `Ok(false)`, and logs why, when another plugin has taken control. Each request is derived
    /// from the current state, so a state entered in the meantime is never missed.
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
