//! Unmanaged regions for C: [`fmq_region`] (FairMQ's `UnmanagedRegion`).
//!
//! A region is a big buffer. The program fills it in place and sends pieces of it as messages
//! ([`fmq_message_new_region`]). The creator's callback hears of every piece that comes back:
//!
//! - On shmem, a piece travels without a copy. The callback runs on the region's own thread, once
//!   the last holder of the piece, in any process, has released it.
//! - On zeromq, the message holds a copy. The callback runs at once, on the thread that made the
//!   message, inside [`fmq_message_new_region`].
//!
//! A callback runs through a guard that stops a panic and logs it ([`contain`]). A callback must
//! not free its own region, so [`fmq_region_free`] frees nothing inside a region callback.

use crate::error::*;
use crate::message::{fmq_message, new_with};
use crate::ptr::*;
use crate::transport::fmq_transport;
use fairmq::region::{RegionBlock, RegionCallback, RegionConfig};
use fairmq::UnmanagedRegion;
use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

/// An unmanaged region of either transport. Thread-safe: id, size, data, linger and
/// `fmq_message_new_region` may be used from several threads at once; `fmq_region_free` only when
/// no other call on it runs, and never from inside its own callback.
#[allow(non_camel_case_types)]
pub struct fmq_region(UnmanagedRegion);

// The thread-safety promise above rests on this.
const _: fn() = || {
    fn thread_safe<T: Send + Sync>() {}
    thread_safe::<UnmanagedRegion>();
};

/// Settings of a region (FairMQ's `RegionConfig`). Fill it with `fmq_region_config_init` first,
/// then change what you need, so that fields added later get their defaults.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct fmq_region_config {
    /// The size of this struct as the caller knows it (`fmq_region_config_init` sets it): fields
    /// added in later versions are read only from callers that know them.
    pub struct_size: u32,
    /// Region id (0 to 65535), or -1 for the transport's next automatic id (default -1). shmem
    /// adopts an existing region of that id made by another process; zeromq ignores the field.
    pub id: i32,
    /// NULL or "" (default): a shared-memory object; otherwise a directory prefix (with its trailing
    /// '/') for a file-backed region, e.g. on a hugetlbfs mount. shmem only.
    pub path: *const c_char,
    /// Lock the region in RAM after creating it (default false).
    pub lock: bool,
    /// Zero the region after creating it (default false).
    pub zero: bool,
    /// Remove the region when its handle is freed (default true); false keeps it for other processes.
    pub remove_on_destruction: bool,
    /// `mmap` flags: MAP_POPULATE and MAP_LOCKED (default 0). shmem only.
    pub creation_flags: i32,
    /// Flags for the user, reported in region events (default 0).
    pub user_flags: u64,
    /// Accepted for FairMQ compatibility (default 100000000).
    pub rc_segment_size: u64,
    /// How long `fmq_region_free` waits for outstanding acknowledgements, in ms (default 100).
    pub linger_ms: u32,
}

/// A released piece of a region, as the region's callback sees it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct fmq_region_block {
    /// Address of the piece in this process (the creator's).
    pub ptr: *mut c_void,
    /// Offset of the piece in the region.
    pub offset: u64,
    /// Size of the piece in bytes.
    pub size: usize,
    /// The hint given to `fmq_message_new_region`.
    pub hint: u64,
}

/// Called once per released piece with `user` of `fmq_region_new`. Must not unwind (a C++
/// exception) or longjmp out: the C-unwind ABI makes an escaping exception defined behaviour (it
/// is stopped and logged, or aborts the process), never a silent corruption, but it is a bug.
#[allow(non_camel_case_types)]
pub type fmq_region_callback = Option<unsafe extern "C-unwind" fn(block: *const fmq_region_block, user: *mut c_void)>;

/// Called once per batch of `n` released pieces (up to 256) with `user` of `fmq_region_new`; the
/// array is valid during the call only. Same rules as `fmq_region_callback`.
#[allow(non_camel_case_types)]
pub type fmq_region_bulk_callback =
    Option<unsafe extern "C-unwind" fn(blocks: *const fmq_region_block, n: usize, user: *mut c_void)>;

/// A C caller's user pointer, moved to the thread that runs its callbacks.
#[derive(Clone, Copy)]
pub(crate) struct UserPtr(*mut c_void);

// SAFETY: the contracts of fmq_region_new and fmq_transport_subscribe_region_events make the caller
// promise that `user` may be used from the threads their callbacks run on; we only pass it back.
unsafe impl Send for UserPtr {}

impl UserPtr {
    /// Wraps the user pointer of a call whose contract allows its use from the callbacks' threads.
    pub(crate) fn new(user: *mut c_void) -> UserPtr {
        UserPtr(user)
    }

