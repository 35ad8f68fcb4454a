//! Managed segments and unmanaged regions of a shared-memory session, made without a transport
//! (FairMQ's `shmem::Segment` and `shmem::UnmanagedRegion`).
//!
//! A program preallocates them, and the transports that join the session later use them.
//!
//! - [`fmq_shm_segment_open`] opens or creates a managed segment ([`fmq_shm_segment`]). A
//!   transport of the session whose segment id matches uses it.
//! - [`fmq_shm_region_open`] opens or creates an unmanaged region ([`fmq_shm_region`]). A
//!   transport adopts it with `fmq_region_new` and the same `fmq_region_config.id`.
//!
//! Both are registered in the session. So the session's cleanup removes them, and so does its
//! last transport, unless `--shm-no-cleanup` is given.

use crate::error::*;
use crate::ptr::*;
use crate::region::{config_arg, fmq_region_config};
use crate::shm_monitor::shm_id_arg;
use fairmq_shm::external::{ExternalRegion, ExternalSegment};
#[cfg(test)]
use fairmq_shm::Names;
use fairmq_shm::ShmError;
use std::ffi::{c_char, c_void};
use std::time::Duration;

/// A managed segment made or opened without a transport. Thread-safe.
#[allow(non_camel_case_types)]
pub struct fmq_shm_segment(ExternalSegment);

/// An unmanaged region made or opened without a transport (its controller until a transport
/// adopts it). Thread-safe; `fmq_shm_region_free` only when no other call on it runs.
#[allow(non_camel_case_types)]
pub struct fmq_shm_region(ExternalRegion);

// The thread-safety promises above rest on this.
const _: fn() = || {
    fn thread_safe<T: Send + Sync>() {}
    thread_safe::<ExternalSegment>();
    thread_safe::<ExternalRegion>();
};

/// Records a shared-memory error and returns the code of its kind.
fn fail_shm(e: ShmError) -> fmq_result {
    fail(code_of(e.kind()), e)
}

/// Opens managed segment `id` of session `shm_id` (8 hex digits, see `fmq_shm_id_for_session`),
/// or creates it with `size` bytes, and registers it in the session, creating the session if
/// needed (FairMQ's `shmem::Segment`). An existing segment keeps its size. `*out` owns the handle;
/// freeing it never removes the segment.
///
/// # Safety
/// `shm_id` NUL-terminated; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_segment_open(
    shm_id: *const c_char,
    id: u16,
    size: u64,
    out: *mut *mut fmq_shm_segment,
) -> fmq_result {
    guard(|| {
        code((|| {
            check_out(out)?;
            // SAFETY: contract as documented.
            let shm_id = unsafe { shm_id_arg(shm_id) }?;
            let seg = ExternalSegment::open_or_create(shm_id, id, size).map_err(fail_shm)?;
            // SAFETY: `out` checked and valid per the contract.
            unsafe { give(out, fmq_shm_segment(seg)) };
            Ok(FMQ_OK)
        })())
    })
}

/// Unmaps a segment (NULL is fine); the segment stays in the session.
///
/// # Safety
/// `s` is NULL or an owned segment, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_segment_free(s: *mut fmq_shm_segment) {
    // SAFETY: contract of `take`.
    guard_value((), || unsafe { take(s) })
}

/// The segment's size in bytes (0 for NULL).
///
/// # Safety
/// `s` is NULL or a valid segment.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_segment_size(s: *const fmq_shm_segment) -> u64 {
    // SAFETY: valid or NULL per the contract.
    guard_value(0, || unsafe { refp(s, "segment") }.map_or(0, |s| s.0.size()))
}

/// The segment's first byte in this process (NULL for NULL). Its allocator owns the bytes: use
/// them through messages only.
///
/// # Safety
/// `s` is NULL or a valid segment.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_segment_data(s: *const fmq_shm_segment) -> *mut c_void {
    guard_value(std::ptr::null_mut(), || {
        // SAFETY: valid or NULL per the contract.
        unsafe { refp(s, "segment") }.map_or(std::ptr::null_mut(), |s| s.0.data_ptr().cast())
    })
}

