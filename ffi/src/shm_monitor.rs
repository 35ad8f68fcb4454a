//! Shared-memory sessions as FairMQ's static `fair::mq::shmem::Monitor` sees them.
//!
//! A session is named by its shm id: 8 hex digits that [`fmq_shm_id_for_session`] derives from
//! the session name, as devices do. The other calls take that id.
//!
//! - [`fmq_shm_free_memory`], [`fmq_shm_segment_present`] and [`fmq_shm_region_present`] look at
//!   one segment or region.
//! - [`fmq_shm_report`], [`fmq_shm_debug_info`] and [`fmq_shm_list_all`] describe sessions as
//!   text.
//! - [`fmq_shm_cleanup`] removes every object of a session. [`fmq_shm_reset_content`] forgets
//!   every allocation in its segments.

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

/// The segment report of session `shm_id` (FairMQ's `PrintShm`: segments with free and used
/// memory, regions, attached processes) into `buf`; `FMQ_ERROR_NOT_FOUND` when it has none.
///
/// # Safety
/// `shm_id` NUL-terminated; `buf` valid for `len` bytes; `written` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_report(
    shm_id: *const c_char,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: contract as documented.
            let id = unsafe { shm_id_arg(shm_id)? };
            match monitor::report(id).map_err(|e| fail(FMQ_ERROR_TRANSPORT, e))? {
                // SAFETY: contract as documented.
                Some(text) => Ok(unsafe { copy_out(&text, buf, len, written) }),
                None => Err(fail(FMQ_ERROR_NOT_FOUND, format!("no segments found for shmid '{id}'"))),
            }
        })())
    })
}

/// Every block in use in session `shm_id`, a line each: `<segment>\t<offset>\t<pid>\t<size>\t<references>`
/// (pid 0: its process is not attached), into `buf` (FairMQ's `GetDebugInfo`);
/// `FMQ_ERROR_NOT_FOUND` when the session has no management segment.
///
/// # Safety
/// `shm_id` NUL-terminated; `buf` valid for `len` bytes; `written` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_debug_info(
    shm_id: *const c_char,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: contract as documented.
            let id = unsafe { shm_id_arg(shm_id)? };
            let Some(segments) = monitor::used_blocks(id).map_err(|e| fail(FMQ_ERROR_TRANSPORT, e))? else {
                return Err(fail(FMQ_ERROR_NOT_FOUND, format!("no segments found for shmid '{id}'")));
            };
            let mut lines = Vec::new();
            for (seg, blocks) in segments {
                for b in blocks {
                    lines.push(format!("{seg}\t{}\t{}\t{}\t{}", b.offset, b.pid.unwrap_or(0), b.size, b.references));
                }
            }
            // SAFETY: contract as documented.
            Ok(unsafe { copy_out(&lines.join("\n"), buf, len, written) })
        })())
    })
}

/// Every session found under `dir` (`/dev/shm` for NULL), as `fairmq-shmmonitor --list-all`
/// lists them (FairMQ's `ListAll`), into `buf`.
///
/// # Safety
/// `dir` NUL-terminated or NULL; `buf` valid for `len` bytes; `written` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_list_all(
    dir: *const c_char,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    guard(|| {
        code((|| {
            let dir = if dir.is_null() {
                "/dev/shm"
            } else {
                // SAFETY: contract as documented.
                unsafe { str_arg(dir)? }
            };
            let text = monitor::list_all(std::path::Path::new(dir)).map_err(|e| fail(FMQ_ERROR_TRANSPORT, e))?;
            // SAFETY: contract as documented.
            Ok(unsafe { copy_out(&text, buf, len, written) })
        })())
    })
}

