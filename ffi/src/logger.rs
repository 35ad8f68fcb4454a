//! The logger for C and C++: its settings (FairLogger's static `fair::Logger` API), and log lines.
//!
//! - The settings are the console and file severities, the verbosity, colour and a log file. The
//!   console severity and the verbosity can also move one step at a time, as the interactive
//!   controller's keys move them.
//! - [`fmq_log`] and [`fmq_log_at`] write a line through the fairmq-rs logger. So the lines of C
//!   and C++ devices look like the lines of Rust devices.
//!
//! The calls take FairMQ's severity names and FairLogger's finer ones (see [`severity`]).

use crate::error::*;
use fairmq::logging::{self, Severity, Verbosity};
use std::ffi::{c_char, c_int, CStr};

/// FairLogger's severity names as the library's: the finer debug levels (debug1..debug4) are below
/// debug (trace here), `detail` is debug, `important` and `alarm` are warnings.
pub(crate) fn severity(name: &str) -> Option<Severity> {
    Some(match name {
        "debug1" | "debug2" | "debug3" | "debug4" => Severity::Trace,
        "detail" => Severity::Debug,
        "important" | "alarm" => Severity::Warn,
        "critical" => Severity::Fatal,
        other => other.parse().ok()?,
    })
}

/// Sets a severity by name (inside the caller's panic boundary).
///
/// # Safety
/// `name` NUL-terminated or NULL.
// SAFETY: unsafe to call because `name` is read as a C string (contract above).
unsafe fn set_severity(name: *const c_char, set: impl FnOnce(Severity)) -> fmq_result {
    // SAFETY: the caller's contract.
    let name = match unsafe { str_arg(name) } {
        Ok(n) => n,
        Err(e) => return e,
    };
    match severity(name) {
        Some(s) => {
            logging::init();
            set(s);
            FMQ_OK
        }
        None => fail(FMQ_ERROR_INVALID, format!("unknown severity '{name}'")),
    }
}

/// Sets the console severity (`--severity`: trace, debug, info, state, warn, error, fatal, nolog,
/// and FairLogger's debug1..4, detail, important, alarm); `FMQ_ERROR_INVALID` for another name.
///
/// # Safety
/// `name` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn fmq_log_set_console_severity(name: *const c_char) -> fmq_result {
    // SAFETY: contract as documented.
    guard(|| unsafe { set_severity(name, logging::set_console_severity) })
}

/// Sets the severity of the log file (`--file-severity`).
///
/// # Safety
/// `name` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn fmq_log_set_file_severity(name: *const c_char) -> fmq_result {
    // SAFETY: contract as documented.
    guard(|| unsafe { set_severity(name, logging::set_file_severity) })
}

/// Sets the verbosity (`--verbosity`: verylow, low, medium, high, veryhigh).
///
/// # Safety
/// `name` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn fmq_log_set_verbosity(name: *const c_char) -> fmq_result {
    guard(|| {
        // SAFETY: contract as documented.
        let name = match unsafe { str_arg(name) } {
            Ok(n) => n,
            Err(e) => return e,
        };
        match name.parse::<Verbosity>() {
            Ok(v) => {
                logging::init();
                logging::set_verbosity(v);
                FMQ_OK
            }
            Err(e) => fail(FMQ_ERROR_INVALID, e),
        }
    })
}

/// Colours the console's lines or not (`--color`).
#[no_mangle]
pub extern "C" fn fmq_log_set_color(on: bool) -> fmq_result {
    guard(|| {
        logging::init();
        logging::set_color(on);
        FMQ_OK
    })
}

/// Writes the log to a file named from `prefix` as `--log-to-file` does (FairLogger's
/// InitFileSink); `FMQ_ERROR_INVALID` when it cannot be opened.
///
/// # Safety
/// `prefix` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn fmq_log_to_file(prefix: *const c_char) -> fmq_result {
    guard(|| {
        // SAFETY: contract as documented.
        let prefix = match unsafe { str_arg(prefix) } {
            Ok(p) => p,
            Err(e) => return e,
        };
        logging::init();
        match logging::log_to_file(prefix) {
            Ok(()) => FMQ_OK,
            Err(e) => fail(FMQ_ERROR_INVALID, format!("log file '{prefix}': {e}")),
        }
    })
}

/// Moves the console severity one step up (`up`: fewer lines) or down, as the interactive
/// controller's keys do; returns the new severity's name (static).
#[no_mangle]
pub extern "C" fn fmq_log_cycle_console_severity(up: bool) -> *const c_char {
    guard_value(c"info".as_ptr(), || {
        logging::init();
        static_name(logging::cycle_severity(up).name())
    })
}

/// Moves the verbosity one step up (more context) or down; returns its name (static).
#[no_mangle]
pub extern "C" fn fmq_log_cycle_verbosity(up: bool) -> *const c_char {
    guard_value(c"medium".as_ptr(), || {
        logging::init();
        static_name(logging::cycle_verbosity(up).name())
    })
}

