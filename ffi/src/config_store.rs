//! Configuration stores that a program owns (FairMQ's standalone `ProgOptions`).
//!
//! - [`fmq_config_new`] makes a store, empty or with the defaults of FairMQ's options.
//!   [`fmq_config_free`] frees it.
//! - [`fmq_config_parse`] fills a store from a command line, as FairMQ's `ProgOptions::ParseAll`
//!   does.
//! - [`fmq_config_set_value`] sets a value with its exact kind, and [`fmq_config_delete`] deletes
//!   a key.
//! - [`fmq_config_value_type`] tells the kind of a value, and [`fmq_option_declared_type`] the
//!   type that FairMQ declares an option with.
//! - [`fmq_options_help`] and [`fmq_config_print_options`] give the text of `--help` and
//!   `--print-options`.
//!
//! The calls of the module `config` work on these stores too. A device that a program runs in a
//! thread of its own (`fmq_device_run`) shares the store that it is given.

use crate::config::fmq_config;
use crate::device::{fmq_option, fmq_option_type, FMQ_OPTION_BOOL, FMQ_OPTION_FLAG, FMQ_OPTION_FLOAT};
use crate::device::{FMQ_OPTION_INT, FMQ_OPTION_STRING, FMQ_OPTION_STRINGS, FMQ_OPTION_UINT16, FMQ_OPTION_UINT64};
use crate::error::*;
use crate::ptr::*;
use fairmq::options::{self, Kind, Options};
use fairmq::plugin::{add_options, read_option_table, OptionTableError, PluginManager};
use fairmq::properties::Value;
use fairmq::Properties;
use std::ffi::c_char;
use std::sync::Arc;

/// The options every store knows: FairMQ's general, device, control and plugin manager options.
fn known_options() -> Options {
    let mut o = options::standard();
    o.add_group(PluginManager::options());
    o
}

/// A new store, with the default of every FairMQ option when `defaults` is true (FairMQ's
/// `ProgOptions()`), empty otherwise; into `*out`, freed with `fmq_config_free`.
///
/// # Safety
/// `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_config_new(defaults: bool, out: *mut *mut fmq_config) -> fmq_result {
    guard(|| {
        if let Err(e) = check_out(out) {
            return e;
        }
        let store = Properties::new();
        if defaults {
            if let Err(e) = known_options().parse(&[], &store) {
                return fail(FMQ_ERROR_CONFIG, e);
            }
        }
        // SAFETY: `out` checked above. The handle is the Arc's pointer (fmq_config is
        // repr(transparent) over Properties), given back once by fmq_config_free.
        unsafe { *out = Arc::into_raw(store).cast_mut().cast() };
        FMQ_OK
    })
}

/// Frees a store made by `fmq_config_new` (NULL is fine). A device run with it keeps its own
/// share until its run ends.
///
/// # Safety
/// `cfg` is NULL or came from `fmq_config_new` and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn fmq_config_free(cfg: *mut fmq_config) {
    guard_value((), || {
        if !cfg.is_null() {
            // SAFETY: it came from Arc::into_raw in fmq_config_new and is given back once.
            drop(unsafe { Arc::from_raw(cfg.cast_const().cast::<Properties>()) });
        }
    })
}

/// A clone of the `Arc` that `cfg` points into (every handle does: see `fmq_config`).
///
/// # Safety
/// `cfg` is a valid handle for the call.
// SAFETY: unsafe to call because `cfg` is read as the start of an `Arc` (contract above).
pub(crate) unsafe fn shared(cfg: &fmq_config) -> Arc<Properties> {
    let p: *const Properties = (cfg as *const fmq_config).cast();
    // SAFETY: every handle points into a live Arc (fmq_config's invariant); the count taken here is
    // the new Arc's.
    unsafe {
        Arc::increment_strong_count(p);
        Arc::from_raw(p)
    }
}

