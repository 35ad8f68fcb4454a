//! Plugins from shared libraries: loading a library, reading its descriptor, and the device's
//! side of [`fmq_plugin_services`].
//!
//! This module is the device's side of the plugins' C ABI, so it holds unsafe code. (The only
//! other modules with unsafe code are `export`, the plugin's side of the same ABI, and the
//! `pmix` plugin's binding to libpmix.) Nothing a plugin hands over is trusted beyond what the
//! ABI states. Strings are checked for NULL and UTF-8, and numbers for their range. Every service
//! call stops panics at the boundary.

use super::c_abi::*;
use super::{Plugin, PluginServices, Version};
use crate::logging::Severity;
use crate::options::{Kind, OptionGroup};
use crate::properties::{Properties, Value};
use crate::state::{State, Transition};
use crate::BoxError;
use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

/// An option that a C option table declares, after `read_option_table` checked it: its name,
/// kind, default, description, and whether it must be given. The default is a value of the kind.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionDecl {
    /// Name without dashes.
    pub name: String,
    /// Value kind.
    pub kind: Kind,
    /// The default as text: a value of `kind`. A list's default holds one item per line.
    pub default: Option<String>,
    /// Help text.
    pub description: String,
    /// Whether the option must be given.
    pub required: bool,
}

/// Why an option table was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionTableError {
    /// A pointer that must not be NULL was NULL.
    #[error("{0} is NULL")]
    Null(&'static str),
    /// A name, type or default was refused.
    #[error("{0}")]
    Invalid(String),
}

/// Reads and checks `n` entries of an `fmq_option` table.
///
/// # Safety
/// `options` is NULL or points to `n` entries. When `options` is NULL, `n` must be 0, or the table
/// is refused. Each string of an entry is NULL or NUL-terminated. The entries and their strings
/// are valid for the duration of the call.
// SAFETY: unsafe to call because it reads through the caller's pointers (contract above).
pub unsafe fn read_option_table(options: *const fmq_option, n: usize) -> Result<Vec<OptionDecl>, OptionTableError> {
    if options.is_null() {
        return if n == 0 { Ok(Vec::new()) } else { Err(OptionTableError::Null("options")) };
    }
    let mut decls = Vec::with_capacity(n.min(1024));
    for i in 0..n {
        // SAFETY: `options` points to `n` entries (contract above).
        let o = unsafe { &*options.add(i) };
        // SAFETY: the entry's strings are NULL or NUL-terminated and valid (contract above).
        let text = |p: *const c_char, what| unsafe { c_text(p) }.map_err(|e| invalid_text(e, what));
        let name = text(o.name, "option name")?.ok_or(OptionTableError::Null("option name"))?;
        let required = o.ty & FMQ_OPTION_REQUIRED != 0;
        let kind = option_kind(o.ty & !FMQ_OPTION_REQUIRED)
            .ok_or_else(|| OptionTableError::Invalid(format!("option '{name}': unknown type {}", o.ty)))?;
        let default = text(o.default_value, "option default")?;
        if let Some(d) = default.as_deref().filter(|d| kind != Kind::Strings && kind.parse(d).is_none()) {
            return Err(OptionTableError::Invalid(format!("option '{name}': default '{d}' is not of its type")));
        }
        let description = text(o.description, "option description")?.unwrap_or_default();
        decls.push(OptionDecl { name, kind, default, description, required });
    }
    Ok(decls)
}

/// Adds checked option declarations to a group.
pub fn add_options(g: &mut OptionGroup, decls: &[OptionDecl]) {
    for d in decls {
        // `read_option_table` checked the defaults, so `None` here means that no default was given.
        // A list's default holds one item per line.
        let default = d.default.as_deref().and_then(|t| match d.kind {
            Kind::Strings => Some(Value::Strings(t.lines().map(str::to_owned).collect())),
            kind => kind.parse(t),
        });
        match (default, d.required) {
            // A default satisfies `required()` (as in Boost).
            (Some(v), true) => g.add(&d.name, d.kind, v, &d.description),
            (None, true) => g.add_required(&d.name, d.kind, &d.description),
            (Some(v), false) => g.add(&d.name, d.kind, v, &d.description),
            (None, false) => g.add_optional(&d.name, d.kind, &d.description),
        };
    }
}

