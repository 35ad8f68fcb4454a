//! The C ABI of plugins, declared in `include/fairmq_rs.h`: what a plugin library exports (its
//! descriptor, [`fmq_plugin`]) and what the device gives it ([`fmq_plugin_services`]). Types only;
//! the code that crosses the ABI is in `dynamic.rs`.
#![allow(non_camel_case_types)]

use crate::options::Kind;
use std::ffi::{c_char, c_void};

/// Constants of the plugin ABI (an enum so that the generated header carries them).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum fmq_plugin_abi {
    /// Version of the plugin ABI in this header. A plugin states the version it was built
    /// against in `fmq_plugin::abi_version`; a device refuses a plugin of another version.
    FMQ_PLUGIN_ABI_VERSION = 1,
}

/// Version of the plugin ABI of this program.
pub const FMQ_PLUGIN_ABI_VERSION: u32 = fmq_plugin_abi::FMQ_PLUGIN_ABI_VERSION as u32;

/// Type of an option: one of the `fmq_option_kind` values, with `FMQ_OPTION_REQUIRED` added for an
/// option that must be given. An integer rather than the enum because C may store any value in
/// it; unknown ones are refused.
pub type fmq_option_type = i32;

/// The types of options (`fmq_option_type` values).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum fmq_option_kind {
    /// Text.
    FMQ_OPTION_STRING = 0,
    /// Signed integer (int).
    FMQ_OPTION_INT = 1,
    /// Unsigned 64-bit integer.
    FMQ_OPTION_UINT64 = 2,
    /// Floating point (float).
    FMQ_OPTION_FLOAT = 3,
    /// True/false.
    FMQ_OPTION_BOOL = 4,
    /// A switch that takes no value (given: true).
    FMQ_OPTION_FLAG = 5,
    /// A list of texts (Boost's `value<std::vector<T>>()`): several tokens, and the option may
    /// repeat; its default and its property text hold one item per line.
    FMQ_OPTION_STRINGS = 6,
    /// Unsigned 16-bit integer (uint16_t).
    FMQ_OPTION_UINT16 = 7,
    /// Added to an option's type: the option must be given (Boost's `required()`).
    FMQ_OPTION_REQUIRED = 0x100,
}

/// Option type: text.
pub const FMQ_OPTION_STRING: fmq_option_type = fmq_option_kind::FMQ_OPTION_STRING as i32;
/// Option type: signed integer (int).
pub const FMQ_OPTION_INT: fmq_option_type = fmq_option_kind::FMQ_OPTION_INT as i32;
/// Option type: unsigned 64-bit integer.
pub const FMQ_OPTION_UINT64: fmq_option_type = fmq_option_kind::FMQ_OPTION_UINT64 as i32;
/// Option type: floating point (float).
pub const FMQ_OPTION_FLOAT: fmq_option_type = fmq_option_kind::FMQ_OPTION_FLOAT as i32;
/// Option type: true/false.
pub const FMQ_OPTION_BOOL: fmq_option_type = fmq_option_kind::FMQ_OPTION_BOOL as i32;
/// Option type: a switch.
pub const FMQ_OPTION_FLAG: fmq_option_type = fmq_option_kind::FMQ_OPTION_FLAG as i32;
/// Option type: a list of texts.
pub const FMQ_OPTION_STRINGS: fmq_option_type = fmq_option_kind::FMQ_OPTION_STRINGS as i32;
/// Option type: unsigned 16-bit integer.
pub const FMQ_OPTION_UINT16: fmq_option_type = fmq_option_kind::FMQ_OPTION_UINT16 as i32;
/// Added to an option's type: the option must be given.
pub const FMQ_OPTION_REQUIRED: fmq_option_type = fmq_option_kind::FMQ_OPTION_REQUIRED as i32;

/// The option kind of an `FMQ_OPTION_*` value (without `FMQ_OPTION_REQUIRED`).
pub fn option_kind(ty: fmq_option_type) -> Option<Kind> {
    match ty {
        FMQ_OPTION_STRING => Some(Kind::Str),
        FMQ_OPTION_INT => Some(Kind::Int),
        FMQ_OPTION_UINT64 => Some(Kind::U64),
        FMQ_OPTION_FLOAT => Some(Kind::Float),
        FMQ_OPTION_BOOL => Some(Kind::Bool),
        FMQ_OPTION_FLAG => Some(Kind::Flag),
        FMQ_OPTION_STRINGS => Some(Kind::Strings),
        FMQ_OPTION_UINT16 => Some(Kind::U16),
        _ => None,
    }
}