    /// The pointer. A method rather than `.0`, so that closures capture the whole (Send) wrapper.
    pub(crate) fn get(self) -> *mut c_void {
        self.0
    }
}

/// Runs a C callback so that nothing unwinds into the transport's threads: a Rust panic is stopped
/// here and logged. A C++ exception is a bug of the callback; the C-unwind ABI of the callback types
/// makes it defined behaviour: Rust either stops it here too or aborts the process (which of the two
/// is unspecified), where a plain "C" callback that unwinds would be undefined behaviour.
pub(crate) fn contain(what: &str, f: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        log::error!("{what} unwound (a panic or an exception); stopped at the C boundary");
    }
}

thread_local! {
    /// How many region callbacks this thread is inside (a callback may make messages of another
    /// region, whose callback then runs too).
    static IN_CALLBACK: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Marks this thread as inside a region callback while it lives (also when the callback unwinds).
struct InCallback;

impl InCallback {
    fn enter() -> InCallback {
        IN_CALLBACK.set(IN_CALLBACK.get() + 1);
        InCallback
    }
}

impl Drop for InCallback {
    fn drop(&mut self) {
        IN_CALLBACK.set(IN_CALLBACK.get().saturating_sub(1));
    }
}

/// Whether this thread runs a region callback now: freeing a region there would free the one
/// whose callback is running (zeromq: under its lock; shmem: its own thread would wait for itself).
pub(crate) fn inside_region_callback() -> bool {
    IN_CALLBACK.get() > 0
}

/// The bulk callback's scratch array, moved with the callback to the region's thread.
struct BlockBuffer(Vec<fmq_region_block>);

// SAFETY: the blocks' pointers are plain addresses inside the region, handed to C and never
// dereferenced on the Rust side; the buffer is used by the one thread running the callback.
unsafe impl Send for BlockBuffer {}

impl BlockBuffer {
    /// The C view of `blocks`. A method rather than `.0`, so that closures capture the whole
    /// (Send) wrapper.
    fn fill(&mut self, blocks: &[RegionBlock]) -> &[fmq_region_block] {
        self.0.clear();
        self.0.extend(blocks.iter().map(c_block));
        &self.0
    }
}

fn c_block(b: &RegionBlock) -> fmq_region_block {
    fmq_region_block { ptr: b.ptr.cast(), offset: b.offset, size: b.size, hint: b.hint }
}

/// The Rust callback calling the C one (at most one of them may be set).
fn region_callback(
    single: fmq_region_callback,
    bulk: fmq_region_bulk_callback,
    user: UserPtr,
) -> Result<RegionCallback, fmq_result> {
    Ok(match (single, bulk) {
        (Some(_), Some(_)) => return Err(fail(FMQ_ERROR_INVALID, "give a single or a bulk callback, not both")),
        (Some(f), None) => RegionCallback::Single(Box::new(move |b: &RegionBlock| {
            let block = c_block(b);
            let _inside = InCallback::enter();
            // SAFETY: the caller's callback, called with a block valid for the call and its user
            // pointer, from a thread the contract of fmq_region_new allows.
            contain("region callback", || unsafe { f(&block, user.get()) });
        })),
        (None, Some(f)) => {
            // Reused between batches: a batch costs no allocation once the buffer has grown.
            let mut scratch = BlockBuffer(Vec::new());
            RegionCallback::Bulk(Box::new(move |blocks: &[RegionBlock]| {
                let buf = scratch.fill(blocks);
                let _inside = InCallback::enter();
                // SAFETY: as for the single callback; the array lives until the call returns.
                contain("region bulk callback", || unsafe { f(buf.as_ptr(), buf.len(), user.get()) });
            }))
        }
        (None, None) => RegionCallback::None,
    })
}

/// Fills `*cfg` with the defaults (those of FairMQ's `RegionConfig`).
///
/// # Safety
/// `cfg` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_region_config_init(cfg: *mut fmq_region_config) -> fmq_result {
    guard(|| {
        // SAFETY: valid per the contract.
        code(unsafe { mutp(cfg, "cfg") }.map(|cfg| {
            let d = RegionConfig::default();
            *cfg = fmq_region_config {
                struct_size: size_of::<fmq_region_config>() as u32,
                id: -1,
                path: std::ptr::null(),
                lock: d.lock,
                zero: d.zero,
                remove_on_destruction: d.remove_on_destruction,
                creation_flags: d.creation_flags,
                user_flags: d.user_flags,
                rc_segment_size: d.rc_segment_size,
                linger_ms: u32::try_from(d.linger.as_millis()).unwrap_or(u32::MAX),
            };
            FMQ_OK
        }))
    })
}

