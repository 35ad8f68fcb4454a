//! Checked conversions of C pointers, checked in release builds too.
//!
//! - [`refp`] and [`mutp`] turn a handle pointer into a reference, and refuse NULL with
//!   `FMQ_ERROR_NULL`.
//! - [`check_out`] checks an out-parameter before any work is done, so that a call writes it only
//!   on success.
//! - [`give`] hands a new handle to the caller through an out-parameter, and [`take`] frees it
//!   again.

use crate::error::{fail, fmq_result, FMQ_ERROR_NULL};

/// `&T` from a handle pointer.
///
/// # Safety
/// `p` must be NULL or a valid pointer to a live `T` for the call's duration, not mutated meanwhile.
pub(crate) unsafe fn refp<'a, T>(p: *const T, what: &str) -> Result<&'a T, fmq_result> {
    // SAFETY: non-null pointers are valid per the caller's contract.
    unsafe { p.as_ref() }.ok_or_else(|| fail(FMQ_ERROR_NULL, format!("{what} is NULL")))
}

/// `&mut T` from a handle pointer.
///
/// # Safety
/// `p` must be NULL or a valid, exclusive pointer to a live `T` for the call's duration.
pub(crate) unsafe fn mutp<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, fmq_result> {
    // SAFETY: non-null pointers are valid and exclusive per the caller's contract.
    unsafe { p.as_mut() }.ok_or_else(|| fail(FMQ_ERROR_NULL, format!("{what} is NULL")))
}

/// Checks an out-parameter before any work is done (so it is written only on success).
pub(crate) fn check_out<T>(out: *mut *mut T) -> Result<(), fmq_result> {
    if out.is_null() {
        Err(fail(FMQ_ERROR_NULL, "out-parameter is NULL"))
    } else {
        Ok(())
    }
}

/// Writes a new handle to a checked out-parameter.
///
/// # Safety
/// `out` must be valid for a write (checked non-null by `check_out`).
pub(crate) unsafe fn give<T>(out: *mut *mut T, v: T) {
    // SAFETY: valid per the caller's contract; ownership of the box goes to the C side, which returns
    // it through the matching `_free`.
    unsafe { *out = Box::into_raw(Box::new(v)) };
}

/// Frees a handle made by `give` (NULL is fine).
///
/// # Safety
/// `p` must be NULL or come from `give` and not be used afterwards.
pub(crate) unsafe fn take<T>(p: *mut T) {
    if !p.is_null() {
        // SAFETY: it came from Box::into_raw in `give` and is freed once.
        drop(unsafe { Box::from_raw(p) });
    }
}

/// Unwraps a `Result<fmq_result, fmq_result>` into the code.
pub(crate) fn code(r: Result<fmq_result, fmq_result>) -> fmq_result {
    r.unwrap_or_else(|e| e)
}