/// An option of a C device or plugin (FairMQ's `addCustomOptions`, a plugin's program options).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct fmq_option {
    /// Name without dashes.
    pub name: *const c_char,
    /// Value type: an `fmq_option_kind` value (plus `FMQ_OPTION_REQUIRED`).
    pub ty: fmq_option_type,
    /// Default as text (NULL: no default, the option is then unset unless given).
    pub default_value: *const c_char,
    /// Help text.
    pub description: *const c_char,
}

/// Result of a plugin service. `FMQ_PLUGIN_OK` is 0; `services->last_error()` gives the text of
/// the calling thread's last error.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum fmq_plugin_result {
    /// Success.
    FMQ_PLUGIN_OK = 0,
    /// The device's current state does not accept the transition (or another one is pending).
    FMQ_PLUGIN_REFUSED = 7101,
    /// Another plugin controls the device (FairMQ's `DeviceControlError`).
    FMQ_PLUGIN_ERROR_CONTROL = 7102,
    /// No such property, or no controller.
    FMQ_PLUGIN_ERROR_NOT_FOUND = 7103,
    /// An argument was NULL, not UTF-8, or not a state, transition or value of the right type.
    FMQ_PLUGIN_ERROR_INVALID = 7104,
    /// The caller's buffer is too small (the text's length was written to `*len`).
    FMQ_PLUGIN_ERROR_BUFFER = 7105,
    /// The wait ended before what it waited for.
    FMQ_PLUGIN_ERROR_TIMEOUT = 7106,
    /// The device is in the ERROR state.
    FMQ_PLUGIN_ERROR_DEVICE = 7107,
    /// The device's code failed inside the call (the failure was stopped at the boundary).
    FMQ_PLUGIN_ERROR_PANIC = 7108,
}

/// Called for every state the device enters (before the state's work), on the thread that runs
/// the state machine, with the state's number (FairMQ's `fair::mq::State`) and the `user` given
/// at subscription. Returns 0; non-zero means it failed, and the device goes to ERROR (FairMQ's
/// rule for a subscriber that throws). Must not throw (C++), nor wait for a state (it runs on the
/// thread that would enter it).
pub type fmq_plugin_state_callback = Option<unsafe extern "C-unwind" fn(state: i32, user: *mut c_void) -> i32>;

/// What the device offers a plugin (FairMQ's `PluginServices`). Every function takes `host`
/// first. The table stays valid for the life of the process; its services work from the plugin's
/// `start` until its `stop` returns (afterwards they answer `FMQ_PLUGIN_ERROR_INVALID`); thread-safe. States and
/// transitions are FairMQ's numbers (`fair::mq::State`, `fair::mq::Transition`). Functions that
/// write text take a buffer, its capacity and `len` (may be NULL), which receives the text's
/// length without the NUL, also when the buffer was too small (`FMQ_PLUGIN_ERROR_BUFFER`).
#[repr(C)]
#[derive(Debug)]
pub struct fmq_plugin_services {
    /// `FMQ_PLUGIN_ABI_VERSION` of the device.
    pub abi_version: u32,
    /// The device's side; pass it back unchanged.
    pub host: *mut c_void,
    /// The current state's number.
    pub current_state: unsafe extern "C" fn(host: *mut c_void) -> i32,
    /// Requests a transition: `FMQ_PLUGIN_OK` when accepted, `FMQ_PLUGIN_REFUSED` when the state
    /// does not accept it, `FMQ_PLUGIN_ERROR_CONTROL` when another plugin controls the device.
    /// With nobody in control, the plugin becomes the controller.
    pub change_state: unsafe extern "C" fn(host: *mut c_void, transition: i32) -> fmq_plugin_result,
    /// Takes control of the device; `FMQ_PLUGIN_ERROR_CONTROL` when another plugin has it.
    pub take_device_control: unsafe extern "C" fn(host: *mut c_void) -> fmq_plugin_result,
    /// Takes control of the device whoever has it.
    pub steal_device_control: unsafe extern "C" fn(host: *mut c_void) -> fmq_plugin_result,
    /// Releases control (nothing happens when the plugin has none). The device does not exit
    /// while a plugin holds control: release it once the device reached EXITING.
    pub release_device_control: unsafe extern "C" fn(host: *mut c_void) -> fmq_plugin_result,
    /// The controlling plugin's name; `FMQ_PLUGIN_ERROR_NOT_FOUND` when nobody controls.
    pub device_controller:
        unsafe extern "C" fn(host: *mut c_void, buf: *mut c_char, cap: usize, len: *mut usize) -> fmq_plugin_result,
    /// Waits until no plugin controls the device (`timeout_ms` < 0: no limit).
    pub wait_for_release_device_control: unsafe extern "C" fn(host: *mut c_void, timeout_ms: i64) -> fmq_plugin_result,
    /// Waits until the device entered `state` since the plugin started (states are queued for
    /// each plugin, so none is missed); `FMQ_PLUGIN_ERROR_DEVICE` on ERROR, `..._TIMEOUT`.
    pub wait_for_state: unsafe extern "C" fn(host: *mut c_void, state: i32, timeout_ms: i64) -> fmq_plugin_result,
    /// Calls `callback(state, user)` for every state entered from now on (FairMQ's
    /// `SubscribeToDeviceStateChange`, keyed by the plugin's name).
    pub subscribe_to_state_change: unsafe extern "C" fn(
        host: *mut c_void,
        callback: fmq_plugin_state_callback,
        user: *mut c_void,
    ) -> fmq_plugin_result,
    /// Ends the plugin's state subscriptions (a callback already running may still finish).
    pub unsubscribe_from_state_change: unsafe extern "C" fn(host: *mut c_void) -> fmq_plugin_result,
    /// Whether property `key` exists.
    pub property_exists: unsafe extern "C" fn(host: *mut c_void, key: *const c_char) -> bool,
    /// Property `key` as text (lists: one item per line).
    pub get_property: unsafe extern "C" fn(
        host: *mut c_void,
        key: *const c_char,
        buf: *mut c_char,
        cap: usize,
        len: *mut usize,
    ) -> fmq_plugin_result,
    /// Sets property `key` from text, read as the type the property has (text for a new one).
    pub set_property:
        unsafe extern "C" fn(host: *mut c_void, key: *const c_char, value: *const c_char) -> fmq_plugin_result,
    /// Logs `text` through the device's logger at `severity` (0 trace, 1 debug, 2 info, 3 state,
    /// 4 warn, 5 error, 6 fatal), naming the plugin.
    pub log: unsafe extern "C" fn(host: *mut c_void, severity: i32, text: *const c_char),
    /// The text of the calling thread's last failed service call (valid until the next one).
    pub last_error: unsafe extern "C" fn() -> *const c_char,
}