fn invalid_text(e: std::str::Utf8Error, what: &str) -> OptionTableError {
    OptionTableError::Invalid(format!("{what} is not UTF-8 ({e})"))
}

/// Copies a C string into an owned `String`. Returns `None` for NULL.
///
/// # Safety
/// `p` is NULL or NUL-terminated and valid for the call.
// SAFETY: unsafe to call because it reads through `p` (contract above).
unsafe fn c_text(p: *const c_char) -> Result<Option<String>, std::str::Utf8Error> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL and NUL-terminated per contract.
    Ok(Some(unsafe { CStr::from_ptr(p) }.to_str()?.to_owned()))
}

/// An opened shared library.
///
/// If the library's plugin is refused, dropping the `Library` closes the library again. Once the
/// plugin is accepted, the library stays loaded for the life of the process, because the plugin's
/// threads and callbacks may outlive every handle.
struct Library(*mut c_void);

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: `self.0` is a handle that dlopen gave, and it is closed only once. Of a refused
        // library, only the entry function was called, and that call has returned.
        unsafe { libc::dlclose(self.0) };
    }
}

/// Returns the text of the last `dlerror`.
fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string. The string is valid until the next
    // dl* call on this thread, and it is copied at once.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: as above.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

impl Library {
    /// Opens the library at `path`. `path` is a path, or a bare file name that the system looks
    /// up. `None` opens the running program itself, which holds the prelinked plugins.
    fn open(path: Option<&str>) -> Result<Library, String> {
        let c = path.map(CString::new).transpose().map_err(|_| "the path holds a NUL byte".to_owned())?;
        let p = c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
        // SAFETY: `p` is NULL or a NUL-terminated path. Loading runs the library's initialisers,
        // so loading a plugin means trusting its code, as with any FairMQ plugin.
        let handle = unsafe { libc::dlopen(p, libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if handle.is_null() {
            Err(dl_error())
        } else {
            Ok(Library(handle))
        }
    }

    /// Returns the descriptor that the library exports as `fmq_plugin_<name>`. The descriptor is
    /// valid while the library is open.
    fn descriptor(&self, name: &str) -> Result<&fmq_plugin, String> {
        let symbol = format!("fmq_plugin_{name}");
        let c = CString::new(symbol.clone()).map_err(|_| "the name holds a NUL byte".to_owned())?;
        // SAFETY: a live handle and a NUL-terminated name.
        let f = unsafe { libc::dlsym(self.0, c.as_ptr()) };
        if f.is_null() {
            return Err(format!(
                "no symbol {symbol} (fairmq-rs loads plugins built against include/fairmq_rs.h; a C++ FairMQ plugin exports make_{name}_plugin instead)"
            ));
        }
        // SAFETY: the symbol is the plugin's entry, of type `fmq_plugin_entry` per the ABI.
        let entry: fmq_plugin_entry = unsafe { std::mem::transmute::<*mut c_void, fmq_plugin_entry>(f) };
        // SAFETY: the entry takes no arguments and returns the plugin's static descriptor. The
        // entry is declared "C-unwind", so an exception from it is caught here and is not
        // undefined behaviour.
        let d = catch_unwind(|| unsafe { entry() }).map_err(|_| format!("{symbol} threw an exception"))?;
        // SAFETY: `d` is NULL or the library's static descriptor. The descriptor is valid while
        // the library is open, and the borrow of `self` keeps the library open.
        unsafe { d.as_ref() }.ok_or_else(|| format!("{symbol} returned NULL"))
    }
}

/// A plugin from a library: its descriptor (read and checked) and its running instance.
pub(super) struct DynamicPlugin {
    descriptor: &'static fmq_plugin,
    name: String,
    maintainer: String,
    homepage: String,
    options: Option<OptionGroup>,
    running: Option<Running>,
}

/// A started plugin instance and the device's side of its services table.
///
/// The table and the `Host` are never freed, because a plugin thread may call a service after the
/// plugin's stop. After the stop, the `Host` is emptied, and every service answers
/// `FMQ_PLUGIN_ERROR_INVALID`.
struct Running {
    instance: *mut c_void,
    host: &'static Host,
}

// SAFETY: the program starts and stops a plugin instance from its main thread, but the program
// may move its plugins between threads. The ABI requires plugins to be thread-safe.
unsafe impl Send for DynamicPlugin {}

impl DynamicPlugin {
    /// Loads plugin `name` from the library at `path` (`None`: the running program).
    pub(super) fn load(name: &str, path: Option<&str>) -> Result<DynamicPlugin, String> {
        let lib = Library::open(path)?;
        let descriptor = lib.descriptor(name)?;
        if descriptor.abi_version != FMQ_PLUGIN_ABI_VERSION {
            return Err(format!(
                "built for plugin ABI {} while this program has {FMQ_PLUGIN_ABI_VERSION}",
                descriptor.abi_version
            ));
        }
        // SAFETY: the descriptor's strings are NULL or NUL-terminated and static, per the ABI.
        let text = |p, what: &str| unsafe { c_text(p) }.map_err(|e| format!("{what} is not UTF-8 ({e})"));
        let declared = text(descriptor.name, "its name")?.unwrap_or_default();
        if declared != name {
            return Err(format!("fmq_plugin_{name} describes a plugin named '{declared}'"));
        }
        let maintainer = text(descriptor.maintainer, "its maintainer")?.unwrap_or_default();
        let homepage = text(descriptor.homepage, "its homepage")?.unwrap_or_default();
        let title = text(descriptor.options_title, "its options title")?.unwrap_or_else(|| format!("Plugin '{name}'"));
        // SAFETY: per the ABI, `options` is a static table of `n_options` entries.
        let decls =
            unsafe { read_option_table(descriptor.options, descriptor.n_options) }.map_err(|e| e.to_string())?;
        let options = (!decls.is_empty()).then(|| {
            let mut g = OptionGroup::new(&title);
            add_options(&mut g, &decls);
            g
        });
        // The plugin is accepted, so the library stays loaded for the life of the process.
        let descriptor: *const fmq_plugin = descriptor;
        std::mem::forget(lib);
        // SAFETY: the library is never closed now (its handle was forgotten above), so its static
        // descriptor lives as long as the process.
        let descriptor: &'static fmq_plugin = unsafe { &*descriptor };
        Ok(DynamicPlugin { descriptor, name: name.to_owned(), maintainer, homepage, options, running: None })
    }
}

impl Plugin for DynamicPlugin {
    fn name(&self) -> &str {
        &self.name
    }
    fn version(&self) -> Version {
        self.descriptor.version
    }
    fn maintainer(&self) -> &str {
        &self.maintainer
    }
    fn homepage(&self) -> &str {
        &self.homepage
    }
    fn options(&self) -> Option<OptionGroup> {
        self.options.clone()
    }
    fn start(&mut self, services: PluginServices) -> Result<(), BoxError> {
        let Some(start) = self.descriptor.start else { return Ok(()) };
        let host: &'static Host =
            Box::leak(Box::new(Host { services: parking_lot::Mutex::new(Some(services)), name: self.name.clone() }));
        let table: &'static fmq_plugin_services = Box::leak(Box::new(services_table(host)));
        let mut instance = std::ptr::null_mut();
        // SAFETY: this calls the plugin's start with a table that is never freed and with a
        // place for the instance pointer.
        let rc = catch_unwind(AssertUnwindSafe(|| unsafe { start(table, &mut instance) }));
        match rc {
            Ok(0) => {
                self.running = Some(Running { instance, host });
                Ok(())
            }
            Ok(rc) => {
                host.services.lock().take();
                Err(format!("its start returned {rc}").into())
            }
            Err(_) => {
                host.services.lock().take();
                Err("its start threw an exception".into())
            }
        }
    }
    fn stop(&mut self) {
        let Some(r) = self.running.take() else { return };
        if let Some(stop) = self.descriptor.stop {
            // SAFETY: `r.instance` is the instance that the plugin's start gave, and it is
            // stopped only once. The table is never freed.
            if catch_unwind(AssertUnwindSafe(|| unsafe { stop(r.instance) })).is_err() {
                log::error!("plugin '{}': its stop threw an exception", self.name);
            }
        }
        if let Some(s) = r.host.services.lock().take() {
            s.unsubscribe_from_state_change();
        }
    }
}

impl Drop for DynamicPlugin {
    fn drop(&mut self) {
        // The plugin is dropped without `stop` because a panic is unwinding. The plugin's
        // services end here.
        if let Some(r) = self.running.take() {
            r.host.services.lock().take();
        }
    }
}

/// The device's side of one plugin's services table. It holds the plugin's services until the
/// plugin stops.
struct Host {
    services: parking_lot::Mutex<Option<PluginServices>>,
    name: String,
}

/// What a service call works with: the plugin's services and its name.
struct Served {
    services: PluginServices,
    name: String,
}

fn services_table(host: &'static Host) -> fmq_plugin_services {
    fmq_plugin_services {
        abi_version: FMQ_PLUGIN_ABI_VERSION,
        host: (host as *const Host).cast_mut().cast(),
        current_state: svc_current_state,
        change_state: svc_change_state,
        take_device_control: svc_take_control,
        steal_device_control: svc_steal_control,
        release_device_control: svc_release_control,
        device_controller: svc_controller,
        wait_for_release_device_control: svc_wait_for_release,
        wait_for_state: svc_wait_for_state,
        subscribe_to_state_change: svc_subscribe,
        unsubscribe_from_state_change: svc_unsubscribe,
        property_exists: svc_property_exists,
        get_property: svc_get_property,
        set_property: svc_set_property,
        log: svc_log,
        last_error: svc_last_error,
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `text` as the calling thread's last error and returns `code`.
fn fail(code: fmq_plugin_result, text: impl Into<String>) -> fmq_plugin_result {
    let text = CString::new(text.into().replace('\0', " ")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|l| *l.borrow_mut() = text);
    code
}

/// Runs the service `f` with the `Host` behind `host`, and stops panics at the boundary.
///
/// # Safety
/// `host` is the `host` pointer of a services table that the device gave. It is valid until the
/// plugin's stop returns.
// SAFETY: unsafe to call because `host` is dereferenced (contract above).
unsafe fn serve(host: *mut c_void, f: impl FnOnce(&Served) -> fmq_plugin_result) -> fmq_plugin_result {
    // SAFETY: per contract, `host` points to the `Host` of the table, which is never freed.
    let Some(h) = (unsafe { host.cast::<Host>().as_ref() }) else {
        return fail(fmq_plugin_result::FMQ_PLUGIN_ERROR_INVALID, "host is NULL");
    };
    // Clone the services: a long call, such as a wait, must not hold the lock that `stop` takes.
    let Some(services) = h.services.lock().clone() else {
        return fail(fmq_plugin_result::FMQ_PLUGIN_ERROR_INVALID, "the plugin was stopped");
    };
    let served = Served { services, name: h.name.clone() };
    catch_unwind(AssertUnwindSafe(|| f(&served)))
        .unwrap_or_else(|_| fail(fmq_plugin_result::FMQ_PLUGIN_ERROR_PANIC, "the device failed inside the call"))
}

/// Reads the string argument `p`. `what` names the argument in errors.
///
/// # Safety
/// `p` is NULL or NUL-terminated and valid for the call.
// SAFETY: unsafe to call because it reads through `p` (contract above).
unsafe fn arg<'a>(p: *const c_char, what: &str) -> Result<&'a str, fmq_plugin_result> {
    if p.is_null() {
        return Err(fail(fmq_plugin_result::FMQ_PLUGIN_ERROR_INVALID, format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated per contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|e| fail(fmq_plugin_result::FMQ_PLUGIN_ERROR_INVALID, format!("{what} is not UTF-8 ({e})")))
}

/// Copies `text` and a terminating NUL into `buf`, which holds `cap` bytes. Writes the length of
/// `text` to `len` in any case, also when `buf` is too small.
///
/// # Safety
/// `buf` is NULL or valid for `cap` bytes; `len` is NULL or valid for a write.
// SAFETY: unsafe to call because it writes through `buf` and `len` (contract above).
unsafe fn write_text(text: &str, buf: *mut c_char, cap: usize, len: *mut usize) -> fmq_plugin_result {
    if !len.is_null() {
        // SAFETY: `len` is not NULL, so it is valid for a write (contract above).
        unsafe { *len = text.len() };
    }
    if buf.is_null() || cap < text.len() + 1 {
        return fail(
            fmq_plugin_result::FMQ_PLUGIN_ERROR_BUFFER,
            format!("buffer of {cap} bytes, {} needed", text.len() + 1),
        );
    }
    // SAFETY: `buf` has room for the text and its NUL (checked above). `text` is a fresh copy,
    // so it cannot overlap `buf`.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), text.len());
        *buf.add(text.len()) = 0;
    }
    fmq_plugin_result::FMQ_PLUGIN_OK
}

/// Converts a wait's timeout in milliseconds. A negative timeout means no limit.
fn timeout(ms: i64) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}

use fmq_plugin_result::*;

unsafe extern "C" fn svc_current_state(host: *mut c_void) -> i32 {
    let mut state = -1;
    // SAFETY: the ABI's contract for `host`.
    unsafe {
        serve(host, |h| {
            state = h.services.current_state() as i32;
            FMQ_PLUGIN_OK
        })
    };
    state
}

unsafe extern "C" fn svc_change_state(host: *mut c_void, transition: i32) -> fmq_plugin_result {
    // SAFETY: the ABI's contract for `host`.
    unsafe {
        serve(host, |h| {
            let Some(t) = Transition::ALL.iter().copied().find(|t| *t as i32 == transition) else {
                return fail(FMQ_PLUGIN_ERROR_INVALID, format!("no transition {transition}"));
            };
            match h.services.change_state(t) {
                Ok(true) => FMQ_PLUGIN_OK,
                Ok(false) => {
                    fail(FMQ_PLUGIN_REFUSED, format!("transition {t} refused in {}", h.services.current_state()))
                }
                Err(e) => fail(FMQ_PLUGIN_ERROR_CONTROL, e.to_string()),
            }
        })
    }
}

unsafe extern "C" fn svc_take_control(host: *mut c_void) -> fmq_plugin_result {
    // SAFETY: the ABI's contract for `host`.
    unsafe {
        serve(host, |h| match h.services.take_device_control() {
            Ok(()) => FMQ_PLUGIN_OK,
            Err(e) => fail(FMQ_PLUGIN_ERROR_CONTROL, e.to_string()),
        })
    }
}

unsafe extern "C" fn svc_steal_control(host: *mut c_void) -> fmq_plugin_result {
    // SAFETY: the ABI's contract for `host`.
    unsafe {
        serve(host, |h| {
            h.services.steal_device_control();
            FMQ_PLUGIN_OK
        })
    }
}

unsafe extern "C" fn svc_release_control(host: *mut c_void) -> fmq_plugin_result {
    // SAFETY: the ABI's contract for `host`.
    unsafe {
        serve(host, |h| {
            h.services.release_device_control();
            FMQ_PLUGIN_OK
        })
    }
}

unsafe extern "C" fn svc_controller(
    host: *mut c_void,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> fmq_plugin_result {
    // SAFETY: the ABI's contract for `host`, `buf` and `len`.
    unsafe {
        serve(host, |h| match h.services.device_controller() {
            Some(c) => write_text(&c, buf, cap, len),
            None => fail(FMQ_PLUGIN_ERROR_NOT_FOUND, "no plugin controls the device"),
        })
    }
}

unsafe extern "C" fn svc_wait_for_release(host: *mut c_void, timeout_ms: i64) -> fmq_plugin_result {
    // SAFETY: the ABI's contract for `host`.
    unsafe {
        serve(host, |h| match h.services.wait_for_release_device_control(timeout(timeout_ms)) {
            true => FMQ_PLUGIN_OK,
            false => fail(FMQ_PLUGIN_ERROR_TIMEOUT, "a plugin still controls the device"),
        })
    }
}

unsafe extern "C" fn svc_wait_for_state(host: *mut c_void, state: i32, timeout_ms: i64) -> fmq_plugin_result {
    // SAFETY: the ABI's contract for `host`.
    unsafe {
        serve(host, |h| {
            let Some(s) = State::ALL.iter().copied().find(|s| *s as i32 == state) else {
                return fail(FMQ_PLUGIN_ERROR_INVALID, format!("no state {state}"));
            };
            match h.services.wait_for_state(s, timeout(timeout_ms)) {
                Ok(true) => FMQ_PLUGIN_OK,
                Ok(false) => fail(FMQ_PLUGIN_ERROR_TIMEOUT, format!("the device did not enter {s} in time")),
                Err(_) => fail(FMQ_PLUGIN_ERROR_DEVICE, "the device is in the ERROR state"),
            }
        })
    }
}

/// A subscriber's `user` pointer, used on the state machine's thread.
struct User(*mut c_void);
// SAFETY: the ABI states that `user` is used from the state machine's thread.
unsafe impl Send for User {}
// SAFETY: as above; only the pointer is passed on, never dereferenced here.
unsafe impl Sync for User {}

unsafe extern "C" fn svc_subscribe(
    host: *mut c_void,
    callback: fmq_plugin_state_callback,
    user: *mut c_void,
) -> fmq_plugin_result {
    // SAFETY: the ABI's contract for `host`.
    unsafe {
        serve(host, |h| {
            let Some(f) = callback else { return fail(FMQ_PLUGIN_ERROR_INVALID, "callback is NULL") };
            let (user, name) = (User(user), h.name.clone());
            h.services.subscribe_to_state_change(move |s| {
                let u = &user;
                // Call the plugin's callback with its `user` pointer. The call is inside this
                // function's unsafe block, and that block's SAFETY line covers it. A failure is a
                // non-zero return, or an exception that is stopped here. A failure is raised as a
                // panic, and the state machine turns the panic into ERROR, as for any subscriber.
                match catch_unwind(AssertUnwindSafe(|| f(s as i32, u.0))) {
                    Ok(0) => {}
                    Ok(rc) => panic!("plugin '{name}': its state callback returned {rc} entering {s}"),
                    Err(_) => panic!("plugin '{name}': its state callback threw an exception entering {s}"),
                }
            });
            FMQ_PLUGIN_OK
        })
    }
}

unsafe extern "C" fn svc_unsubscribe(host: *mut c_void) -> fmq_plugin_result {
    // SAFETY: the ABI's contract for `host`.
    unsafe {
        serve(host, |h| {
            h.services.unsubscribe_from_state_change();
            FMQ_PLUGIN_OK
        })
    }
}

unsafe extern "C" fn svc_property_exists(host: *mut c_void, key: *const c_char) -> bool {
    let mut exists = false;
    // SAFETY: the ABI's contract for `host` and `key`.
    unsafe {
        serve(host, |h| match arg(key, "key") {
            Ok(k) => {
                exists = h.services.config().exists(k);
                FMQ_PLUGIN_OK
            }
            Err(e) => e,
        })
    };
    exists
}

unsafe extern "C" fn svc_get_property(
    host: *mut c_void,
    key: *const c_char,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> fmq_plugin_result {
    // SAFETY: the ABI's contract for `host`, `key`, `buf` and `len`.
    unsafe {
        serve(host, |h| {
            let k = match arg(key, "key") {
                Ok(k) => k,
                Err(e) => return e,
            };
            match h.services.config().value(k) {
                Some(Value::Strings(l)) => write_text(&l.join("\n"), buf, cap, len),
                Some(v) => write_text(&v.to_string(), buf, cap, len),
                None => fail(FMQ_PLUGIN_ERROR_NOT_FOUND, format!("Config has no key: {k}")),
            }
        })
    }
}

unsafe extern "C" fn svc_set_property(
    host: *mut c_void,
    key: *const c_char,
    value: *const c_char,
) -> fmq_plugin_result {
    // SAFETY: the ABI's contract for `host`, `key` and `value`.
    unsafe {
        serve(host, |h| {
            let (k, text) = match (arg(key, "key"), arg(value, "value")) {
                (Ok(k), Ok(v)) => (k, v),
                (Err(e), _) | (_, Err(e)) => return e,
            };
            match value_like(h.services.config(), k, text) {
                Some(v) => {
                    h.services.config().set(k, v);
                    FMQ_PLUGIN_OK
                }
                None => fail(FMQ_PLUGIN_ERROR_INVALID, format!("property '{k}': '{text}' is not a value of its type")),
            }
        })
    }
}

/// Reads `text` as a value of the type that property `key` has. For a new property, the value is
/// text.
fn value_like(config: &Properties, key: &str, text: &str) -> Option<Value> {
    match config.value(key) {
        None | Some(Value::Str(_)) => Some(Value::Str(text.to_owned())),
        Some(Value::Strings(_)) => Some(Value::Strings(text.lines().map(str::to_owned).collect())),
        Some(Value::Bool(_)) => Kind::Bool.parse(text),
        Some(Value::Int(_)) => text.trim().parse().ok().map(Value::Int),
        Some(Value::UInt(_)) => text.trim().parse().ok().map(Value::UInt),
        Some(Value::Float(_)) => text.trim().parse().ok().map(Value::Float),
    }
}

unsafe extern "C" fn svc_log(host: *mut c_void, severity: i32, text: *const c_char) {
    // SAFETY: the ABI's contract for `host` and `text`.
    unsafe {
        serve(host, |h| {
            let t = match arg(text, "text") {
                Ok(t) => t,
                Err(e) => return e,
            };
            let level = match Severity::ALL.get(usize::try_from(severity).unwrap_or(usize::MAX)) {
                Some(Severity::Trace) => log::Level::Trace,
                Some(Severity::Debug) => log::Level::Debug,
                Some(Severity::State) => {
                    log::info!(target: crate::logging::STATE_TARGET, "[{}] {t}", h.name);
                    return FMQ_PLUGIN_OK;
                }
                Some(Severity::Warn) => log::Level::Warn,
                Some(Severity::Error | Severity::Fatal) => log::Level::Error,
                _ => log::Level::Info,
            };
            log::log!(level, "[{}] {t}", h.name);
            FMQ_PLUGIN_OK
        })
    };
}

unsafe extern "C" fn svc_last_error() -> *const c_char {
    // The pointer stays valid until the thread's next failing call replaces the string.
    LAST_ERROR.try_with(|l| l.borrow().as_ptr()).unwrap_or(c"".as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_tables_are_checked_and_a_default_satisfies_required() {
        let table = [
            fmq_option {
                name: c"level".as_ptr(),
                ty: FMQ_OPTION_INT | FMQ_OPTION_REQUIRED,
                default_value: c"3".as_ptr(),
                description: std::ptr::null(),
            },
            fmq_option {
                name: c"must".as_ptr(),
                ty: FMQ_OPTION_STRING | FMQ_OPTION_REQUIRED,
                default_value: std::ptr::null(),
                description: c"d".as_ptr(),
            },
        ];
        // SAFETY: a table of two entries with static strings.
        let decls = unsafe { read_option_table(table.as_ptr(), table.len()) }.unwrap();
        let mut g = OptionGroup::new("t");
        add_options(&mut g, &decls);
        let mut opts = crate::options::Options::default();
        opts.add_group(g);
        let props = Properties::new();
        opts.parse(&[], &props).unwrap();
        assert_eq!(props.get::<i32>("level").unwrap(), 3);
        assert!(opts.check_required(&props).is_err(), "'must' has no default");
        let bad = [fmq_option {
            name: c"n".as_ptr(),
            ty: FMQ_OPTION_INT,
            default_value: c"x".as_ptr(),
            description: std::ptr::null(),
        }];
        // SAFETY: as above.
        assert!(matches!(unsafe { read_option_table(bad.as_ptr(), 1) }, Err(OptionTableError::Invalid(_))));
        // SAFETY: NULL with a count is refused before any read.
        assert_eq!(unsafe { read_option_table(std::ptr::null(), 2) }, Err(OptionTableError::Null("options")));
    }
}
