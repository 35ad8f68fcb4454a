//! Plugin libraries written in Rust: the plugin side of the C ABI. A `cdylib` crate implements
//! [`LibraryPlugin`] and exports it with [`export_plugin!`](crate::export_plugin); the device
//! that loads it (Rust, or C++ through `libfairmq_rs`) reaches it only through the ABI, so the
//! plugin may be built with another compiler version than the device.

use super::c_abi::*;
use crate::state::{State, Transition};
use crate::BoxError;
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

/// A plugin in a library. The device starts the plugin with the device's services. The device
/// stops the plugin after the device exited and no plugin holds control.
pub trait LibraryPlugin: Send + Sized + 'static {
    /// Starts the plugin. Spawn threads here and return promptly. An error ends the program with
    /// exit code 1 before the device starts.
    fn start(services: LibraryServices) -> Result<Self, BoxError>;
    /// Stops the plugin. Join threads here. The plugin is dropped afterwards.
    fn stop(&mut self) {}
}

/// A failed service call: its code and the device's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} ({code:?})")]
pub struct ServiceError {
    /// The result code.
    pub code: fmq_plugin_result,
    /// What the device said.
    pub message: String,
}

/// The device's services as a plugin library sees them, through the `fmq_plugin_services` table.
#[derive(Debug, Clone, Copy)]
pub struct LibraryServices {
    table: &'static fmq_plugin_services,
}

// SAFETY: the ABI states that the table is thread-safe and never freed (its services refuse calls
// once the plugin stopped).
unsafe impl Send for LibraryServices {}
// SAFETY: as above.
unsafe impl Sync for LibraryServices {}

impl LibraryServices {
    fn check(&self, code: fmq_plugin_result) -> Result<(), ServiceError> {
        if code == fmq_plugin_result::FMQ_PLUGIN_OK {
            return Ok(());
        }
        // SAFETY: `last_error` returns NULL or a NUL-terminated string of the calling thread. The
        // string is valid until the thread's next failing call, and it is copied at once.
        let text = unsafe { (self.table.last_error)() };
        let message = if text.is_null() {
            String::new()
        } else {
            // SAFETY: as above.
            unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
        };
        Err(ServiceError { code, message })
    }

    /// The device's current state.
    pub fn current_state(&self) -> State {
        // SAFETY: a call through the device's table with its host pointer.
        let n = unsafe { (self.table.current_state)(self.table.host) };
        State::ALL.iter().copied().find(|s| *s as i32 == n).unwrap_or(State::Undefined)
    }

    /// Requests transition `t`. Returns `Ok(false)` when the current state does not accept `t`,
    /// and an error when another plugin controls the device.
    pub fn change_state(&self, t: Transition) -> Result<bool, ServiceError> {
        // SAFETY: as in current_state.
        match unsafe { (self.table.change_state)(self.table.host, t as i32) } {
            fmq_plugin_result::FMQ_PLUGIN_REFUSED => Ok(false),
            code => self.check(code).map(|()| true),
        }
    }

    /// Takes control of the device.
    pub fn take_device_control(&self) -> Result<(), ServiceError> {
        // SAFETY: as in current_state.
        self.check(unsafe { (self.table.take_device_control)(self.table.host) })
    }

    /// Takes control of the device, whoever has it.
    pub fn steal_device_control(&self) -> Result<(), ServiceError> {
        // SAFETY: as in current_state.
        self.check(unsafe { (self.table.steal_device_control)(self.table.host) })
    }

    /// Releases control, if this plugin has it.
    pub fn release_device_control(&self) -> Result<(), ServiceError> {
        // SAFETY: as in current_state.
        self.check(unsafe { (self.table.release_device_control)(self.table.host) })
    }

    /// The name of the plugin that controls the device, if any.
    pub fn device_controller(&self) -> Result<Option<String>, ServiceError> {
        self.read_text(|buf, cap, len| {
            // SAFETY: as in `current_state`, with the buffer and length slot that `read_text`
            // gives.
            unsafe { (self.table.device_controller)(self.table.host, buf, cap, len) }
        })
    }

