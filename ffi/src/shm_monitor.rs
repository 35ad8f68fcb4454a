//! Shared-memory sessions as FairMQ's static `fair::mq::shmem::Monitor` sees them: the shm id of a
//! session, free memory of a segment, presence of segments and regions, cleanup.

use crate::error::*;
use crate::ptr::*;
use fairmq_shm::monitor::{self, FreeMemoryError};
use fairmq_shm::Names;
use std::ffi::c_char;

/// The shm id (8 hex digits) of session `session` for the effective user, as devices derive it
/// (FairMQ's `makeShmIdStr`), into `buf`.
///
/// # Safety
/// `session` NUL-terminated; `buf` valid for `len` bytes; `written` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_id_for_session(
    session: *const c_char,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    guard(|| {
        // SAFETY: contract as documented.
        let session = match unsafe { str_arg(session) } {
            Ok(s) => s,
            Err(e) => return e,
        };
        // SAFETY: contract as documented.
        unsafe { copy_out(&fairmq_shm::shm_id(session), buf, len, written) }
    })
}

/// A shm id argument: 8 hex digits (what `fmq_shm_id_for_session` gives).
///
/// # Safety
/// `shm_id` NUL-terminated or NULL.
// SAFETY: unsafe to call because `shm_id` is read as a C string (contract above).
pub(crate) unsafe fn shm_id_arg<'a>(shm_id: *const c_char) -> Result<&'a str, fmq_result> {
    // SAFETY: the caller's contract.
    let id = unsafe { str_arg(shm_id) }?;
    if id.len() != 8 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(fail(FMQ_ERROR_INVALID, format!("'{id}' is no shm id (8 hexadecimal digits)")));
    }
    Ok(id)
}

/// The free bytes of managed segment `segment_id` of session `shm_id` into `*out`;
/// `FMQ_ERROR_NOT_FOUND` when the session has no management segment or no such segment (the last
/// error says which, in FairMQ's words).
///
/// # Safety
/// `shm_id` NUL-terminated; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_free_memory(shm_id: *const c_char, segment_id: u16, out: *mut u64) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: contract as documented.
            let (id, out) = unsafe { (shm_id_arg(shm_id)?, mutp(out, "out")?) };
            *out = monitor::free_memory(id, segment_id).map_err(|e| match e {
                FreeMemoryError::NoSession(_) | FreeMemoryError::NoSegment(_) => fail(FMQ_ERROR_NOT_FOUND, e),
                FreeMemoryError::Shm(e) => fail(FMQ_ERROR_TRANSPORT, e),
            })?;
            Ok(FMQ_OK)
        })())
    })
}

/// Removes every object of session `shm_id` (FairMQ's `Monitor::Cleanup`; with `full`, also the
/// monitor's lock: `CleanupFull`). Writes one line per object, `<name>\t1` (removed) or `<name>\t0`,
/// into `buf`; a session that has none gives no lines.
///
/// # Safety
/// `shm_id` NUL-terminated; `buf` valid for `len` bytes; `written` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_cleanup(
    shm_id: *const c_char,
    full: bool,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: contract as documented.
            let id = unsafe { shm_id_arg(shm_id)? };
            let removed = if full { monitor::cleanup_full(id) } else { monitor::cleanup(id) }
                .map_err(|e| fail(FMQ_ERROR_TRANSPORT, e))?;
            let lines: Vec<String> = removed.iter().map(|(n, ok)| format!("{n}\t{}", u8::from(*ok))).collect();
            // SAFETY: contract as documented.
            Ok(unsafe { copy_out(&lines.join("\n"), buf, len, written) })
        })())
    })
}

/// Whether managed segment `segment_id` of session `shm_id` exists (FairMQ's
/// `SegmentIsPresent`); false for bad arguments.
///
/// # Safety
/// `shm_id` NUL-terminated or NULL.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_segment_present(shm_id: *const c_char, segment_id: u16) -> bool {
    guard_value(false, || {
        // SAFETY: contract as documented.
        let Ok(id) = (unsafe { shm_id_arg(shm_id) }) else { return false };
        Names::path(&Names::new(id).segment(segment_id)).exists()
    })
}

/// Whether unmanaged region `region_id` of session `shm_id` exists (FairMQ's `RegionIsPresent`);
/// false for bad arguments.
///
/// # Safety
/// `shm_id` NUL-terminated or NULL.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_region_present(shm_id: *const c_char, region_id: u16) -> bool {
    guard_value(false, || {
        // SAFETY: contract as documented.
        let Ok(id) = (unsafe { shm_id_arg(shm_id) }) else { return false };
        Names::path(&Names::new(id).region(region_id)).exists()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::{CStr, CString};

    #[test]
    fn free_memory_names_what_is_missing() {
        let id = CString::new(fairmq_shm::shm_id_for(u32::MAX - 7, "no-such-session")).unwrap();
        let mut free = 0;
        // SAFETY: valid arguments.
        assert_eq!(unsafe { fmq_shm_free_memory(id.as_ptr(), 0, &mut free) }, FMQ_ERROR_NOT_FOUND);
        assert!(crate::error::last_error_text().starts_with("Could not find management segment for shmid"));
        // SAFETY: valid arguments.
        assert_eq!(unsafe { fmq_shm_free_memory(c"nothex!!".as_ptr(), 0, &mut free) }, FMQ_ERROR_INVALID);
        // SAFETY: valid arguments.
        assert!(!unsafe { fmq_shm_segment_present(id.as_ptr(), 0) });
        let mut buf = [0 as c_char; 64];
        // SAFETY: valid arguments.
        let r = unsafe { fmq_shm_cleanup(id.as_ptr(), false, buf.as_mut_ptr(), buf.len(), std::ptr::null_mut()) };
        assert_eq!(r, FMQ_OK);
        // SAFETY: NUL-terminated on success.
        assert_eq!(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap(), "");
    }
}
