//! Result codes, the calling thread's last error, and the panic boundary that every export goes
//! through.
//!
//! - [`fmq_result`] is the result of a call that is not a transfer. [`code_of`] is the one place
//!   where an error's kind becomes a code.
//! - Each thread keeps the text of its last error. [`fail`] records it, and [`fmq_last_error`]
//!   copies it out.
//! - [`guard`], [`guard_transfer`] and [`guard_value`] run an export's body and stop a panic
//!   there. The panic becomes `FMQ_ERROR_PANIC`, -1, or the call's default value.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Result of a call that is not a transfer. `FMQ_OK` is 0; errors are non-zero and namespaced.
/// `fmq_result_message` turns a code into text; `fmq_last_error` gives the details of the last
/// error of the calling thread.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum fmq_result {
    /// Success.
    FMQ_OK = 0,
    /// A required pointer argument was NULL.
    FMQ_ERROR_NULL = 7001,
    /// An argument was invalid (not UTF-8, out of range, unknown name).
    FMQ_ERROR_INVALID = 7002,
    /// A channel or option configuration was refused.
    FMQ_ERROR_CONFIG = 7003,
    /// A transport could not be created or used.
    FMQ_ERROR_TRANSPORT = 7004,
    /// Memory for a message could not be allocated (shared-memory segment full).
    FMQ_ERROR_ALLOC = 7005,
    /// A channel, property or index does not exist.
    FMQ_ERROR_NOT_FOUND = 7006,
    /// A caller's buffer is too small (the needed size was written where the call says).
    FMQ_ERROR_BUFFER = 7007,
    /// Rust code panicked; the panic was stopped at the C boundary.
    FMQ_ERROR_PANIC = 7008,
    /// A command line held a token that is no option (`fmq_last_error` names it).
    FMQ_ERROR_UNKNOWN_OPTION = 7009,
    /// The call is not possible in the object's state (a device that already runs, say).
    FMQ_ERROR_STATE = 7010,
}

pub use fmq_result::*;

thread_local! {
    static LAST: RefCell<String> = const { RefCell::new(String::new()) };
}

/// The calling thread's last error text (for tests).
#[cfg(test)]
pub(crate) fn last_error_text() -> String {
    LAST.with(|l| l.borrow().clone())
}

/// Records the details of an error for `fmq_last_error`.
pub(crate) fn set_last(text: impl Into<String>) {
    let t = text.into();
    log::debug!("fairmq-rs C ABI error: {t}");
    record(t);
}

/// Stores the text only: this runs outside `catch_unwind` on the panic path, so it must not panic
/// itself (no logging; the thread-local may already be gone while the thread exits).
fn record(text: String) {
    let _ = LAST.try_with(|l| {
        if let Ok(mut last) = l.try_borrow_mut() {
            *last = text;
        }
    });
}

/// The code of an error of `kind`: the one place where the crates' errors become codes.
pub(crate) fn code_of(kind: fairmq::ErrorKind) -> fmq_result {
    match kind {
        fairmq::ErrorKind::Invalid => FMQ_ERROR_INVALID,
        fairmq::ErrorKind::Config => FMQ_ERROR_CONFIG,
        fairmq::ErrorKind::NotFound => FMQ_ERROR_NOT_FOUND,
        fairmq::ErrorKind::Alloc => FMQ_ERROR_ALLOC,
        _ => FMQ_ERROR_TRANSPORT,
    }
}

/// Records `e` and returns the code of its kind.
pub(crate) fn fail_kind(e: fairmq::Error) -> fmq_result {
    fail(code_of(e.kind()), e)
}

/// Records `e` and returns `code`.
pub(crate) fn fail(code: fmq_result, e: impl std::fmt::Display) -> fmq_result {
    set_last(e.to_string());
    code
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Runs `f`; a panic becomes `FMQ_ERROR_PANIC` instead of unwinding into C.
pub(crate) fn guard(f: impl FnOnce() -> fmq_result) -> fmq_result {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        record(format!("panic: {}", panic_text(&*p)));
        FMQ_ERROR_PANIC
    })
}

/// Like [`guard`] for transfers: a panic becomes -1 (FairMQ's error code).
pub(crate) fn guard_transfer(f: impl FnOnce() -> i64) -> i64 {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        record(format!("panic: {}", panic_text(&*p)));
        -1
    })
}

/// Like [`guard`] for calls that return a value; `default` on panic.
pub(crate) fn guard_value<T>(default: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        record(format!("panic: {}", panic_text(&*p)));
        default
    })
}