/// Forgets every allocation in session `shm_id`'s segments (FairMQ's experimental
/// `ResetContent`; refused while a transport that is not provably dead is attached), writing
/// what it did, a line each, into `buf`; the first failure is returned once everything was tried.
///
/// # Safety
/// `shm_id` NUL-terminated; `buf` valid for `len` bytes; `written` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_reset_content(
    shm_id: *const c_char,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: contract as documented.
            let id = unsafe { shm_id_arg(shm_id)? };
            let mut lines = Vec::new();
            let r = monitor::reset_content(id, &mut |l| lines.push(l.to_owned()));
            // SAFETY: contract as documented.
            let copied = unsafe { copy_out(&lines.join("\n"), buf, len, written) };
            r.map_err(|e| fail(FMQ_ERROR_TRANSPORT, e))?;
            Ok(copied)
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
    use crate::message::{fmq_message_free, fmq_message_new_size};
    use crate::transport::{fmq_transport_free, fmq_transport_new};
    use std::ffi::{CStr, CString};

    /// A shmem transport of its own session and a message of it, freed (the session with them)
    /// when the test ends, also when it fails.
    struct Live(*mut crate::transport::fmq_transport, *mut crate::message::fmq_message);
    impl Drop for Live {
        fn drop(&mut self) {
            // SAFETY: made by the test, freed once, the message before its transport.
            unsafe {
                fmq_message_free(self.1);
                fmq_transport_free(self.0);
            }
        }
    }

    fn text(f: impl Fn(*mut c_char, usize, *mut usize) -> fmq_result) -> (fmq_result, String) {
        let mut buf = vec![0 as c_char; 1 << 16];
        let r = f(buf.as_mut_ptr(), buf.len(), std::ptr::null_mut());
        // SAFETY: NUL-terminated by copy_out (the buffer is large enough).
        (r, unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
    }

    #[test]
    fn a_live_sessions_report_blocks_and_listing_and_its_content_cannot_be_reset() {
        let session = format!("ffi-monitor-{}", std::process::id());
        let args: Vec<CString> = ["--session", &session, "--shm-segment-size", "10000000"]
            .iter()
            .map(|a| CString::new(*a).unwrap())
            .collect();
        let argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        let (mut t, mut m) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: valid arguments.
        unsafe {
            assert_eq!(
                fmq_transport_new(c"shmem".as_ptr(), c"mon".as_ptr(), argv.len() as i32, argv.as_ptr(), &mut t),
                FMQ_OK
            );
            assert_eq!(fmq_message_new_size(t, 1000, &mut m), FMQ_OK);
        }
        let _live = Live(t, m);
        let id = CString::new(fairmq_shm::shm_id(&session)).unwrap();
        // SAFETY: a valid shm id (or NULL directory) and buffer.
        let (r, report) = text(|b, l, n| unsafe { fmq_shm_report(id.as_ptr(), b, l, n) });
        assert_eq!(r, FMQ_OK);
        assert!(report.contains(&format!("session: {session}")), "{report}");
        // SAFETY: a valid shm id (or NULL directory) and buffer.
        let (r, blocks) = text(|b, l, n| unsafe { fmq_shm_debug_info(id.as_ptr(), b, l, n) });
        assert_eq!(r, FMQ_OK);
        let mine: Vec<&str> =
            blocks.lines().filter(|l| l.split('\t').nth(2) == Some(&std::process::id().to_string())).collect();
        assert!(!mine.is_empty(), "the message's block, with this process as its creator: {blocks}");
        // SAFETY: a valid shm id (or NULL directory) and buffer.
        let (r, all) = text(|b, l, n| unsafe { fmq_shm_list_all(std::ptr::null(), b, l, n) });
        assert_eq!(r, FMQ_OK);
        assert!(all.contains(id.to_str().unwrap()), "{all}");
        // SAFETY: a valid shm id (or NULL directory) and buffer.
        let (r, _) = text(|b, l, n| unsafe { fmq_shm_reset_content(id.as_ptr(), b, l, n) });
        assert_ne!(r, FMQ_OK, "a session in use is not reset");
    }

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
