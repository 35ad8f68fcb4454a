//! The properties of a configuration (FairMQ's `ProgOptions`): [`fmq_config`].
//!
//! An [`fmq_config`] handle comes from one of two places:
//!
//! - A device program lends its configuration. The device factory of `fmq_run_device_factory`
//!   gets it (FairMQ's `getDevice`), and every hook reaches it through its context
//!   (`fmq_context_config`).
//! - A program owns a store that it made with `fmq_config_new` (see the module `config_store`).
//!
//! The calls of this module work on either handle. They read a property as text
//! ([`fmq_config_property`], [`fmq_config_property_lines`]), check whether a key exists
//! ([`fmq_config_count`]), set a property ([`fmq_config_set_property`]) and list keys
//! ([`fmq_config_keys`]). A subscriber hears of every property set from then on
//! ([`fmq_config_subscribe`]).

use crate::error::*;
use crate::ptr::*;
use fairmq::plugin::c_abi::{
    fmq_option_type, option_kind, FMQ_OPTION_BOOL, FMQ_OPTION_FLOAT, FMQ_OPTION_INT, FMQ_OPTION_STRING,
    FMQ_OPTION_STRINGS, FMQ_OPTION_UINT64,
};
use fairmq::properties::Value;
use fairmq::Properties;
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Arc;

/// A configuration store: borrowed from a device program (valid while the program runs: the
/// device factory's call and every hook), or owned (`fmq_config_new`, until `fmq_config_free`).
/// Thread-safe.
///
/// Every handle points at the `Properties` inside an `Arc` (made only by `config_ptr` and
/// `fmq_config_new`), so a device can share the store it is given (`fmq_device_run`).
#[allow(non_camel_case_types)]
#[repr(transparent)]
pub struct fmq_config(Properties);

/// `p` as the handle C sees.
pub(crate) fn config_ptr(p: &Arc<Properties>) -> *const fmq_config {
    // fmq_config is repr(transparent) over Properties.
    Arc::as_ptr(p).cast()
}

/// The store behind a handle.
pub(crate) fn inner(c: &fmq_config) -> &Properties {
    &c.0
}

/// The `FMQ_OPTION_*` kind of a value.
pub(crate) fn value_type(v: &Value) -> fmq_option_type {
    typed_text(v).0
}

/// Runs `f` on the configuration inside the panic boundary.
fn with_config(cfg: *const fmq_config, f: impl FnOnce(&Properties) -> fmq_result) -> fmq_result {
    guard(|| {
        // SAFETY: a valid handle or NULL per the contract of every fmq_config_* call.
        match unsafe { refp(cfg, "config") } {
            Ok(c) => f(&c.0),
            Err(e) => e,
        }
    })
}

/// Copies the text `text` gives for property `key` into `buf`; `FMQ_ERROR_NOT_FOUND` if it gives
/// none.
///
/// # Safety
/// As for `fmq_config_property`.
// SAFETY: unsafe to call because `key` is read and `buf`, `written` are written through (contract above).
unsafe fn copy_property(
    c: &Properties,
    key: *const c_char,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
    text: impl FnOnce(&Properties, &str) -> Option<String>,
) -> fmq_result {
    // SAFETY: contract as documented.
    let key = match unsafe { str_arg(key) } {
        Ok(k) => k,
        Err(e) => return e,
    };
    match text(c, key) {
        // SAFETY: contract as documented.
        Some(v) => unsafe { copy_out(&v, buf, len, written) },
        None => fail(FMQ_ERROR_NOT_FOUND, format!("no property '{key}'")),
    }
}

/// Property `key` as text into `buf` (see `fmq_context_property`); `FMQ_ERROR_NOT_FOUND` if the
/// configuration has no such key.
///
/// # Safety
/// `cfg` valid or NULL; `key` NUL-terminated; `buf` NULL or valid for `len` bytes; `written` NULL
/// or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_config_property(
    cfg: *const fmq_config,
    key: *const c_char,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    with_config(cfg, |c| {
        // SAFETY: contract as documented.
        unsafe { copy_property(c, key, buf, len, written, |c, key| c.get_as_string(key).ok()) }
    })
}

/// Property `key` as `fmq_config_property` copies it, but a list (a `FMQ_OPTION_STRINGS` option,
/// `--channel-config`) as one item per line, so items holding ", " stay whole (for
/// `GetProperty<std::vector<T>>`).
///
/// # Safety
/// As for `fmq_config_property`.
#[no_mangle]
pub unsafe extern "C" fn fmq_config_property_lines(
    cfg: *const fmq_config,
    key: *const c_char,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    with_config(cfg, |c| {
        // SAFETY: contract as documented.
        unsafe { copy_property(c, key, buf, len, written, |c, key| c.value(key).map(|v| typed_text(&v).1)) }
    })
}

/// Whether the configuration has `key`: 1 or 0 (FairMQ's `Count`); 0 for bad arguments.
///
/// # Safety
/// `cfg` valid or NULL; `key` NUL-terminated or NULL.
#[no_mangle]
pub unsafe extern "C" fn fmq_config_count(cfg: *const fmq_config, key: *const c_char) -> c_int {
    guard_value(0, || {
        // SAFETY: contract as documented.
        match unsafe { (refp(cfg, "config"), str_arg(key)) } {
            (Ok(c), Ok(k)) => c_int::from(c.0.exists(k)),
            _ => 0,
        }
    })
}