/// A NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `p` must be NULL or point to a NUL-terminated string valid for the call.
// SAFETY: unsafe to call because `p` is dereferenced as a C string (contract above).
pub(crate) unsafe fn str_arg<'a>(p: *const c_char) -> Result<&'a str, fmq_result> {
    if p.is_null() {
        return Err(fail(FMQ_ERROR_NULL, "string argument is NULL"));
    }
    // SAFETY: non-null and NUL-terminated per the caller's contract.
    unsafe { CStr::from_ptr(p) }.to_str().map_err(|_| fail(FMQ_ERROR_INVALID, "string argument is not UTF-8"))
}

/// Copies `text` (NUL-terminated) into a caller's buffer; `written` gets the length without NUL,
/// also when the buffer is too small (then `FMQ_ERROR_BUFFER`).
///
/// # Safety
/// `buf` must be NULL or valid for `len` bytes; `written` NULL or valid.
// SAFETY: unsafe to call because `buf` and `written` are written through (contract above).
pub(crate) unsafe fn copy_out(text: &str, buf: *mut c_char, len: usize, written: *mut usize) -> fmq_result {
    // SAFETY: the caller's contract is ours.
    match unsafe { copy_text(text, buf, len, written) } {
        FMQ_OK => FMQ_OK,
        code => fail(code, format!("buffer of {len} bytes, {} needed", text.len() + 1)),
    }
}

/// [`copy_out`] without recording a too-small buffer as the last error (for `fmq_last_error`,
/// whose text must survive the first call that asks for its length).
///
/// # Safety
/// As [`copy_out`].
// SAFETY: unsafe to call because `buf` and `written` are written through (contract above).
unsafe fn copy_text(text: &str, buf: *mut c_char, len: usize, written: *mut usize) -> fmq_result {
    if !written.is_null() {
        // SAFETY: valid per the caller's contract.
        unsafe { *written = text.len() };
    }
    if buf.is_null() || len < text.len() + 1 {
        return FMQ_ERROR_BUFFER;
    }
    // SAFETY: `buf` has room for the text and its NUL (checked above); the regions cannot overlap.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), text.len());
        *buf.add(text.len()) = 0;
    }
    FMQ_OK
}

/// Text of a result code (static, never NULL). Takes an `int`, not `fmq_result`, so that any value a
/// C caller holds is valid here: an unknown code gives "unknown result code".
#[no_mangle]
pub extern "C" fn fmq_result_message(code: c_int) -> *const c_char {
    guard_value(c"unknown result code".as_ptr(), || result_text(code).as_ptr())
}

/// The text of `code`; a C `int` is matched against the enumerators' values (converting it to
/// `fmq_result` first would be undefined behaviour for a value that is none of them).
fn result_text(code: c_int) -> &'static CStr {
    const CODES: [(fmq_result, &CStr); 11] = [
        (FMQ_OK, c"success"),
        (FMQ_ERROR_NULL, c"a required pointer argument was NULL"),
        (FMQ_ERROR_INVALID, c"invalid argument"),
        (FMQ_ERROR_CONFIG, c"invalid configuration"),
        (FMQ_ERROR_TRANSPORT, c"transport error"),
        (FMQ_ERROR_ALLOC, c"out of memory for a message"),
        (FMQ_ERROR_NOT_FOUND, c"not found"),
        (FMQ_ERROR_BUFFER, c"buffer too small"),
        (FMQ_ERROR_PANIC, c"internal error (a panic was stopped at the C boundary)"),
        (FMQ_ERROR_UNKNOWN_OPTION, c"unrecognised option"),
        (FMQ_ERROR_STATE, c"not possible in the current state"),
    ];
    CODES.iter().find(|(c, _)| *c as c_int == code).map_or(c"unknown result code", |(_, text)| text)
}

/// Text of a transfer result: bytes (>= 0), -1 error, -2 timeout, -3 interrupted (static).
#[no_mangle]
pub extern "C" fn fmq_transfer_message(code: i64) -> *const c_char {
    guard_value(c"error".as_ptr(), || {
        let s: &'static CStr = match code {
            c if c >= 0 => c"success",
            -2 => c"timeout",
            -3 => c"interrupted",
            _ => c"error",
        };
        s.as_ptr()
    })
}