/// The console severity's name (static).
#[no_mangle]
pub extern "C" fn fmq_log_console_severity() -> *const c_char {
    guard_value(c"info".as_ptr(), || static_name(logging::console_severity().name()))
}

/// A NUL-terminated copy of a static name, kept for the program's life (one per name).
fn static_name(name: &'static str) -> *const c_char {
    use std::collections::HashMap;
    use std::ffi::CString;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashMap<&'static str, CString>>> = OnceLock::new();
    let mut names = NAMES.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    names.entry(name).or_insert_with(|| CString::new(name).unwrap_or_default()).as_ptr()
}

/// A C string argument that may be NULL (`None`, as for one that is not UTF-8), without setting
/// the last error.
///
/// # Safety
/// `p` is NULL or NUL-terminated.
// SAFETY: unsafe to call because `p` is read as a C string (contract above).
unsafe fn optional_str<'a>(p: *const c_char) -> Option<&'a str> {
    // SAFETY: non-null and NUL-terminated per the caller's contract.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().ok()).flatten()
}

/// Logs `message` through the fairmq-rs logger at FairMQ's `severity` (trace, debug, info, state,
/// warn, error, fatal, and FairLogger's debug1..4, detail, important, alarm), so C and C++ devices'
/// lines look like the Rust devices' lines. An unknown severity logs at info.
///
/// # Safety
/// `severity` and `message` are NUL-terminated strings (or NULL: nothing is logged).
#[no_mangle]
pub unsafe extern "C" fn fmq_log(severity: *const c_char, message: *const c_char) {
    guard_value((), || {
        // SAFETY: contract as documented; no origin.
        unsafe { fmq_log_at(severity, std::ptr::null(), 0, std::ptr::null(), message) }
    });
}

/// [`fmq_log`] naming where the line was logged: the caller's `file` (its last path component is
/// shown), `line` and `function`, as FairLogger's `[file:line:function]` at verbosity veryhigh.
/// The C++ wrapper's `LOG(severity)` passes them.
///
/// # Safety
/// `severity` and `message` are NUL-terminated strings (or NULL: nothing is logged); `file` and
/// `function` NUL-terminated or NULL (not known).
#[no_mangle]
pub unsafe extern "C" fn fmq_log_at(
    severity: *const c_char,
    file: *const c_char,
    line: c_int,
    function: *const c_char,
    message: *const c_char,
) {
    guard_value((), || {
        // SAFETY: contract as documented.
        let (Ok(sev), Ok(msg)) = (unsafe { str_arg(severity) }, unsafe { str_arg(message) }) else { return };
        // SAFETY: contract as documented (NULL is allowed: not known).
        let (file, function) = unsafe { (optional_str(file), optional_str(function)) };
        let file = file.map(|f| f.rsplit('/').next().unwrap_or(f));
        let caller = function.unwrap_or("c");
        use fairmq::logging::Severity;
        // FairLogger's names (debug1..4, detail, important, alarm) at their own levels.
        let (level, target) = match self::severity(sev) {
            Some(Severity::Trace) => (log::Level::Trace, caller),
            Some(Severity::Debug) => (log::Level::Debug, caller),
            Some(Severity::State) => (log::Level::Info, fairmq::logging::STATE_TARGET),
            Some(Severity::Warn) => (log::Level::Warn, caller),
            Some(Severity::Error) => (log::Level::Error, caller),
            Some(Severity::Fatal) => (log::Level::Error, fairmq::logging::FATAL_TARGET),
            Some(Severity::Nolog) => return,
            _ => (log::Level::Info, caller),
        };
        let line = u32::try_from(line).ok().filter(|&l| l > 0);
        log::logger().log(
            &log::Record::builder()
                .level(level)
                .target(target)
                .file(file)
                .line(line)
                .args(format_args!("{msg}"))
                .build(),
        );
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn fairloggers_severity_names_are_accepted_and_others_refused() {
        for (name, sev) in [
            ("debug4", Severity::Trace),
            ("debug1", Severity::Trace),
            ("detail", Severity::Debug),
            ("important", Severity::Warn),
            ("alarm", Severity::Warn),
            ("warning", Severity::Warn),
            ("nolog", Severity::Nolog),
        ] {
            assert_eq!(severity(name), Some(sev), "{name}");
        }
        assert_eq!(severity("loud"), None);
        // SAFETY: NUL-terminated names.
        unsafe {
            assert_eq!(fmq_log_set_file_severity(c"loud".as_ptr()), FMQ_ERROR_INVALID);
            assert_eq!(fmq_log_set_file_severity(c"debug".as_ptr()), FMQ_OK);
            assert_eq!(fmq_log_set_verbosity(c"loud".as_ptr()), FMQ_ERROR_INVALID);
        }
        // SAFETY: a static NUL-terminated name.
        let cycled = unsafe { CStr::from_ptr(fmq_log_cycle_verbosity(true)) }.to_str().unwrap().to_owned();
        assert!(["verylow", "low", "medium", "high", "veryhigh"].contains(&cycled.as_str()), "{cycled}");
    }
}