/// The segment's free bytes (0 for NULL).
///
/// # Safety
/// `s` is NULL or a valid segment.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_segment_free_memory(s: *const fmq_shm_segment) -> u64 {
    // SAFETY: valid or NULL per the contract.
    guard_value(0, || unsafe { refp(s, "segment") }.map_or(0, |s| s.0.free_memory()))
}

/// Writes zeros over the segment's free memory (safe while transports use it).
///
/// # Safety
/// `s` is a valid segment.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_segment_zero(s: *const fmq_shm_segment) -> fmq_result {
    guard(|| {
        // SAFETY: valid per the contract.
        code(unsafe { refp(s, "segment") }.and_then(|s| s.0.zero().map(|()| FMQ_OK).map_err(fail_shm)))
    })
}

/// Locks the segment's pages in RAM (`mlock`); `FMQ_ERROR_TRANSPORT` when not allowed (the
/// privilege, or `RLIMIT_MEMLOCK`).
///
/// # Safety
/// `s` is a valid segment.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_segment_lock(s: *const fmq_shm_segment) -> fmq_result {
    guard(|| {
        // SAFETY: valid per the contract.
        code(unsafe { refp(s, "segment") }.and_then(|s| s.0.lock().map(|()| FMQ_OK).map_err(fail_shm)))
    })
}

/// Unlinks managed segment `id` of session `shm_id` (FairMQ's `Segment::Remove`); `*removed`
/// (if not NULL) tells whether there was one.
///
/// # Safety
/// `shm_id` NUL-terminated; `removed` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_segment_remove(shm_id: *const c_char, id: u16, removed: *mut bool) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: contract as documented.
            let shm_id = unsafe { shm_id_arg(shm_id) }?;
            let was = ExternalSegment::remove(shm_id, id).map_err(fail_shm)?;
            if !removed.is_null() {
                // SAFETY: a non-NULL `removed` is valid for a write (contract).
                unsafe { *removed = was };
            }
            Ok(FMQ_OK)
        })())
    })
}

/// Opens region `cfg->id` (required) of session `shm_id`, or creates it with `size` bytes and
/// registers it, creating the session if needed (FairMQ's `shmem::UnmanagedRegion`, a controller).
/// An existing region must have `size` bytes (0: any). `cfg->lock`, `zero` and `creation_flags`
/// apply as for `fmq_region_new`; `remove_on_destruction` says whether `fmq_shm_region_free`
/// removes it. A transport of the session adopts it with `fmq_region_new` and the same id.
/// Errors: `FMQ_ERROR_CONFIG` for a missing id, a size that does not match, or an id destroyed
/// before in the session; `FMQ_ERROR_TRANSPORT` when the region cannot be made, locked or zeroed.
///
/// # Safety
/// `shm_id` NUL-terminated; `cfg` valid (initialised with `fmq_region_config_init`; its `path`
/// NULL or NUL-terminated); `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_region_open(
    shm_id: *const c_char,
    size: u64,
    cfg: *const fmq_region_config,
    out: *mut *mut fmq_shm_region,
) -> fmq_result {
    guard(|| {
        code((|| {
            check_out(out)?;
            if cfg.is_null() {
                return Err(fail(FMQ_ERROR_NULL, "cfg is NULL (a region made without a transport needs its id)"));
            }
            // SAFETY: valid per the contract.
            let (shm_id, config) = unsafe { (shm_id_arg(shm_id)?, config_arg(cfg)?) };
            let region = ExternalRegion::open_or_create(shm_id, size, &config).map_err(fail_shm)?;
            // SAFETY: `out` checked and valid per the contract.
            unsafe { give(out, fmq_shm_region(region)) };
            Ok(FMQ_OK)
        })())
    })
}