/// Copies the details of the calling thread's last error into `buf` (NUL-terminated).
/// `written` (may be NULL) receives the text length. Returns `FMQ_ERROR_BUFFER` if `len` is too
/// small; the last error stays what it was, so a first call with `len` 0 can ask for the length.
///
/// # Safety
/// `buf` must be valid for `len` bytes (or NULL with `len` 0); `written` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_last_error(buf: *mut c_char, len: usize, written: *mut usize) -> fmq_result {
    guard(|| {
        let text = LAST.try_with(|l| l.borrow().clone()).unwrap_or_default();
        // SAFETY: the caller's contract is copy_text's.
        unsafe { copy_text(&text, buf, len, written) }
    })
}

/// Panics inside the boundary on purpose, so C programs and tests can check that a Rust panic
/// comes back as `FMQ_ERROR_PANIC` and never aborts or unwinds into C.
#[no_mangle]
pub extern "C" fn fmq_debug_panic() -> fmq_result {
    guard(|| panic!("fmq_debug_panic was called"))
}

/// The version, NUL-terminated for C.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// The library version (static, e.g. "0.1.0").
#[no_mangle]
pub extern "C" fn fmq_version() -> *const c_char {
    guard_value(VERSION.as_ptr().cast(), || VERSION.as_ptr().cast())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_message_takes_any_int() {
        // SAFETY: the returned pointers are static NUL-terminated strings.
        let text = |c: c_int| unsafe { CStr::from_ptr(fmq_result_message(c)) }.to_str().unwrap();
        assert_eq!(text(FMQ_OK as c_int), "success");
        assert_eq!(text(FMQ_ERROR_PANIC as c_int), "internal error (a panic was stopped at the C boundary)");
        for unknown in [-1, 1, 7000, 7011, c_int::MAX, c_int::MIN] {
            assert_eq!(text(unknown), "unknown result code");
        }
    }

    #[test]
    fn asking_for_the_last_errors_length_keeps_the_error() {
        set_last("the real error");
        let mut n = 0usize;
        // SAFETY: NULL buffer with length 0 and a valid `written`, as documented.
        assert_eq!(unsafe { fmq_last_error(std::ptr::null_mut(), 0, &mut n) }, FMQ_ERROR_BUFFER);
        assert_eq!(n, "the real error".len());
        let mut short = [0 as c_char; 4];
        // SAFETY: the buffer is valid for its length.
        assert_eq!(unsafe { fmq_last_error(short.as_mut_ptr(), short.len(), &mut n) }, FMQ_ERROR_BUFFER);
        let mut buf = vec![0 as c_char; n + 1];
        // SAFETY: the buffer is valid for its length.
        assert_eq!(unsafe { fmq_last_error(buf.as_mut_ptr(), buf.len(), std::ptr::null_mut()) }, FMQ_OK);
        // SAFETY: fmq_last_error wrote a NUL-terminated string into `buf`.
        assert_eq!(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap(), "the real error");
    }

    /// Errors of the three crates become codes by their kind alone (issue 20): the caller's
    /// mistakes, refused configurations, missing things, no memory, and the rest.
    #[test]
    fn i20_errors_become_codes_by_their_kind() {
        use fairmq::Error;
        use fairmq_shm::ShmError;
        use fairmq_zmq::{AddressProblem, RegionError, SocketError};
        let bad_address =
            SocketError::InvalidAddress { address: "tcp://host".into(), problem: AddressProblem::MissingPort };
        let unresolved = SocketError::Resolve { host: "no-such-host".into() };
        let cases: Vec<(Error, fmq_result)> = vec![
            (bad_address.into(), FMQ_ERROR_INVALID),
            (unresolved.into(), FMQ_ERROR_TRANSPORT),
            (Error::NoChannel("data".into()), FMQ_ERROR_NOT_FOUND),
            (ShmError::BadAlloc { size: 1 << 40, alignment: 0, free: 0 }.into(), FMQ_ERROR_ALLOC),
            (ShmError::Config("segment size 1".into()).into(), FMQ_ERROR_CONFIG),
            (ShmError::ForeignRegion { id: 3 }.into(), FMQ_ERROR_INVALID),
            (RegionError::OutsideRegion { offset: 9, size: 9, region_size: 10 }.into(), FMQ_ERROR_INVALID),
            (RegionError::IdsExhausted.into(), FMQ_ERROR_TRANSPORT),
            (fairmq_zmq::AllocError { size: usize::MAX, alignment: 0 }.into(), FMQ_ERROR_ALLOC),
            (Error::Transport("nanomsg".into()), FMQ_ERROR_INVALID),
        ];
        for (e, want) in cases {
            let text = e.to_string();
            assert_eq!(fail_kind(e), want, "{text}");
        }
    }
}