/// Refuses a configuration whose `bool` fields hold another byte than 0 or 1 (a struct that was
/// not initialised with `fmq_region_config_init`): reading one as a Rust `bool` would be undefined
/// behaviour, so they are read as bytes first.
fn check_bools(cfg: *const fmq_region_config) -> Result<(), fmq_result> {
    // SAFETY: as below; the size field is read as a plain u32, which any value is.
    let size = unsafe { std::ptr::addr_of!((*cfg).struct_size).read() };
    if (size as usize) < size_of::<fmq_region_config>() {
        return Err(fail(
            FMQ_ERROR_INVALID,
            format!(
                "fmq_region_config.struct_size is {size}, below {} (initialise with fmq_region_config_init)",
                size_of::<fmq_region_config>()
            ),
        ));
    }
    // SAFETY: `cfg` is non-NULL and points to a readable fmq_region_config (contract of
    // config_arg, its only caller); the fields are read as plain bytes, which any value is.
    let bytes = unsafe {
        [
            ("lock", std::ptr::addr_of!((*cfg).lock).cast::<u8>().read()),
            ("zero", std::ptr::addr_of!((*cfg).zero).cast::<u8>().read()),
            ("remove_on_destruction", std::ptr::addr_of!((*cfg).remove_on_destruction).cast::<u8>().read()),
        ]
    };
    match bytes.iter().find(|(_, b)| *b > 1) {
        Some((name, b)) => Err(fail(
            FMQ_ERROR_INVALID,
            format!("fmq_region_config.{name} holds {b}, not a bool (initialise with fmq_region_config_init)"),
        )),
        None => Ok(()),
    }
}

/// The Rust configuration of a C one; NULL gives the defaults.
///
/// # Safety
/// `cfg` is NULL or valid, its `path` NULL or NUL-terminated.
// SAFETY: unsafe to call because `cfg` and its path are read (contract above).
pub(crate) unsafe fn config_arg(cfg: *const fmq_region_config) -> Result<RegionConfig, fmq_result> {
    if cfg.is_null() {
        return Ok(RegionConfig::default());
    }
    check_bools(cfg)?;
    // SAFETY: a non-NULL cfg is valid, its path NULL or NUL-terminated (contract), and its bool
    // fields hold 0 or 1 (just checked): a Rust reference to it is sound.
    let c = unsafe { &*cfg };
    let path = if c.path.is_null() {
        String::new()
    } else {
        // SAFETY: a non-NULL path is a NUL-terminated string per the contract.
        unsafe { str_arg(c.path) }?.to_owned()
    };
    rust_config(c, path)
}

/// The Rust configuration of a C one whose `path` was already read (`path`).
fn rust_config(c: &fmq_region_config, path: String) -> Result<RegionConfig, fmq_result> {
    let id = match c.id {
        -1 => None,
        id => {
            Some(u16::try_from(id).map_err(|_| fail(FMQ_ERROR_INVALID, format!("region id {id} (0 to 65535 or -1)")))?)
        }
    };
    Ok(RegionConfig {
        lock: c.lock,
        zero: c.zero,
        remove_on_destruction: c.remove_on_destruction,
        creation_flags: c.creation_flags,
        user_flags: c.user_flags,
        rc_segment_size: c.rc_segment_size,
        path,
        id,
        linger: Duration::from_millis(u64::from(c.linger_ms)),
    })
}

/// Creates a region of `size` bytes on transport `t` (FairMQ's `CreateUnmanagedRegion`), configured
/// by `cfg` (NULL: the defaults). Give at most one of `callback` (once per released piece) and
/// `bulk_callback` (once per batch); with neither, releases are not reported. `*out` owns the region
/// (free with `fmq_region_free`).
///
/// Where callbacks run: shmem, on the region's own thread (`fmq-region-<id>`), when the last holder
/// of a piece, in any process, released it; zeromq, on the thread calling `fmq_message_new_region`,
/// inside that call (the message holds a copy, so the piece is free at once). A callback must not
/// free its region, nor (zeromq) make messages from it: it runs under the region's lock.
///
/// # Safety
/// `t` is a valid transport; `cfg` NULL or valid (its `path` NULL or NUL-terminated); `user` may be
/// used by the callbacks from the threads named above until `fmq_region_free` returned; `out` is
/// valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_region_new(
    t: *const fmq_transport,
    size: usize,
    cfg: *const fmq_region_config,
    callback: fmq_region_callback,
    bulk_callback: fmq_region_bulk_callback,
    user: *mut c_void,
    out: *mut *mut fmq_region,
) -> fmq_result {
    guard(|| {
        code((|| {
            check_out(out)?;
            // SAFETY: valid per the contract.
            let t = unsafe { refp(t, "transport") }?;
            // SAFETY: `cfg` NULL or valid, its path NULL or NUL-terminated (contract).
            let config = unsafe { config_arg(cfg) }?;
            let callback = region_callback(callback, bulk_callback, UserPtr::new(user))?;
            let region = t.0.create_region(size, callback, &config).map_err(fail_kind)?;
            // SAFETY: `out` checked and valid per the contract.
            unsafe { give(out, fmq_region(region)) };
            Ok(FMQ_OK)
        })())
    })
}

