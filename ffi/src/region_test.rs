//! Tests of regions through the C ABI.
//!
//! - `fmq_message_new_region` refuses a piece outside the region, and a region of another
//!   transport, with `FMQ_ERROR_INVALID`. The transports make these checks, and the C ABI sorts
//!   their errors into codes.
//! - Inside a zeromq region's callback, freeing the region, or making another message of it, is
//!   refused.
//! - A region configuration is refused when a `bool` field holds another byte than 0 or 1, or when
//!   its `struct_size` is below this version's.
//! - `fmq_transport_region_info` writes its entries at the caller's stride.

use crate::*;
use fairmq_shm::testing::session::{unique_session, SessionGuard};
use std::ffi::{c_char, CString};
use std::ptr::{null, null_mut};

/// A transport made through the C ABI, freed on drop.
struct T(*mut fmq_transport);

impl T {
    fn new(kind: &str, args: &[&str]) -> T {
        let kind = CString::new(kind).unwrap();
        let id = CString::new("region-test").unwrap();
        let args: Vec<CString> = args.iter().map(|a| CString::new(*a).unwrap()).collect();
        let argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        let mut t = null_mut();
        // SAFETY: NUL-terminated strings and an argv of argv.len() of them, alive for the call.
        let rc = unsafe { fmq_transport_new(kind.as_ptr(), id.as_ptr(), argv.len() as i32, argv.as_ptr(), &mut t) };
        assert_eq!(rc, FMQ_OK);
        T(t)
    }

    fn region(&self, size: usize) -> *mut fmq_region {
        let mut r = null_mut();
        // SAFETY: a valid transport, default configuration, no callbacks, a valid out pointer.
        let rc = unsafe { fmq_region_new(self.0, size, null(), None, None, null_mut(), &mut r) };
        assert_eq!(rc, FMQ_OK);
        r
    }

    /// The result of asking this transport for a message over a piece of `r`; frees the message.
    fn piece(&self, r: *mut fmq_region, offset: usize, size: usize) -> fmq_result {
        let mut m = null_mut();
        // SAFETY: valid transport and region, a valid out pointer; `m` is ours when returned.
        let rc = unsafe { fmq_message_new_region(self.0, r, offset, size, 7, &mut m) };
        // SAFETY: NULL or the message just made.
        unsafe { fmq_message_free(m) };
        rc
    }
}

impl Drop for T {
    fn drop(&mut self) {
        // SAFETY: made by fmq_transport_new, not used afterwards.
        unsafe { fmq_transport_free(self.0) };
    }
}

/// A shmem session of the test's own, removed when the test ends, also when it fails before
/// freeing its regions and transports (declare it first: it is dropped last).
fn session(tag: &str) -> SessionGuard {
    SessionGuard::new(&unique_session(&format!("ffi{tag}")))
}

fn free(r: *mut fmq_region) {
    // SAFETY: made by fmq_region_new, not used afterwards.
    unsafe { fmq_region_free(r) };
}

#[test]
fn pieces_outside_the_region_are_invalid_on_both_transports() {
    let session = session("region");
    let shm_args = ["--session", session.session(), "--shm-segment-size", "10000000"];
    for t in [T::new("zeromq", &[]), T::new("shmem", &shm_args)] {
        let r = t.region(4096);
        assert_eq!(t.piece(r, 0, 4096), FMQ_OK, "the whole region");
        assert_eq!(t.piece(r, 4000, 96), FMQ_OK, "the last bytes");
        assert_eq!(t.piece(r, 4000, 97), FMQ_ERROR_INVALID, "one byte past the end");
        assert_eq!(t.piece(r, 5000, 0), FMQ_ERROR_INVALID, "beyond the end");
        assert_eq!(t.piece(r, usize::MAX, 2), FMQ_ERROR_INVALID, "offset + size overflows");
        free(r);
    }
}

#[test]
fn regions_of_another_transport_are_invalid() {
    let (session, other) = (session("regionkind"), session("regionother"));
    let (z, z2) = (T::new("zeromq", &[]), T::new("zeromq", &[]));
    let shm = T::new("shmem", &["--session", session.session(), "--shm-segment-size", "10000000"]);
    let shm2 = T::new("shmem", &["--session", other.session(), "--shm-segment-size", "10000000"]);
    let (zr, sr) = (z.region(1024), shm.region(1024));
    assert_eq!(shm.piece(zr, 0, 10), FMQ_ERROR_INVALID, "a zeromq region on shmem");
    assert_eq!(z.piece(sr, 0, 10), FMQ_ERROR_INVALID, "a shmem region on zeromq");
    assert_eq!(z2.piece(zr, 0, 10), FMQ_ERROR_INVALID, "another zeromq transport's region");
    assert_eq!(shm2.piece(sr, 0, 10), FMQ_ERROR_INVALID, "another shmem session's region");
    assert_eq!(z.piece(zr, 0, 10), FMQ_OK);
    assert_eq!(shm.piece(sr, 0, 10), FMQ_OK);
    free(zr);
    free(sr);
}

/// What the callback of the region test below sees: the region to free and the transport.
static REENTRY: std::sync::Mutex<(usize, usize, Vec<fmq_result>)> = std::sync::Mutex::new((0, 0, Vec::new()));