    /// Reads the text that the service `read` writes into a buffer. The buffer grows while the
    /// device says it is too small. Returns `None` for `FMQ_PLUGIN_ERROR_NOT_FOUND`. A length
    /// beyond the buffer is refused, not trusted.
    fn read_text(
        &self,
        read: impl Fn(*mut c_char, usize, &mut usize) -> fmq_plugin_result,
    ) -> Result<Option<String>, ServiceError> {
        let mut buf = vec![0u8; 256];
        loop {
            let mut len = 0usize;
            match read(buf.as_mut_ptr().cast(), buf.len(), &mut len) {
                fmq_plugin_result::FMQ_PLUGIN_ERROR_NOT_FOUND => return Ok(None),
                fmq_plugin_result::FMQ_PLUGIN_ERROR_BUFFER if len >= buf.len() && len < MAX_TEXT => {
                    buf.resize(len + 1, 0)
                }
                code => {
                    self.check(code)?;
                    let text = buf.get(..len).ok_or_else(|| ServiceError {
                        code: fmq_plugin_result::FMQ_PLUGIN_ERROR_INVALID,
                        message: format!("the device wrote {len} bytes into a buffer of {}", buf.len()),
                    })?;
                    return Ok(Some(String::from_utf8_lossy(text).into_owned()));
                }
            }
        }
    }

    /// Waits until the device has entered `s` since the plugin started. Returns `Ok(false)` on
    /// timeout.
    pub fn wait_for_state(&self, s: State, timeout: Option<Duration>) -> Result<bool, ServiceError> {
        let ms = timeout.map_or(-1, |t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX));
        // SAFETY: as in current_state.
        match unsafe { (self.table.wait_for_state)(self.table.host, s as i32, ms) } {
            fmq_plugin_result::FMQ_PLUGIN_ERROR_TIMEOUT => Ok(false),
            code => self.check(code).map(|()| true),
        }
    }

    /// Calls `f` for every state that the device enters from now on. `f` runs on the state
    /// machine's thread. A panic in `f` takes the device to ERROR. The closure lives as long as
    /// the process, because a call may still start after unsubscribing.
    pub fn subscribe_to_state_change(&self, f: impl Fn(State) + Send + Sync + 'static) -> Result<(), ServiceError> {
        let boxed: &'static StateFn = Box::leak(Box::new(Box::new(f) as StateFn));
        let user = (boxed as *const StateFn).cast_mut().cast::<c_void>();
        // SAFETY: as in `current_state`; `user` points to a closure that is never freed.
        self.check(unsafe { (self.table.subscribe_to_state_change)(self.table.host, Some(state_trampoline), user) })
    }

    /// Ends the plugin's state subscriptions.
    pub fn unsubscribe_from_state_change(&self) -> Result<(), ServiceError> {
        // SAFETY: as in current_state.
        self.check(unsafe { (self.table.unsubscribe_from_state_change)(self.table.host) })
    }

    /// Reads property `key` as text. A list has one item per line. Returns `None` if there is no
    /// such property.
    pub fn property(&self, key: &str) -> Result<Option<String>, ServiceError> {
        let key = c_string(key)?;
        self.read_text(|buf, cap, len| {
            // SAFETY: as in `current_state`, with a NUL-terminated key and the buffer and length
            // slot that `read_text` gives.
            unsafe { (self.table.get_property)(self.table.host, key.as_ptr(), buf, cap, len) }
        })
    }

    /// Sets property `key` from the text `value`. The device reads the text as the property's
    /// type.
    pub fn set_property(&self, key: &str, value: &str) -> Result<(), ServiceError> {
        let (key, value) = (c_string(key)?, c_string(value)?);
        // SAFETY: as in `current_state`, with NUL-terminated strings.
        self.check(unsafe { (self.table.set_property)(self.table.host, key.as_ptr(), value.as_ptr()) })
    }

    /// Logs `text` at `level` through the device's logger.
    pub fn log(&self, level: log::Level, text: &str) {
        let severity = match level {
            log::Level::Trace => 0,
            log::Level::Debug => 1,
            log::Level::Info => 2,
            log::Level::Warn => 4,
            log::Level::Error => 5,
        };
        if let Ok(t) = CString::new(text.replace('\0', " ")) {
            // SAFETY: as in `current_state`, with a NUL-terminated text.
            unsafe { (self.table.log)(self.table.host, severity, t.as_ptr()) };
        }
    }
}

fn c_string(s: &str) -> Result<CString, ServiceError> {
    CString::new(s).map_err(|_| ServiceError {
        code: fmq_plugin_result::FMQ_PLUGIN_ERROR_INVALID,
        message: format!("'{}' holds a NUL byte", s.escape_debug()),
    })
}

type StateFn = Box<dyn Fn(State) + Send + Sync>;

/// The longest text that is read from the device, such as a property or a name.
const MAX_TEXT: usize = 64 << 20;

unsafe extern "C-unwind" fn state_trampoline(state: i32, user: *mut c_void) -> i32 {
    // SAFETY: `user` is the leaked closure that `subscribe_to_state_change` registered with this
    // trampoline. The closure is never freed.
    let f = unsafe { &*user.cast::<StateFn>() };
    match State::ALL.iter().copied().find(|s| *s as i32 == state) {
        // A panic must not unwind into the device, so it is stopped here. The trampoline then
        // tells the device that the callback failed, and the device goes to ERROR.
        Some(s) => i32::from(catch_unwind(AssertUnwindSafe(|| f(s))).is_err()),
        None => 0,
    }
}

