//! Safe wrappers of the C shim over libpmix (`shim.c`); the only unsafe code of the pmix plugin.

use std::ffi::{c_char, c_int, CStr, CString};

extern "C" {
    fn fmq_pmix_init(nspace: *mut c_char, cap: usize, rank: *mut u32) -> c_int;
    fn fmq_pmix_job_size(size: *mut u32) -> c_int;
    fn fmq_pmix_put(key: *const c_char, text: *const c_char) -> c_int;
    fn fmq_pmix_fence(timeout_s: c_int) -> c_int;
    fn fmq_pmix_get(rank: u32, key: *const c_char, buf: *mut c_char, cap: usize, len: *mut usize) -> c_int;
    fn fmq_pmix_finalize() -> c_int;
    fn fmq_pmix_error(rc: c_int) -> *const c_char;
    fn fmq_pmix_out_of_resource() -> c_int;
}

/// A failed PMIx call: what was called and PMIx's text for the status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call} failed: {text} ({status})")]
pub(super) struct PmixError {
    /// The call.
    pub call: &'static str,
    /// PMIx's status code.
    pub status: i32,
    /// PMIx's text for it.
    pub text: String,
}

fn check(call: &'static str, rc: c_int) -> Result<(), PmixError> {
    if rc == 0 {
        return Ok(());
    }
    // SAFETY: PMIx_Error_string returns a static string for any status.
    let p = unsafe { fmq_pmix_error(rc) };
    let text = if p.is_null() {
        String::new()
    } else {
        // SAFETY: non-NULL, NUL-terminated and static (above).
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    };
    Err(PmixError { call, status: rc, text })
}

fn c_string(call: &'static str, s: &str) -> Result<CString, PmixError> {
    CString::new(s).map_err(|_| PmixError { call, status: -1, text: "text holds a NUL byte".into() })
}

/// Initialises PMIx (`PMIx_Init`) and returns this process's namespace and rank.
pub(super) fn init() -> Result<(String, u32), PmixError> {
    let mut ns = [0 as c_char; 512];
    let mut rank = 0u32;
    // SAFETY: a buffer of `ns.len()` bytes (more than PMIx's 256) and a rank slot.
    check("PMIx_Init", unsafe { fmq_pmix_init(ns.as_mut_ptr(), ns.len(), &mut rank) })?;
    // SAFETY: PMIx wrote a NUL-terminated namespace into the buffer (at most 256 bytes).
    let nspace = unsafe { CStr::from_ptr(ns.as_ptr()) }.to_string_lossy().into_owned();
    Ok((nspace, rank))
}

/// The number of processes of the job.
pub(super) fn job_size() -> Result<u32, PmixError> {
    let mut size = 0;
    // SAFETY: a slot for the size.
    check("PMIx_Get(PMIX_JOB_SIZE)", unsafe { fmq_pmix_job_size(&mut size) })?;
    Ok(size)
}

/// Publishes `text` under `key` for every process of the job (put and commit).
pub(super) fn put(key: &str, text: &str) -> Result<(), PmixError> {
    let (k, t) = (c_string("PMIx_Put", key)?, c_string("PMIx_Put", text)?);
    // SAFETY: NUL-terminated strings, copied by PMIx.
    check("PMIx_Put", unsafe { fmq_pmix_put(k.as_ptr(), t.as_ptr()) })
}

/// Waits until every process of the job has reached this fence, and collects what each one
/// published.
pub(super) fn fence(timeout_s: i32) -> Result<(), PmixError> {
    // SAFETY: no pointers.
    check("PMIx_Fence", unsafe { fmq_pmix_fence(timeout_s) })
}

/// What process `rank` published under `key`.
pub(super) fn get(rank: u32, key: &str) -> Result<String, PmixError> {
    let k = c_string("PMIx_Get", key)?;
    let mut buf = vec![0u8; 4096];
    loop {
        let mut len = 0usize;
        // SAFETY: a NUL-terminated key, a buffer of `buf.len()` bytes and a length slot.
        let rc = unsafe { fmq_pmix_get(rank, k.as_ptr(), buf.as_mut_ptr().cast(), buf.len(), &mut len) };
        // SAFETY: no pointers.
        if rc == unsafe { fmq_pmix_out_of_resource() } && len + 1 > buf.len() && len < (64 << 20) {
            buf.resize(len + 1, 0);
            continue;
        }
        check("PMIx_Get", rc)?;
        return Ok(String::from_utf8_lossy(&buf[..len]).into_owned());
    }
}

/// Ends this process's PMIx session.
pub(super) fn finalize() -> Result<(), PmixError> {
    // SAFETY: no pointers.
    check("PMIx_Finalize", unsafe { fmq_pmix_finalize() })
}