/// `text` as a value of kind `ty`, wider than an option's own range: an `FMQ_OPTION_INT` is any
/// 64-bit signed integer, an `FMQ_OPTION_FLOAT` a double, `FMQ_OPTION_STRINGS` one item per line.
fn exact_value(ty: fmq_option_type, text: &str) -> Option<Value> {
    match ty {
        FMQ_OPTION_STRING => Some(Value::Str(text.to_owned())),
        FMQ_OPTION_BOOL | FMQ_OPTION_FLAG => options::parse_bool(text).map(Value::Bool),
        FMQ_OPTION_INT => text.parse::<i64>().ok().map(Value::Int),
        FMQ_OPTION_UINT64 | FMQ_OPTION_UINT16 => text.parse::<u64>().ok().map(Value::UInt),
        FMQ_OPTION_FLOAT => text.parse::<f64>().ok().map(Value::Float),
        FMQ_OPTION_STRINGS => Some(Value::Strings(if text.is_empty() {
            Vec::new()
        } else {
            text.split('\n').map(str::to_owned).collect()
        })),
        _ => None,
    }
}

/// Sets property `key` to `value` read as a value of kind `ty` (`FMQ_OPTION_STRING`, `_BOOL`,
/// `_INT` (64-bit), `_UINT64`, `_UINT16`, `_FLOAT` (double) or `_STRINGS`, one item per line);
/// subscribers hear of it. `FMQ_ERROR_INVALID` when the text is no such value.
///
/// # Safety
/// `cfg` valid or NULL; `key` and `value` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn fmq_config_set_value(
    cfg: *const fmq_config,
    key: *const c_char,
    ty: fmq_option_type,
    value: *const c_char,
) -> fmq_result {
    guard(|| {
        // SAFETY: contract as documented.
        let (c, key, text) = match unsafe { (refp(cfg, "config"), str_arg(key), str_arg(value)) } {
            (Ok(c), Ok(k), Ok(v)) => (c, k, v),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return e,
        };
        match exact_value(ty, text) {
            Some(v) => {
                crate::config::inner(c).set(key, v);
                FMQ_OK
            }
            None => fail(FMQ_ERROR_INVALID, format!("property '{key}': '{text}' is not a value of type {ty}")),
        }
    })
}

/// Removes property `key` (nobody hears of it); `FMQ_ERROR_NOT_FOUND` if there was none.
///
/// # Safety
/// `cfg` valid or NULL; `key` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn fmq_config_delete(cfg: *const fmq_config, key: *const c_char) -> fmq_result {
    guard(|| {
        // SAFETY: contract as documented.
        let (c, key) = match unsafe { (refp(cfg, "config"), str_arg(key)) } {
            (Ok(c), Ok(k)) => (crate::config::inner(c), k),
            (Err(e), _) | (_, Err(e)) => return e,
        };
        if !c.exists(key) {
            return fail(FMQ_ERROR_NOT_FOUND, format!("no property '{key}'"));
        }
        c.delete(key);
        FMQ_OK
    })
}

/// The kind of the value property `key` holds (`FMQ_OPTION_STRING`, `_BOOL`, `_INT`, `_UINT64`,
/// `_FLOAT` or `_STRINGS`); -1 when there is no such property or an argument is bad.
///
/// # Safety
/// `cfg` valid or NULL; `key` NUL-terminated or NULL.
#[no_mangle]
pub unsafe extern "C" fn fmq_config_value_type(cfg: *const fmq_config, key: *const c_char) -> fmq_option_type {
    guard_value(-1, || {
        // SAFETY: contract as documented.
        let (Ok(c), Ok(key)) = (unsafe { (refp(cfg, "config"), str_arg(key)) }) else { return -1 };
        match crate::config::inner(c).value(key) {
            Some(v) => crate::config::value_type(&v),
            None => -1,
        }
    })
}

