//! Region events for C (FairMQ's `SubscribeToRegionEvents` and `GetRegionInfo`).
//!
//! - [`fmq_transport_region_info`] lists the segments and regions that a transport knows of, as
//!   [`fmq_region_info`] entries.
//! - [`fmq_transport_subscribe_region_events`] calls a callback for every region event of a
//!   transport: a segment or region created or destroyed, or, on zeromq, the one `local_only`
//!   event. The callback runs on a thread of the transport's own, through a guard that stops a
//!   panic and logs it.
//!
//! Both transports report events. zeromq knows only its own regions, because they are local to
//! the process. shmem knows every segment and region of the session.

use crate::error::*;
use crate::ptr::*;
use crate::region::{contain, UserPtr};
use crate::transport::fmq_transport;
use fairmq::region::{RegionEvent, RegionInfo};
use std::ffi::c_void;

/// What happened to a region or segment: one of the `FMQ_REGION_*` constants (an integer, so that
/// C code may hold any value in it).
#[allow(non_camel_case_types)]
pub type fmq_region_event = i32;

/// Region event: it exists (first sighting).
pub const FMQ_REGION_CREATED: fmq_region_event = 0;
/// Region event: its creator destroyed it.
pub const FMQ_REGION_DESTROYED: fmq_region_event = 1;
/// Region event: reported by the zeromq transport only, whose regions are local to the process.
pub const FMQ_REGION_LOCAL_ONLY: fmq_region_event = 2;

/// A segment or region of the session (FairMQ's `RegionInfo`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct fmq_region_info {
    /// The size of this struct as the library fills it (later versions may add fields: read
    /// them only when this says they are there).
    pub struct_size: u32,
    /// A managed segment (true) or an unmanaged region.
    pub managed: bool,
    /// Its id.
    pub id: u16,
    /// Its address in this process (NULL when destroyed).
    pub ptr: *mut c_void,
    /// Its size (0 when destroyed).
    pub size: u64,
    /// The creator's user flags (0 for segments).
    pub flags: u64,
    /// One of the `FMQ_REGION_*` constants.
    pub event: fmq_region_event,
}

/// Called once per region event with `user` of `fmq_transport_subscribe_region_events`; `info` is
/// valid during the call only. Must not unwind (a C++ exception) or longjmp out (see
/// `fmq_region_callback`).
#[allow(non_camel_case_types)]
pub type fmq_region_event_callback =
    Option<unsafe extern "C-unwind" fn(info: *const fmq_region_info, user: *mut c_void)>;

fn c_info(i: &RegionInfo) -> fmq_region_info {
    fmq_region_info {
        struct_size: size_of::<fmq_region_info>() as u32,
        managed: i.managed,
        id: i.id,
        ptr: i.ptr as *mut c_void,
        size: i.size,
        flags: i.flags,
        event: match i.event {
            RegionEvent::Created => FMQ_REGION_CREATED,
            RegionEvent::Destroyed => FMQ_REGION_DESTROYED,
            RegionEvent::LocalOnly => FMQ_REGION_LOCAL_ONLY,
        },
    }
}

/// Calls `callback(info, user)` for every region event of transport `t`, starting with the segments
/// and regions already known, on a thread of the transport's own (one thread per subscription, so calls
/// never overlap). Replaces an earlier subscription of the same transport (waiting for its thread).
///
/// # Safety
/// `t` is a valid transport; `callback` and `user` may be used from that thread until the
/// subscription ends: `fmq_transport_unsubscribe_region_events` or a later subscription returned, or
/// the transport ended (its last handle, channel and message freed). The callback must not
/// (un)subscribe itself.
#[no_mangle]
pub unsafe extern "C" fn fmq_transport_subscribe_region_events(
    t: *const fmq_transport,
    callback: fmq_region_event_callback,
    user: *mut c_void,
) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: valid per the contract.
            let t = unsafe { refp(t, "transport") }?;
            let f = callback.ok_or_else(|| fail(FMQ_ERROR_NULL, "callback is NULL"))?;
            let user = UserPtr::new(user);
            t.0.subscribe_to_region_events(move |info| {
                let c = c_info(&info);
                // SAFETY: the caller's callback with an info valid for the call, on the thread its
                // contract allows.
                contain("region event callback", || unsafe { f(&c, user.get()) });
            })
            .map_err(fail_kind)?;
            Ok(FMQ_OK)
        })())
    })
}

/// Ends the region event subscription of transport `t` (none: nothing happens); no callback runs
/// after this returns.
///
/// # Safety
/// `t` is a valid transport; not called from the event callback.
#[no_mangle]
pub unsafe extern "C" fn fmq_transport_unsubscribe_region_events(t: *const fmq_transport) -> fmq_result {
    guard(|| {
        // SAFETY: valid per the contract.
        code(unsafe { refp(t, "transport") }.map(|t| {
            t.0.unsubscribe_from_region_events();
            FMQ_OK
        }))
    })
}

/// Whether a region event subscription of transport `t` runs (false for NULL).
///
/// # Safety
/// `t` is NULL or a valid transport.
#[no_mangle]
pub unsafe extern "C" fn fmq_transport_subscribed_to_region_events(t: *const fmq_transport) -> bool {
    // SAFETY: valid or NULL per the contract.
    guard_value(false, || unsafe { refp(t, "transport") }.is_ok_and(|t| t.0.subscribed_to_region_events()))
}

/// The segments and regions transport `t` knows of (FairMQ's `GetRegionInfo`; zeromq: its live
/// regions, shmem: every segment and region of the session) into `out[0..len]`, entries of
/// `info_size` bytes (the caller's `sizeof(fmq_region_info)`: a later library fills only the fields
/// the caller knows; below this version's size is `FMQ_ERROR_INVALID`). `*count` (may be NULL)
/// gets how many there are, also when `len` is too small: then nothing is written and the result
/// is `FMQ_ERROR_BUFFER`.
///
/// # Safety
/// `t` is a valid transport; `out` valid for `len` entries of `info_size` bytes (or NULL with
/// `len` 0); `count` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_transport_region_info(
    t: *const fmq_transport,
    out: *mut fmq_region_info,
    len: usize,
    info_size: usize,
    count: *mut usize,
) -> fmq_result {
    guard(|| {
        code((|| {
            if info_size < size_of::<fmq_region_info>() {
                return Err(fail(
                    FMQ_ERROR_INVALID,
                    format!("info_size {info_size} is below sizeof(fmq_region_info), {}", size_of::<fmq_region_info>()),
                ));
            }
            // SAFETY: valid per the contract.
            let t = unsafe { refp(t, "transport") }?;
            let infos = t.0.region_info();
            if !count.is_null() {
                // SAFETY: valid for a write per the contract.
                unsafe { *count = infos.len() };
            }
            if infos.len() > len || (out.is_null() && !infos.is_empty()) {
                return Err(fail(FMQ_ERROR_BUFFER, format!("room for {len} entries, {} needed", infos.len())));
            }
            for (i, info) in infos.iter().enumerate() {
                // SAFETY: `out` holds `len` >= infos.len() entries of `info_size` bytes each (the
                // contract), at least this version's struct; written unaligned, as a caller's
                // larger struct may place entries at any multiple of its size.
                unsafe { out.cast::<u8>().add(i * info_size).cast::<fmq_region_info>().write_unaligned(c_info(info)) };
            }
            Ok(FMQ_OK)
        })())
    })
}