/// Frees a region handle (NULL is fine): removes the region if it was opened with
/// `remove_on_destruction`, unless its session was removed meanwhile.
///
/// # Safety
/// `r` is NULL or an owned region, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_region_free(r: *mut fmq_shm_region) {
    // SAFETY: contract of `take`.
    guard_value((), || unsafe { take(r) })
}

/// The region's first byte in this process (NULL for NULL).
///
/// # Safety
/// `r` is NULL or a valid region; the pointer is valid for `fmq_shm_region_size` bytes until the
/// region is freed.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_region_data(r: *const fmq_shm_region) -> *mut c_void {
    guard_value(std::ptr::null_mut(), || {
        // SAFETY: valid or NULL per the contract.
        unsafe { refp(r, "region") }.map_or(std::ptr::null_mut(), |r| r.0.data_ptr().cast())
    })
}

/// The region's size in bytes (0 for NULL).
///
/// # Safety
/// `r` is NULL or a valid region.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_region_size(r: *const fmq_shm_region) -> u64 {
    // SAFETY: valid or NULL per the contract.
    guard_value(0, || unsafe { refp(r, "region") }.map_or(0, |r| r.0.size() as u64))
}

/// The region's id, or -1 for NULL.
///
/// # Safety
/// `r` is NULL or a valid region.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_region_id(r: *const fmq_shm_region) -> i32 {
    // SAFETY: valid or NULL per the contract.
    guard_value(-1, || unsafe { refp(r, "region") }.map_or(-1, |r| i32::from(r.0.id())))
}

/// Writes zeros over the whole region. Only while no message refers to any of its pieces.
///
/// # Safety
/// `r` is a valid region.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_region_zero(r: *const fmq_shm_region) -> fmq_result {
    guard(|| {
        // SAFETY: valid per the contract.
        code(unsafe { refp(r, "region") }.and_then(|r| r.0.zero().map(|()| FMQ_OK).map_err(fail_shm)))
    })
}

/// Locks the region's pages in RAM (`mlock`); `FMQ_ERROR_TRANSPORT` when not allowed.
///
/// # Safety
/// `r` is a valid region.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_region_lock(r: *const fmq_shm_region) -> fmq_result {
    guard(|| {
        // SAFETY: valid per the contract.
        code(unsafe { refp(r, "region") }.and_then(|r| r.0.lock().map(|()| FMQ_OK).map_err(fail_shm)))
    })
}

/// Sets the region's linger in ms (kept for FairMQ's API: acknowledgements go to the adopting
/// transport's region, which has its own).
///
/// # Safety
/// `r` is a valid region.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_region_set_linger(r: *const fmq_shm_region, linger_ms: u32) -> fmq_result {
    guard(|| {
        // SAFETY: valid per the contract.
        code(unsafe { refp(r, "region") }.map(|r| {
            r.0.set_linger(Duration::from_millis(u64::from(linger_ms)));
            FMQ_OK
        }))
    })
}

/// The region's linger in ms (0 for NULL).
///
/// # Safety
/// `r` is NULL or a valid region.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_region_get_linger(r: *const fmq_shm_region) -> u32 {
    guard_value(0, || {
        // SAFETY: valid or NULL per the contract.
        unsafe { refp(r, "region") }.map_or(0, |r| u32::try_from(r.0.linger().as_millis()).unwrap_or(u32::MAX))
    })
}