/// The type FairMQ declares option `name` with (`FMQ_OPTION_UINT16` for `--shm-segment-id`,
/// `FMQ_OPTION_UINT64` for sizes, `FMQ_OPTION_FLAG` for switches, ...); -1 for a name that is
/// none of FairMQ's options.
///
/// # Safety
/// `name` NUL-terminated or NULL.
#[no_mangle]
pub unsafe extern "C" fn fmq_option_declared_type(name: *const c_char) -> fmq_option_type {
    guard_value(-1, || {
        // SAFETY: contract as documented.
        let Ok(name) = (unsafe { str_arg(name) }) else { return -1 };
        match known_options().kind_of(name) {
            Some(Kind::Str) => FMQ_OPTION_STRING,
            Some(Kind::Bool) => FMQ_OPTION_BOOL,
            Some(Kind::Int) => FMQ_OPTION_INT,
            Some(Kind::U16) => FMQ_OPTION_UINT16,
            Some(Kind::U64 | Kind::Size) => FMQ_OPTION_UINT64,
            Some(Kind::Float) => FMQ_OPTION_FLOAT,
            Some(Kind::Strings) => FMQ_OPTION_STRINGS,
            Some(Kind::Flag) => FMQ_OPTION_FLAG,
            None => -1,
        }
    })
}

/// FairMQ's options and `options` (`n_options` entries, as for `fmq_run_device`), a group each.
///
/// # Safety
/// As for `fmq_run_device`'s `options`.
// SAFETY: unsafe to call because `options` is read as a C array of `n_options` (contract above).
unsafe fn with_custom(options: *const fmq_option, n_options: usize) -> Result<Options, fmq_result> {
    // SAFETY: contract as documented.
    let decls = unsafe { read_option_table(options, n_options) }.map_err(|e| match e {
        OptionTableError::Null(_) => fail(FMQ_ERROR_NULL, e),
        OptionTableError::Invalid(_) => fail(FMQ_ERROR_INVALID, e),
    })?;
    let mut opts = known_options();
    let mut custom = options::OptionGroup::new("Custom options");
    add_options(&mut custom, &decls);
    opts.add_group(custom);
    Ok(opts)
}

/// The `--help` text of FairMQ's options and `options` (as for `fmq_run_device`) into `buf`.
///
/// # Safety
/// `options` as for `fmq_run_device`; `buf` valid for `len` bytes; `written` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_options_help(
    options: *const fmq_option,
    n_options: usize,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: contract as documented.
            let opts = unsafe { with_custom(options, n_options)? };
            // SAFETY: contract as documented.
            Ok(unsafe { copy_out(&opts.help(), buf, len, written) })
        })())
    })
}

/// Every option of FairMQ's and of `options` with its value in `cfg`, as `--print-options` prints
/// them (`<option>:<value>:<type>:<description>`, a line each), into `buf`.
///
/// # Safety
/// `cfg` valid; `options` as for `fmq_run_device`; `buf` valid for `len` bytes; `written` NULL or
/// valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_config_print_options(
    cfg: *const fmq_config,
    options: *const fmq_option,
    n_options: usize,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: contract as documented.
            let (c, opts) = unsafe { (refp(cfg, "config")?, with_custom(options, n_options)?) };
            let text = opts.print_options(crate::config::inner(c));
            // SAFETY: contract as documented.
            Ok(unsafe { copy_out(&text, buf, len, written) })
        })())
    })
}