/// Sets property `key` to `value`, text read as a value of `ty` (an `FMQ_OPTION_*` type); who
/// subscribed to the key hears of it. `FMQ_ERROR_INVALID` when the text is no value of that type.
///
/// # Safety
/// `cfg` valid or NULL; `key` and `value` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn fmq_config_set_property(
    cfg: *const fmq_config,
    key: *const c_char,
    ty: fmq_option_type,
    value: *const c_char,
) -> fmq_result {
    with_config(cfg, |c| {
        // SAFETY: contract as documented.
        let (key, text) = match unsafe { (str_arg(key), str_arg(value)) } {
            (Ok(k), Ok(v)) => (k, v),
            (Err(e), _) | (_, Err(e)) => return e,
        };
        let Some(kind) = option_kind(ty) else {
            return fail(FMQ_ERROR_INVALID, format!("property '{key}': unknown type {ty}"));
        };
        match kind.parse(text) {
            Some(v) => {
                c.set(key, v);
                FMQ_OK
            }
            None => fail(FMQ_ERROR_INVALID, format!("property '{key}': '{text}' is not a value of its type")),
        }
    })
}

/// The keys that start with `prefix` (all with ""), one per line, into `buf` (as
/// `fmq_context_property` copies text).
///
/// # Safety
/// As for `fmq_config_property`, with `prefix` in place of `key`.
#[no_mangle]
pub unsafe extern "C" fn fmq_config_keys(
    cfg: *const fmq_config,
    prefix: *const c_char,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    with_config(cfg, |c| {
        // SAFETY: contract as documented.
        let prefix = match unsafe { str_arg(prefix) } {
            Ok(p) => p,
            Err(e) => return e,
        };
        let keys: Vec<String> = c.keys().into_iter().filter(|k| k.starts_with(prefix)).collect();
        // SAFETY: contract as documented.
        unsafe { copy_out(&keys.join("\n"), buf, len, written) }
    })
}

/// Called when a property changes, on the thread that changed it: its key, its value's type (an
/// `FMQ_OPTION_*` type; lists of text are `FMQ_OPTION_STRINGS`, one item per line) and its value
/// as text. Must not throw (C++).
#[allow(non_camel_case_types)]
pub type fmq_property_callback = Option<
    unsafe extern "C-unwind" fn(key: *const c_char, ty: fmq_option_type, value: *const c_char, user: *mut c_void),
>;

/// A `user` pointer that crosses threads: the subscriber promises it may (see
/// `fmq_config_subscribe`).
struct User(*mut c_void);
// SAFETY: the subscriber's contract: `user` may be used from any thread that sets a property.
unsafe impl Send for User {}
// SAFETY: as above; the callback gets the pointer, never a reference through it.
unsafe impl Sync for User {}

/// The type and text a subscriber gets for `v`.
fn typed_text(v: &Value) -> (fmq_option_type, String) {
    match v {
        Value::Str(s) => (FMQ_OPTION_STRING, s.clone()),
        Value::Bool(b) => (FMQ_OPTION_BOOL, b.to_string()),
        Value::Int(i) => (FMQ_OPTION_INT, i.to_string()),
        Value::UInt(u) => (FMQ_OPTION_UINT64, u.to_string()),
        Value::Float(f) => (FMQ_OPTION_FLOAT, f.to_string()),
        Value::Strings(l) => (FMQ_OPTION_STRINGS, l.join("\n")),
    }
}

/// Calls `callback` for every property set from now on, as `subscriber` (FairMQ's
/// `ProgOptions::Subscribe`); a second subscription of the same subscriber replaces the first.
///
/// # Safety
/// `cfg` valid or NULL; `subscriber` NUL-terminated; `user` may be used from any thread that sets
/// a property until the run ends (also after `fmq_config_unsubscribe`: see there).
#[no_mangle]
pub unsafe extern "C" fn fmq_config_subscribe(
    cfg: *const fmq_config,
    subscriber: *const c_char,
    callback: fmq_property_callback,
    user: *mut c_void,
) -> fmq_result {
    with_config(cfg, |c| {
        // SAFETY: contract as documented.
        let subscriber = match unsafe { str_arg(subscriber) } {
            Ok(s) => s,
            Err(e) => return e,
        };
        let Some(f) = callback else { return fail(FMQ_ERROR_NULL, "callback is NULL") };
        let user = User(user);
        c.subscribe(subscriber, move |key: &str, value: &Value| {
            let (ty, text) = typed_text(value);
            // Keys and values with a NUL byte cannot be told to C: not reported.
            let (Ok(key), Ok(text)) = (CString::new(key), CString::new(text)) else { return };
            let u = &user;
            // SAFETY: the callback's contract; the strings live across the call.
            unsafe { f(key.as_ptr(), ty, text.as_ptr(), u.0) }
        });
        FMQ_OK
    })
}

/// Ends the subscription of `subscriber`. Subscribers are called from a copy of their list: a
/// property set on another thread at the same time may still call it after this returns. Keep
/// `user` valid until the run ends.
///
/// # Safety
/// `cfg` valid or NULL; `subscriber` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn fmq_config_unsubscribe(cfg: *const fmq_config, subscriber: *const c_char) -> fmq_result {
    with_config(cfg, |c| {
        // SAFETY: contract as documented.
        match unsafe { str_arg(subscriber) } {
            Ok(s) => {
                c.unsubscribe(s);
                FMQ_OK
            }
            Err(e) => e,
        }
    })
}