/// A plugin's version (FairMQ's `tools::Version`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct fmq_plugin_version {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
}

/// Starts a plugin instance: keep `services` (valid until `stop` returns), start threads, return
/// promptly. Writes the instance pointer `stop` gets; returns 0, or non-zero when the plugin
/// cannot start (the program then exits with 1). Must not throw (C++).
pub type fmq_plugin_start =
    Option<unsafe extern "C-unwind" fn(services: *const fmq_plugin_services, instance: *mut *mut c_void) -> i32>;

/// Stops a plugin instance after the device exited and no plugin holds control: join its
/// threads and free it. Must not throw (C++).
pub type fmq_plugin_stop = Option<unsafe extern "C-unwind" fn(instance: *mut c_void)>;

/// What a plugin library exports: a function `const fmq_plugin *fmq_plugin_NAME(void)` returning
/// this (static) descriptor, for a library named `libfairmq-plugin-NAME.so` (`-P NAME`).
#[repr(C)]
#[derive(Debug)]
pub struct fmq_plugin {
    /// `FMQ_PLUGIN_ABI_VERSION` the plugin was built against.
    pub abi_version: u32,
    /// The plugin's name (the NAME of `-P NAME`).
    pub name: *const c_char,
    /// Its version.
    pub version: fmq_plugin_version,
    /// Who maintains it (e.g. "Jane Doe <jane@example.org>"); may be NULL.
    pub maintainer: *const c_char,
    /// Where to read about it; may be NULL.
    pub homepage: *const c_char,
    /// Title of its options' group in `--help` (NULL: "Plugin 'NAME'").
    pub options_title: *const c_char,
    /// Its program options (`n_options` entries; NULL with 0).
    pub options: *const fmq_option,
    /// Number of `options`.
    pub n_options: usize,
    /// Starts an instance; NULL: nothing to start.
    pub start: fmq_plugin_start,
    /// Stops it; NULL: nothing to stop.
    pub stop: fmq_plugin_stop,
}

/// The function a plugin library exports as `fmq_plugin_NAME`.
pub type fmq_plugin_entry = unsafe extern "C-unwind" fn() -> *const fmq_plugin;