unsafe extern "C-unwind" fn free_and_remake(_block: *const fmq_region_block, _user: *mut std::ffi::c_void) {
    let (region, transport) = {
        let g = REENTRY.lock().unwrap();
        (g.0 as *mut fmq_region, g.1 as *const fmq_transport)
    };
    // SAFETY: the region and transport of the test, alive while it runs; both calls must refuse.
    unsafe { fmq_region_free(region) };
    let mut m = null_mut();
    // SAFETY: as above; `m` is NULL on an error, freeing NULL is fine.
    let rc = unsafe { fmq_message_new_region(transport, region, 0, 8, 0, &mut m) };
    // SAFETY: NULL or the message just made.
    unsafe { fmq_message_free(m) };
    REENTRY.lock().unwrap().2.push(rc);
}

/// A zeromq region's callback that frees its region, or makes another message of it: the free was
/// a use after free and the message a thread waiting for itself; both are refused now.
#[test]
fn freeing_or_remaking_a_region_inside_its_callback_is_refused() {
    let t = T::new("zeromq", &[]);
    let mut r = null_mut();
    // SAFETY: a valid transport, default configuration, one callback, a valid out pointer.
    let rc = unsafe { fmq_region_new(t.0, 4096, null(), Some(free_and_remake), None, null_mut(), &mut r) };
    assert_eq!(rc, FMQ_OK);
    *REENTRY.lock().unwrap() = (r as usize, t.0 as usize, Vec::new());
    assert_eq!(t.piece(r, 0, 8), FMQ_OK, "the outer message is made; its callback ran");
    assert_eq!(REENTRY.lock().unwrap().2, [FMQ_ERROR_INVALID], "the inner message is refused");
    assert_eq!(t.piece(r, 8, 8), FMQ_OK, "the region was not freed by its callback");
    free(r);
}

/// A configuration whose bool fields were never set (bytes other than 0 and 1): refused before
/// any Rust code reads them as bools (undefined behaviour before).
#[test]
fn a_region_config_with_bytes_that_are_no_bools_is_invalid() {
    let t = T::new("zeromq", &[]);
    let mut cfg = std::mem::MaybeUninit::<fmq_region_config>::uninit();
    // SAFETY: writable for the struct's size; then set as fmq_region_config_init does.
    unsafe { fmq_region_config_init(cfg.as_mut_ptr()) };
    // SAFETY: the pointer is to the initialised struct; the byte written is the `zero` field's.
    unsafe { std::ptr::addr_of_mut!((*cfg.as_mut_ptr()).zero).cast::<u8>().write(0xAA) };
    let mut r = null_mut();
    // SAFETY: a valid transport, a config pointer, no callbacks, a valid out pointer.
    let rc = unsafe { fmq_region_new(t.0, 4096, cfg.as_ptr(), None, None, null_mut(), &mut r) };
    assert_eq!(rc, FMQ_ERROR_INVALID);
    assert!(r.is_null());
    let mut buf = [0 as c_char; 256];
    // SAFETY: a buffer of its stated length.
    unsafe { fmq_last_error(buf.as_mut_ptr(), buf.len(), null_mut()) };
    // SAFETY: fmq_last_error NUL-terminates within the buffer.
    let msg = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned();
    assert!(msg.contains("fmq_region_config.zero holds 170"), "{msg}");
}

/// Issue 37: the structs a caller fills or receives carry their size, so they can grow without
/// breaking programs built against this version: a size below this version's is refused, and
/// region information is written at the caller's stride (a later, larger struct).
#[test]
fn structs_carry_their_size_and_a_short_one_is_refused() {
    let t = T::new("zeromq", &[]);
    let r = t.region(4096);
    // A configuration not made by fmq_region_config_init (its size unset) is refused.
    let mut cfg = std::mem::MaybeUninit::<fmq_region_config>::uninit();
    // SAFETY: a valid out pointer; initialised on FMQ_OK.
    assert_eq!(unsafe { fmq_region_config_init(cfg.as_mut_ptr()) }, FMQ_OK);
    // SAFETY: initialised above.
    let mut cfg = unsafe { cfg.assume_init() };
    assert_eq!(cfg.struct_size as usize, size_of::<fmq_region_config>());
    cfg.struct_size = 8;
    let mut refused = null_mut();
    // SAFETY: valid arguments; the configuration is refused before use.
    let rc = unsafe { fmq_region_new(t.0, 4096, &cfg, None, None, null_mut(), &mut refused) };
    assert_eq!(rc, FMQ_ERROR_INVALID);
    // Entries twice this version's size: each at its place, its size saying what was filled.
    let stride = 2 * size_of::<fmq_region_info>();
    let mut buf = vec![0u8; 4 * stride];
    let mut n = 0;
    // SAFETY: room for 4 entries of `stride` bytes.
    let rc = unsafe { fmq_transport_region_info(t.0, buf.as_mut_ptr().cast(), 4, stride, &mut n) };
    assert_eq!(rc, FMQ_OK);
    assert!(n >= 1);
    // SAFETY: the first entry was written at offset 0 (unaligned reads of plain data).
    let first = unsafe { buf.as_ptr().cast::<fmq_region_info>().read_unaligned() };
    assert_eq!(first.struct_size as usize, size_of::<fmq_region_info>());
    assert_eq!(first.size, 4096);
    // SAFETY: as above; nothing is written short of a whole entry.
    let rc = unsafe { fmq_transport_region_info(t.0, buf.as_mut_ptr().cast(), 4, 8, &mut n) };
    assert_eq!(rc, FMQ_ERROR_INVALID);
    free(r);
}
