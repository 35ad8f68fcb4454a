//! The device's panic boundary: a panic becomes an error, as an exception does in FairMQ.
//!
//! FairMQ turns an exception anywhere in a state's work into the ERROR state: in a hook, in a data
//! callback, or in a receive inside the framework. A panic here takes the same way. It is caught
//! where the work of a state, a callback or the whole program runs. It is logged and turned into
//! an error. The device then shuts down through its state machine and releases what it holds.
//! Without the boundary, the panic would unwind out of `main` (exit code 101) or kill the thread
//! it ran on.
//!
//! - [`catch`] runs a closure and returns a panic as its message.
//! - [`guarded`] runs work that may fail, and turns a panic into an error that names the work.
//! - [`log_panics`] reports every panic of a device program through the device's log.

use crate::error::BoxError;
use std::any::Any;
use std::fmt::Display;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The text a panic was raised with (`panic!("...")` gives a `&str` or a `String`).
pub(crate) fn message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Runs `f`; a panic comes back as its message. State touched by `f` may be half-updated after a
/// panic: callers only report the error and tear down.
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| message(&*p))
}

/// Runs work that may fail; a panic becomes an error `<what> panicked: <message>` (`what` is only
/// formatted then: hooks run once per message).
pub(crate) fn guarded<T>(what: &dyn Display, f: impl FnOnce() -> Result<T, BoxError>) -> Result<T, BoxError> {
    catch(f).unwrap_or_else(|p| Err(format!("{what} panicked: {p}").into()))
}

/// Reports every panic of the process through the device's log (a console or a log file), with
/// the thread and the place, instead of Rust's default text on stderr (lost with `--log-to-file`).
/// With `RUST_BACKTRACE` set, the backtrace follows. Only device programs install it: the process
/// is theirs.
pub(crate) fn log_panics() {
    std::panic::set_hook(Box::new(|info| {
        if crate::console::writing() {
            return; // stdout broke: logging about it would write to it again
        }
        let thread = std::thread::current();
        let at = info.location().map(|l| format!(" at {}:{}:{}", l.file(), l.line(), l.column())).unwrap_or_default();
        log::error!("thread '{}' panicked{at}: {}", thread.name().unwrap_or("<unnamed>"), message(info.payload()));
        let trace = std::backtrace::Backtrace::capture();
        if trace.status() == std::backtrace::BacktraceStatus::Captured {
            log::error!("{trace}");
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i09_panics_become_errors_with_their_message() {
        assert_eq!(catch(|| 7), Ok(7));
        assert_eq!(catch(|| -> u8 { panic!("static text") }), Err("static text".into()));
        assert_eq!(catch(|| -> u8 { panic!("formatted {}", 42) }), Err("formatted 42".into()));
        assert_eq!(catch(|| -> u8 { std::panic::panic_any(3u32) }), Err("(no message)".into()));
        let e = guarded(&"RUNNING", || -> Result<(), BoxError> { panic!("boom") }).unwrap_err();
        assert_eq!(e.to_string(), "RUNNING panicked: boom");
        let e = guarded(&"RUNNING", || -> Result<(), BoxError> { Err("plain error".into()) }).unwrap_err();
        assert_eq!(e.to_string(), "plain error", "errors pass unchanged");
    }
}