/// Frees a region (NULL is fine). shmem waits up to the region's linger for outstanding
/// acknowledgements (their callbacks still run), then removes the region unless configured not to;
/// no callback runs after this returns. Free it after the messages made from it.
///
/// Inside a region callback it frees nothing (logged, and said by `fmq_last_error`): the region
/// whose callback runs would be freed under it.
///
/// # Safety
/// `r` is NULL or an owned region, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn fmq_region_free(r: *mut fmq_region) {
    guard_value((), || {
        if inside_region_callback() {
            set_last("fmq_region_free inside a region callback: refused, the region is not freed");
            log::error!("fmq_region_free inside a region callback: refused, the region is not freed");
            return;
        }
        // SAFETY: contract of `take`.
        unsafe { take(r) }
    });
}

/// The region's id, or -1 for NULL.
///
/// # Safety
/// `r` is NULL or a valid region.
#[no_mangle]
pub unsafe extern "C" fn fmq_region_id(r: *const fmq_region) -> i32 {
    // SAFETY: valid or NULL per the contract.
    guard_value(-1, || unsafe { refp(r, "region") }.map_or(-1, |r| i32::from(r.0.id())))
}

/// The region's size in bytes (0 for NULL).
///
/// # Safety
/// `r` is NULL or a valid region.
#[no_mangle]
pub unsafe extern "C" fn fmq_region_size(r: *const fmq_region) -> usize {
    // SAFETY: valid or NULL per the contract.
    guard_value(0, || unsafe { refp(r, "region") }.map_or(0, |r| r.0.size()))
}

/// The region's first byte in this process (FairMQ's `GetData`), for filling it in place; NULL
/// for NULL. Write only pieces that no message refers to (not yet sent, or acknowledged).
///
/// # Safety
/// `r` is NULL or a valid region; the pointer is valid for `fmq_region_size` bytes until the region
/// is freed.
#[no_mangle]
pub unsafe extern "C" fn fmq_region_data(r: *const fmq_region) -> *mut c_void {
    guard_value(std::ptr::null_mut(), || {
        // SAFETY: valid or NULL per the contract.
        unsafe { refp(r, "region") }.map_or(std::ptr::null_mut(), |r| r.0.data_ptr().cast())
    })
}

/// Sets how long `fmq_region_free` waits for outstanding acknowledgements (ms; zeromq ignores it,
/// its acknowledgements are immediate).
///
/// # Safety
/// `r` is a valid region.
#[no_mangle]
pub unsafe extern "C" fn fmq_region_set_linger(r: *const fmq_region, linger_ms: u32) -> fmq_result {
    guard(|| {
        // SAFETY: valid per the contract.
        code(unsafe { refp(r, "region") }.map(|r| {
            r.0.set_linger(Duration::from_millis(u64::from(linger_ms)));
            FMQ_OK
        }))
    })
}

/// The region's linger in ms (0 for NULL; zeromq: always 0).
///
/// # Safety
/// `r` is NULL or a valid region.
#[no_mangle]
pub unsafe extern "C" fn fmq_region_get_linger(r: *const fmq_region) -> u32 {
    guard_value(0, || {
        // SAFETY: valid or NULL per the contract.
        unsafe { refp(r, "region") }.map_or(0, |r| u32::try_from(r.0.linger().as_millis()).unwrap_or(u32::MAX))
    })
}

/// A message of transport `t` referring to `size` bytes at `offset` of `region` (FairMQ's
/// `NewMessage(region, data, size, hint)`; shmem: zero-copy, zeromq: a copy). `hint` comes back in
/// the region's callback. The region must be of the same transport kind (else
/// `FMQ_ERROR_INVALID`), and the piece inside it. `*out` owns the message.
///
/// # Safety
/// `t` is a valid transport, `region` a valid region; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_new_region(
    t: *const fmq_transport,
    region: *const fmq_region,
    offset: usize,
    size: usize,
    hint: u64,
    out: *mut *mut fmq_message,
) -> fmq_result {
    new_with(t, out, |t| {
        // SAFETY: valid per the contract.
        let r = &unsafe { refp(region, "region") }?.0;
        t.new_message_from_region(r, offset, size, hint).map_err(fail_kind)
    })
}