/// A plugin descriptor that may live in a `static`, because its pointers point to static data.
#[repr(transparent)]
#[derive(Debug)]
pub struct Descriptor(pub fmq_plugin);

// SAFETY: every pointer of the descriptor points to static, immutable data.
unsafe impl Sync for Descriptor {}

/// Starts `P` for the device. This is the `start` function of an exported descriptor.
///
/// # Safety
/// The device calls it as the ABI states: `services` is never freed, and `instance` is writable.
pub unsafe extern "C-unwind" fn start<P: LibraryPlugin>(
    services: *const fmq_plugin_services,
    instance: *mut *mut c_void,
) -> i32 {
    // SAFETY: per contract, the table is never freed.
    let Some(table) = (unsafe { services.as_ref::<'static>() }) else { return 1 };
    if instance.is_null() || table.abi_version != FMQ_PLUGIN_ABI_VERSION {
        return 1;
    }
    let services = LibraryServices { table };
    match catch_unwind(AssertUnwindSafe(|| P::start(services))) {
        Ok(Ok(p)) => {
            // SAFETY: `instance` is writable per contract; the box is freed by `stop`.
            unsafe { *instance = Box::into_raw(Box::new(p)).cast() };
            0
        }
        Ok(Err(e)) => {
            services.log(log::Level::Error, &format!("the plugin could not start: {e}"));
            1
        }
        Err(_) => 2,
    }
}

/// Stops and frees `P`. This is the `stop` function of an exported descriptor.
///
/// # Safety
/// `instance` is the pointer that `start::<P>` wrote, and it is stopped only once.
pub unsafe extern "C-unwind" fn stop<P: LibraryPlugin>(instance: *mut c_void) {
    if instance.is_null() {
        return;
    }
    // SAFETY: per contract, `instance` is the box that `start::<P>` made. It is freed only once,
    // here.
    let mut p = unsafe { Box::from_raw(instance.cast::<P>()) };
    let _ = catch_unwind(AssertUnwindSafe(move || {
        p.stop();
        drop(p);
    }));
}

/// Exports a [`LibraryPlugin`] from a `cdylib` as plugin `name`.
///
/// The library must be named `libfairmq-plugin-<name>.so`. The exported symbol is
/// `fmq_plugin_<name>`; pass that name as `symbol`. Each option is a tuple of (name,
/// `FMQ_OPTION_*` type, default or `c""` for none, help text):
///
/// ```no_run
/// use fairmq::plugin::c_abi::FMQ_OPTION_STRING;
/// use fairmq::plugin::export::{LibraryPlugin, LibraryServices};
///
/// struct Rusty;
///
/// impl LibraryPlugin for Rusty {
///     fn start(services: LibraryServices) -> Result<Self, fairmq::BoxError> {
///         services.log(log::Level::Info, "started");
///         Ok(Rusty)
///     }
/// }
///
/// fairmq::export_plugin!(fmq_plugin_rusty, Rusty, name: c"rusty", version: (1, 0, 0),
///     maintainer: c"Jane Doe <jane@example.org>", homepage: c"https://example.org",
///     options: c"Rusty Plugin", [(c"rusty-log", FMQ_OPTION_STRING, c"", c"where to log")]);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! export_plugin {
    ($symbol:ident, $ty:ty, name: $name:expr, version: ($major:expr, $minor:expr, $patch:expr),
     maintainer: $maintainer:expr, homepage: $homepage:expr,
     options: $title:expr, [$(($oname:expr, $oty:expr, $odefault:expr, $odesc:expr)),* $(,)?]) => {
        /// The descriptor of this library's plugin.
        #[no_mangle]
        pub extern "C" fn $symbol() -> *const $crate::plugin::c_abi::fmq_plugin {
            use $crate::plugin::c_abi as abi;
            static OPTIONS: $crate::plugin::export::Options<{ [$($oname),*].len() }> =
                $crate::plugin::export::Options([$(abi::fmq_option {
                    name: $crate::plugin::export::c_str($oname),
                    ty: $oty,
                    default_value: $crate::plugin::export::c_str_or_null($odefault),
                    description: $crate::plugin::export::c_str($odesc),
                }),*]);
            static DESCRIPTOR: $crate::plugin::export::Descriptor = $crate::plugin::export::Descriptor(abi::fmq_plugin {
                abi_version: abi::FMQ_PLUGIN_ABI_VERSION,
                name: $crate::plugin::export::c_str($name),
                version: abi::fmq_plugin_version { major: $major, minor: $minor, patch: $patch },
                maintainer: $crate::plugin::export::c_str($maintainer),
                homepage: $crate::plugin::export::c_str($homepage),
                options_title: $crate::plugin::export::c_str($title),
                options: OPTIONS.0.as_ptr(),
                n_options: OPTIONS.0.len(),
                start: Some($crate::plugin::export::start::<$ty>),
                stop: Some($crate::plugin::export::stop::<$ty>),
            });
            &DESCRIPTOR.0
        }
    };
}

/// An option table that may live in a `static` (see [`Descriptor`]).
#[derive(Debug)]
pub struct Options<const N: usize>(pub [fmq_option; N]);

// SAFETY: the options' pointers point to static C strings.
unsafe impl<const N: usize> Sync for Options<N> {}

/// The pointer of a static C string, for descriptors built in constants.
pub const fn c_str(s: &'static CStr) -> *const c_char {
    s.as_ptr()
}

/// Like [`c_str`], but returns NULL for an empty string. NULL marks an option without default.
pub const fn c_str_or_null(s: &'static CStr) -> *const c_char {
    if s.to_bytes().is_empty() {
        std::ptr::null()
    } else {
        s.as_ptr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn state(_: *mut c_void) -> i32 {
        State::Idle as i32
    }
    unsafe extern "C" fn host_only(_: *mut c_void) -> fmq_plugin_result {
        fmq_plugin_result::FMQ_PLUGIN_OK
    }
    unsafe extern "C" fn transition(_: *mut c_void, _: i32) -> fmq_plugin_result {
        fmq_plugin_result::FMQ_PLUGIN_OK
    }
    unsafe extern "C" fn wait(_: *mut c_void, _: i64) -> fmq_plugin_result {
        fmq_plugin_result::FMQ_PLUGIN_OK
    }
    unsafe extern "C" fn wait_state(_: *mut c_void, _: i32, _: i64) -> fmq_plugin_result {
        fmq_plugin_result::FMQ_PLUGIN_OK
    }
    unsafe extern "C" fn subscribe(_: *mut c_void, _: fmq_plugin_state_callback, _: *mut c_void) -> fmq_plugin_result {
        fmq_plugin_result::FMQ_PLUGIN_OK
    }
    unsafe extern "C" fn exists(_: *mut c_void, _: *const c_char) -> bool {
        true
    }
    unsafe extern "C" fn set(_: *mut c_void, _: *const c_char, _: *const c_char) -> fmq_plugin_result {
        fmq_plugin_result::FMQ_PLUGIN_OK
    }
    unsafe extern "C" fn log_it(_: *mut c_void, _: i32, _: *const c_char) {}
    unsafe extern "C" fn last_error() -> *const c_char {
        c"".as_ptr()
    }
    /// A device that claims to have written 1000 bytes into any buffer.
    unsafe extern "C" fn lying_name(_: *mut c_void, _: *mut c_char, _: usize, len: *mut usize) -> fmq_plugin_result {
        // SAFETY: `read_text` passes a valid length slot.
        unsafe { *len = 1000 };
        fmq_plugin_result::FMQ_PLUGIN_OK
    }
    unsafe extern "C" fn lying_property(
        h: *mut c_void,
        _: *const c_char,
        buf: *mut c_char,
        cap: usize,
        len: *mut usize,
    ) -> fmq_plugin_result {
        // SAFETY: as in `lying_name`.
        unsafe { lying_name(h, buf, cap, len) }
    }

    #[test]
    fn a_length_beyond_the_buffer_from_the_device_is_an_error_not_a_read_out_of_bounds() {
        let table = Box::leak(Box::new(fmq_plugin_services {
            abi_version: FMQ_PLUGIN_ABI_VERSION,
            host: std::ptr::null_mut(),
            current_state: state,
            change_state: transition,
            take_device_control: host_only,
            steal_device_control: host_only,
            release_device_control: host_only,
            device_controller: lying_name,
            wait_for_release_device_control: wait,
            wait_for_state: wait_state,
            subscribe_to_state_change: subscribe,
            unsubscribe_from_state_change: host_only,
            property_exists: exists,
            get_property: lying_property,
            set_property: set,
            log: log_it,
            last_error,
        }));
        let services = LibraryServices { table };
        for e in [services.device_controller().unwrap_err(), services.property("id").unwrap_err()] {
            assert_eq!(e.code, fmq_plugin_result::FMQ_PLUGIN_ERROR_INVALID, "{e}");
            assert_eq!(e.message, "the device wrote 1000 bytes into a buffer of 256");
        }
    }
}