/// Parses a command line into the store as FairMQ's `ProgOptions::ParseAll` does: every property
/// is removed, then the defaults of FairMQ's options and of `options` (`n_options` entries, as
/// for `fmq_run_device`) are set, then what `argv` gives (`argv[0]` is the program name).
/// A token that is no option is refused unless `allow_unregistered`:
/// `FMQ_ERROR_UNKNOWN_OPTION`, and `fmq_last_error` says `unrecognised option '<token>'`; a bad
/// value is `FMQ_ERROR_CONFIG` with the reason.
///
/// # Safety
/// `cfg` valid or NULL; `argv` holds `argc` NUL-terminated strings; `options` as for
/// `fmq_run_device`.
#[no_mangle]
pub unsafe extern "C" fn fmq_config_parse(
    cfg: *const fmq_config,
    argc: i32,
    argv: *const *const c_char,
    options: *const fmq_option,
    n_options: usize,
    allow_unregistered: bool,
) -> fmq_result {
    guard(|| {
        let r = (|| -> Result<fmq_result, fmq_result> {
            // SAFETY: contract as documented.
            let (c, args) = unsafe { (refp(cfg, "config")?, crate::transport::args(argc, argv)?) };
            // SAFETY: contract as documented.
            let mut opts = unsafe { with_custom(options, n_options)? };
            // Parsed into a fresh store first: a refused line leaves the store as it was.
            let parsed = Properties::new();
            opts.parse(args.get(1..).unwrap_or(&[]), &parsed).map_err(|e| fail(FMQ_ERROR_CONFIG, e))?;
            if !allow_unregistered {
                if let Some(tok) = opts.unregistered.first() {
                    return Err(fail(FMQ_ERROR_UNKNOWN_OPTION, format!("unrecognised option '{tok}'")));
                }
            }
            let store = crate::config::inner(c);
            for k in store.keys() {
                store.delete(&k);
            }
            store.set_all(parsed.keys().into_iter().filter_map(|k| parsed.value(&k).map(|v| (k, v))));
            Ok(FMQ_OK)
        })();
        code(r)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::{CStr, CString};

    fn new_store(defaults: bool) -> *mut fmq_config {
        let mut c = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        assert_eq!(unsafe { fmq_config_new(defaults, &mut c) }, FMQ_OK);
        c
    }

    fn text(c: *const fmq_config, key: &str) -> Option<String> {
        let key = CString::new(key).unwrap();
        let mut buf = [0 as c_char; 256];
        let mut n = 0;
        // SAFETY: valid handle, key and buffer.
        let r = unsafe { crate::config::fmq_config_property(c, key.as_ptr(), buf.as_mut_ptr(), buf.len(), &mut n) };
        // SAFETY: NUL-terminated on success.
        (r == FMQ_OK).then(|| unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap().to_owned())
    }

    #[test]
    fn a_new_store_holds_fairmqs_defaults_or_nothing() {
        let c = new_store(true);
        assert_eq!(text(c, "transport").as_deref(), Some("zeromq"));
        assert_eq!(text(c, "io-threads").as_deref(), Some("1"));
        assert_eq!(text(c, "id").as_deref(), Some(""));
        let key = CString::new("shm-segment-size").unwrap();
        // An unsigned default that fits a signed 64-bit integer is stored as one (the store keeps
        // kinds, not C++ types: fmq_option_declared_type gives those).
        // SAFETY: valid handle and key.
        assert_eq!(unsafe { fmq_config_value_type(c, key.as_ptr()) }, FMQ_OPTION_INT);
        let empty = new_store(false);
        assert_eq!(text(empty, "transport"), None);
        // SAFETY: both came from fmq_config_new.
        unsafe {
            fmq_config_free(c);
            fmq_config_free(empty);
        }
    }

    #[test]
    fn values_keep_their_exact_kind_and_deletes_are_reported() {
        let c = new_store(false);
        let set = |k: &str, ty, v: &str| {
            let (k, v) = (CString::new(k).unwrap(), CString::new(v).unwrap());
            // SAFETY: valid handle and strings.
            unsafe { fmq_config_set_value(c, k.as_ptr(), ty, v.as_ptr()) }
        };
        assert_eq!(set("wide", FMQ_OPTION_INT, "-9000000000"), FMQ_OK);
        assert_eq!(set("list", FMQ_OPTION_STRINGS, "a, b\nc"), FMQ_OK);
        assert_eq!(set("bad", FMQ_OPTION_UINT64, "-1"), FMQ_ERROR_INVALID);
        assert_eq!(set("bad", 99, "x"), FMQ_ERROR_INVALID);
        // SAFETY: the handle came from fmq_config_new.
        let store = unsafe { shared(&*c) };
        assert_eq!(store.get::<i64>("wide").unwrap(), -9_000_000_000);
        assert_eq!(store.get::<Vec<String>>("list").unwrap(), ["a, b", "c"]);
        assert!(!store.exists("bad"));
        let key = CString::new("wide").unwrap();
        // SAFETY: valid handle and key.
        unsafe {
            assert_eq!(fmq_config_value_type(c, key.as_ptr()), FMQ_OPTION_INT);
            assert_eq!(fmq_config_delete(c, key.as_ptr()), FMQ_OK);
            assert_eq!(fmq_config_delete(c, key.as_ptr()), FMQ_ERROR_NOT_FOUND);
            assert_eq!(fmq_config_value_type(c, key.as_ptr()), -1);
            fmq_config_free(c);
        }
        // The Arc taken by `shared` keeps the store alive after its handle is freed.
        assert_eq!(store.keys(), ["list"]);
    }

    fn parse(c: *const fmq_config, line: &[&str], allow: bool) -> fmq_result {
        let args: Vec<CString> = line.iter().map(|a| CString::new(*a).unwrap()).collect();
        let ptrs: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        let custom = [fmq_option {
            name: c"custom".as_ptr(),
            ty: FMQ_OPTION_INT,
            default_value: c"7".as_ptr(),
            description: c"a custom option".as_ptr(),
        }];
        // SAFETY: valid handle, argv and option table.
        unsafe { fmq_config_parse(c, ptrs.len() as i32, ptrs.as_ptr(), custom.as_ptr(), custom.len(), allow) }
    }

    #[test]
    fn parse_replaces_the_store_and_refuses_unknown_options_unless_allowed() {
        let c = new_store(true);
        let set = |k: &str, v: &str| {
            let (k, v) = (CString::new(k).unwrap(), CString::new(v).unwrap());
            // SAFETY: valid handle and strings.
            unsafe { fmq_config_set_value(c, k.as_ptr(), FMQ_OPTION_STRING, v.as_ptr()) }
        };
        assert_eq!(set("transport", "shmem"), FMQ_OK);
        assert_eq!(set("mine", "x"), FMQ_OK);
        assert_eq!(parse(c, &["cmd", "--unregistered", "option"], false), FMQ_ERROR_UNKNOWN_OPTION);
        assert!(crate::error::last_error_text().contains("unrecognised option '--unregistered'"));
        assert_eq!(text(c, "mine").as_deref(), Some("x"), "a refused line changes nothing");
        assert_eq!(parse(c, &["cmd", "--unregistered", "option", "--id", "dev1"], true), FMQ_OK);
        assert_eq!(text(c, "transport").as_deref(), Some("zeromq"), "what was set before is gone");
        assert_eq!(text(c, "mine"), None);
        assert_eq!(text(c, "id").as_deref(), Some("dev1"));
        assert_eq!(text(c, "custom").as_deref(), Some("7"));
        assert_eq!(parse(c, &["cmd", "--io-threads", "many"], true), FMQ_ERROR_CONFIG);
        // SAFETY: the handle came from fmq_config_new.
        unsafe { fmq_config_free(c) };
    }

    #[test]
    fn declared_types_are_fairmqs() {
        let ty = |n: &CStr| {
            // SAFETY: a NUL-terminated name.
            unsafe { fmq_option_declared_type(n.as_ptr()) }
        };
        assert_eq!(ty(c"shm-segment-id"), FMQ_OPTION_UINT16);
        assert_eq!(ty(c"shm-segment-size"), FMQ_OPTION_UINT64);
        assert_eq!(ty(c"rate"), FMQ_OPTION_FLOAT);
        assert_eq!(ty(c"channel-config"), FMQ_OPTION_STRINGS);
        assert_eq!(ty(c"help"), FMQ_OPTION_FLAG);
        assert_eq!(ty(c"plugin"), FMQ_OPTION_STRINGS);
        assert_eq!(ty(c"no-such-option"), -1);
    }
}