/// The numbers of FairMQ's states (`fair::mq::State`), as services and callbacks pass them.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum fmq_state {
    /// UNDEFINED.
    FMQ_STATE_UNDEFINED = 0,
    /// OK.
    FMQ_STATE_OK = 1,
    /// ERROR.
    FMQ_STATE_ERROR = 2,
    /// IDLE.
    FMQ_STATE_IDLE = 3,
    /// INITIALIZING DEVICE.
    FMQ_STATE_INITIALIZING_DEVICE = 4,
    /// INITIALIZED.
    FMQ_STATE_INITIALIZED = 5,
    /// BINDING.
    FMQ_STATE_BINDING = 6,
    /// BOUND.
    FMQ_STATE_BOUND = 7,
    /// CONNECTING.
    FMQ_STATE_CONNECTING = 8,
    /// DEVICE READY.
    FMQ_STATE_DEVICE_READY = 9,
    /// INITIALIZING TASK.
    FMQ_STATE_INITIALIZING_TASK = 10,
    /// READY.
    FMQ_STATE_READY = 11,
    /// RUNNING.
    FMQ_STATE_RUNNING = 12,
    /// RESETTING TASK.
    FMQ_STATE_RESETTING_TASK = 13,
    /// RESETTING DEVICE.
    FMQ_STATE_RESETTING_DEVICE = 14,
    /// EXITING.
    FMQ_STATE_EXITING = 15,
}

/// The numbers of FairMQ's transitions (`fair::mq::Transition`).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum fmq_transition {
    /// AUTO.
    FMQ_TRANSITION_AUTO = 0,
    /// INIT DEVICE.
    FMQ_TRANSITION_INIT_DEVICE = 1,
    /// COMPLETE INIT.
    FMQ_TRANSITION_COMPLETE_INIT = 2,
    /// BIND.
    FMQ_TRANSITION_BIND = 3,
    /// CONNECT.
    FMQ_TRANSITION_CONNECT = 4,
    /// INIT TASK.
    FMQ_TRANSITION_INIT_TASK = 5,
    /// RUN.
    FMQ_TRANSITION_RUN = 6,
    /// STOP.
    FMQ_TRANSITION_STOP = 7,
    /// RESET TASK.
    FMQ_TRANSITION_RESET_TASK = 8,
    /// RESET DEVICE.
    FMQ_TRANSITION_RESET_DEVICE = 9,
    /// END.
    FMQ_TRANSITION_END = 10,
    /// ERROR FOUND.
    FMQ_TRANSITION_ERROR_FOUND = 11,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{State, Transition};

    #[test]
    fn the_headers_state_and_transition_numbers_are_fairmqs() {
        let states = [
            fmq_state::FMQ_STATE_UNDEFINED,
            fmq_state::FMQ_STATE_OK,
            fmq_state::FMQ_STATE_ERROR,
            fmq_state::FMQ_STATE_IDLE,
            fmq_state::FMQ_STATE_INITIALIZING_DEVICE,
            fmq_state::FMQ_STATE_INITIALIZED,
            fmq_state::FMQ_STATE_BINDING,
            fmq_state::FMQ_STATE_BOUND,
            fmq_state::FMQ_STATE_CONNECTING,
            fmq_state::FMQ_STATE_DEVICE_READY,
            fmq_state::FMQ_STATE_INITIALIZING_TASK,
            fmq_state::FMQ_STATE_READY,
            fmq_state::FMQ_STATE_RUNNING,
            fmq_state::FMQ_STATE_RESETTING_TASK,
            fmq_state::FMQ_STATE_RESETTING_DEVICE,
            fmq_state::FMQ_STATE_EXITING,
        ];
        for (c, s) in states.iter().zip(State::ALL) {
            assert_eq!(*c as i32, s as i32, "{s}");
            assert_eq!(format!("{c:?}"), format!("FMQ_STATE_{}", s.to_string().replace(' ', "_")));
        }
        let transitions = [
            fmq_transition::FMQ_TRANSITION_AUTO,
            fmq_transition::FMQ_TRANSITION_INIT_DEVICE,
            fmq_transition::FMQ_TRANSITION_COMPLETE_INIT,
            fmq_transition::FMQ_TRANSITION_BIND,
            fmq_transition::FMQ_TRANSITION_CONNECT,
            fmq_transition::FMQ_TRANSITION_INIT_TASK,
            fmq_transition::FMQ_TRANSITION_RUN,
            fmq_transition::FMQ_TRANSITION_STOP,
            fmq_transition::FMQ_TRANSITION_RESET_TASK,
            fmq_transition::FMQ_TRANSITION_RESET_DEVICE,
            fmq_transition::FMQ_TRANSITION_END,
            fmq_transition::FMQ_TRANSITION_ERROR_FOUND,
        ];
        for (c, t) in transitions.iter().zip(Transition::ALL) {
            assert_eq!(*c as i32, t as i32, "{t}");
            assert_eq!(format!("{c:?}"), format!("FMQ_TRANSITION_{}", t.name().replace(' ', "_")));
        }
    }
}
