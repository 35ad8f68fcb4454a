//! The logger's settings for C and C++ (FairLogger's static `fair::Logger` API): console and file
//! severities, verbosity, colour, a log file, cycling through severities and verbosities.

use crate::error::*;
use fairmq::logging::{self, Severity, Verbosity};
use std::ffi::c_char;

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