/// Whether freeing the handle removes the region (false for NULL).
///
/// # Safety
/// `r` is NULL or a valid region.
#[no_mangle]
pub unsafe extern "C" fn fmq_shm_region_remove_on_destruction(r: *const fmq_shm_region) -> bool {
    // SAFETY: valid or NULL per the contract.
    guard_value(false, || unsafe { refp(r, "region") }.is_ok_and(|r| r.0.remove_on_destruction()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region::fmq_region_config_init;
    use crate::shm_monitor::fmq_shm_free_memory;
    use fairmq_shm::testing::session::{session_objects, unique_session, SessionGuard};
    use std::ffi::CString;
    use std::ptr::{null, null_mut};

    fn config(id: i32) -> fmq_region_config {
        let mut c = std::mem::MaybeUninit::uninit();
        // SAFETY: a valid out pointer; initialised on FMQ_OK.
        assert_eq!(unsafe { fmq_region_config_init(c.as_mut_ptr()) }, FMQ_OK);
        // SAFETY: just initialised.
        let mut c = unsafe { c.assume_init() };
        c.id = id;
        c
    }

    #[test]
    fn segments_and_regions_without_a_transport() {
        let guard = SessionGuard::new(&unique_session("ffiext"));
        let id = CString::new(fairmq_shm::shm_id(guard.session())).unwrap();
        let mut seg = null_mut();
        // SAFETY: valid arguments.
        assert_eq!(unsafe { fmq_shm_segment_open(id.as_ptr(), 0, 16 << 20, &mut seg) }, FMQ_OK);
        let mut free = 0;
        // SAFETY: `seg` is a valid segment; valid arguments.
        unsafe {
            assert_eq!((fmq_shm_segment_size(seg), fmq_shm_segment_zero(seg)), (16 << 20, FMQ_OK));
            assert!(!fmq_shm_segment_data(seg).is_null());
            assert_eq!(fmq_shm_free_memory(id.as_ptr(), 0, &mut free), FMQ_OK);
            assert_eq!(fmq_shm_segment_free_memory(seg), free);
        }

        let mut region = null_mut();
        let mut cfg = config(-1);
        // SAFETY: valid arguments.
        assert_eq!(unsafe { fmq_shm_region_open(id.as_ptr(), 1 << 20, &cfg, &mut region) }, FMQ_ERROR_CONFIG);
        assert!(crate::error::last_error_text().contains("needs an id"));
        // SAFETY: valid arguments.
        assert_eq!(unsafe { fmq_shm_region_open(id.as_ptr(), 1 << 20, null(), &mut region) }, FMQ_ERROR_NULL);
        cfg.id = 7;
        // SAFETY: valid arguments.
        assert_eq!(unsafe { fmq_shm_region_open(id.as_ptr(), 1 << 20, &cfg, &mut region) }, FMQ_OK);
        let mut other = null_mut();
        // SAFETY: valid arguments.
        let mismatch = unsafe { fmq_shm_region_open(id.as_ptr(), 2 << 20, &cfg, &mut other) };
        assert_eq!((mismatch, other), (FMQ_ERROR_CONFIG, null_mut()), "out untouched on failure");
        // SAFETY: `region` is a valid region.
        unsafe {
            assert_eq!((fmq_shm_region_id(region), fmq_shm_region_size(region)), (7, 1 << 20));
            assert_eq!((fmq_shm_region_zero(region), fmq_shm_region_set_linger(region, 250)), (FMQ_OK, FMQ_OK));
            assert_eq!(fmq_shm_region_get_linger(region), 250);
            assert!(fmq_shm_region_remove_on_destruction(region));
            assert!(!fmq_shm_region_data(region).is_null());
            assert_eq!((fmq_shm_region_id(null()), fmq_shm_region_size(null())), (-1, 0));
        }
        let region_name = Names::new(id.to_str().unwrap()).region(7);
        assert!(session_objects(guard.session()).contains(&region_name));
        // SAFETY: owned handles, not used afterwards.
        unsafe {
            fmq_shm_region_free(region);
            fmq_shm_segment_free(seg);
        }
        assert!(!session_objects(guard.session()).contains(&region_name), "removed on destruction");
        let mut removed = false;
        // SAFETY: valid arguments.
        assert_eq!(unsafe { fmq_shm_segment_remove(id.as_ptr(), 0, &mut removed) }, FMQ_OK);
        assert!(removed, "the segment outlived its handle");
        // SAFETY: valid arguments.
        assert_eq!(unsafe { fmq_shm_segment_open(c"../x".as_ptr(), 0, 1, &mut seg) }, FMQ_ERROR_INVALID);
    }
}
