//! Channels, transfers, multipart messages, pollers and counters.
//!
//! - An [`fmq_channel`] is one sub-channel with its socket. [`fmq_channel_new`] makes one from a
//!   FairMQ `--channel-config` token and binds or connects it at once. (`fmq_channel_create` in
//!   the module `channel_setup` makes one step by step.) A hook's context also lends the device's
//!   channels; those are not freed.
//! - [`fmq_channel_send`] and [`fmq_channel_receive`] move one message. They return FairMQ's
//!   transfer codes.
//! - An [`fmq_parts`] holds the parts of a multipart message. [`fmq_channel_send_parts`] and
//!   [`fmq_channel_receive_parts`] move one multipart.
//! - An [`fmq_poller`] waits on several channels of either transport.
//! - [`fmq_channel_counters`] reads the messages and bytes that a channel moved.
//!   [`fmq_channel_connected_peers`] counts its peers.
//!
//! Channels, parts and pollers are used by one thread at a time, like ZeroMQ sockets.

use crate::error::*;
use crate::message::fmq_message;
use crate::ptr::*;
use crate::transport::fmq_transport;
use fairmq::{Channel, Parts};
use std::ffi::c_char;

/// A sub-channel with its socket. Not thread-safe (like a ZeroMQ socket): one thread at a time.
#[allow(non_camel_case_types)]
#[repr(transparent)]
pub struct fmq_channel(pub(crate) Channel);

/// The parts of a multipart message. Not thread-safe.
#[allow(non_camel_case_types)]
#[repr(transparent)]
pub struct fmq_parts(pub(crate) Parts);

/// Messages and payload bytes moved by a channel (successful transfers; a multipart counts once).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct fmq_counters {
    /// The size of this struct as the caller knows it: set it to `sizeof(fmq_counters)` before
    /// the call (later versions write only the fields a caller knows).
    pub struct_size: u32,
    /// Messages sent.
    pub messages_tx: u64,
    /// Bytes sent.
    pub bytes_tx: u64,
    /// Messages received.
    pub messages_rx: u64,
    /// Bytes received.
    pub bytes_rx: u64,
}

/// Creates a channel from one FairMQ `--channel-config` token with one endpoint list, e.g.
/// `name=data,type=push,method=bind,address=tcp://127.0.0.1:5555,sndBufSize=100,linger=1000` (every
/// channel property of FairMQ may be given), validates it, creates its socket on `t` and binds or
/// connects it (auto-bind included). `fmq_channel_address` tells the address as attached.
///
/// # Safety
/// `t` is a valid transport; `spec` a NUL-terminated string; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_new(
    t: *const fmq_transport,
    spec: *const c_char,
    out: *mut *mut fmq_channel,
) -> fmq_result {
    guard(|| {
        code((|| {
            check_out(out)?;
            // SAFETY: contracts as documented.
            let (t, spec) = unsafe { (refp(t, "transport")?, str_arg(spec)?) };
            let mut subs = fairmq::channel_parsers::parse_channel_config(&[spec.to_owned()])
                .map_err(|e| fail(FMQ_ERROR_CONFIG, e))?;
            if subs.len() != 1 {
                return Err(fail(
                    FMQ_ERROR_CONFIG,
                    "one sub-channel per handle: give one address= key (with ',' between endpoints)",
                ));
            }
            let cfg = subs.remove(0);
            match cfg.validate() {
                Ok(true) => {}
                Ok(false) => return Err(fail(FMQ_ERROR_CONFIG, format!("channel {cfg} is not attachable (address?)"))),
                Err(e) => return Err(fail(FMQ_ERROR_CONFIG, e)),
            }
            let mut ch = Channel::new(cfg, t.0.clone()).map_err(fail_kind)?;
            ch.attach().map_err(fail_kind)?;
            // SAFETY: `out` checked.
            unsafe { give(out, fmq_channel(ch)) };
            Ok(FMQ_OK)
        })())
    })
}

/// Frees a channel (its socket closes; linger applies to queued messages). NULL is fine.
///
/// # Safety
/// `c` is NULL or an owned channel handle (not one borrowed from a device context).
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_free(c: *mut fmq_channel) {
    // SAFETY: contract of `take`.
    guard_value((), || unsafe { take(c) });
}

/// The channel's address as attached (bound port included), NUL-terminated into `buf`.
///
/// # Safety
/// `c` is a valid channel; `buf` valid for `len` bytes; `written` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_address(
    c: *const fmq_channel,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    guard(|| {
        // SAFETY: contracts as documented.
        code(unsafe { refp(c, "channel") }.map(|c| unsafe { copy_out(&c.0.config().address, buf, len, written) }))
    })
}

/// Sends `m` (timeout ms: -1 forever, 0 no wait). Returns bytes (>= 0) and leaves `m` empty, or -1
/// error, -2 timeout, -3 interrupted and leaves `m` unchanged (the caller keeps it).
///
/// # Safety
/// `c` and `m` are valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_send(c: *const fmq_channel, m: *mut fmq_message, timeout_ms: i32) -> i64 {
    guard_transfer(|| {
        // SAFETY: valid per contract.
        match unsafe { (refp(c, "channel"), mutp(m, "message")) } {
            (Ok(c), Ok(m)) => transfer(c.0.send_timeout(&mut m.0, timeout_ms)),
            _ => -1,
        }
    })
}

/// Receives into `m` (its old content is released). Returns bytes or -1/-2/-3.
///
/// # Safety
/// `c` and `m` are valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_receive(c: *const fmq_channel, m: *mut fmq_message, timeout_ms: i32) -> i64 {
    guard_transfer(|| {
        // SAFETY: valid per contract.
        match unsafe { (refp(c, "channel"), mutp(m, "message")) } {
            (Ok(c), Ok(m)) => transfer(c.0.receive_timeout(&mut m.0, timeout_ms)),
            _ => -1,
        }
    })
}

/// Sends all parts as one multipart message. Returns total bytes or -1/-2/-3 (an empty multipart
/// is refused with -1). On success the parts are left empty.
///
/// # Safety
/// `c` and `p` are valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_send_parts(c: *const fmq_channel, p: *mut fmq_parts, timeout_ms: i32) -> i64 {
    guard_transfer(|| {
        // SAFETY: valid per contract.
        match unsafe { (refp(c, "channel"), mutp(p, "parts")) } {
            (Ok(c), Ok(p)) => transfer(c.0.send_parts_timeout(&mut p.0, timeout_ms)),
            _ => -1,
        }
    })
}

/// Receives a multipart message, appending its parts to `p`. Returns total bytes or -1/-2/-3.
///
/// # Safety
/// `c` and `p` are valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_receive_parts(c: *const fmq_channel, p: *mut fmq_parts, timeout_ms: i32) -> i64 {
    guard_transfer(|| {
        // SAFETY: valid per contract.
        match unsafe { (refp(c, "channel"), mutp(p, "parts")) } {
            (Ok(c), Ok(p)) => transfer(c.0.receive_parts_timeout(&mut p.0, timeout_ms)),
            _ => -1,
        }
    })
}

pub(crate) fn transfer(r: fairmq_zmq::TransferResult) -> i64 {
    if let Err(e) = &r {
        if e.code() == fairmq_zmq::TransferCode::Error {
            set_last(e.to_string());
        }
    }
    fairmq_zmq::transfer_code(&r)
}

/// The channel's counters into `*out`, whose `struct_size` the caller set;
/// `FMQ_ERROR_INVALID` for a size below this version's.
///
/// # Safety
/// `c` is valid; `out` valid for reads and writes of `struct_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_counters(c: *const fmq_channel, out: *mut fmq_counters) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: valid per contract.
            let (c, out) = unsafe { (refp(c, "channel")?, mutp(out, "out")?) };
            if (out.struct_size as usize) < size_of::<fmq_counters>() {
                return Err(fail(
                    FMQ_ERROR_INVALID,
                    format!(
                        "fmq_counters.struct_size is {}, below {} (set it to sizeof(fmq_counters))",
                        out.struct_size,
                        size_of::<fmq_counters>()
                    ),
                ));
            }
            let s = c.0.counters();
            *out = fmq_counters {
                struct_size: size_of::<fmq_counters>() as u32,
                messages_tx: s.messages_tx,
                bytes_tx: s.bytes_tx,
                messages_rx: s.messages_rx,
                bytes_rx: s.bytes_rx,
            };
            Ok(FMQ_OK)
        })())
    })
}

/// How many peers the channel's socket has now (FairMQ's `GetNumberOfConnectedPeers`): connections
/// made and accepted, less those that ended, as ZeroMQ's monitor reported them by the time of the
/// call (none for inproc). 0 for a NULL channel.
///
/// # Safety
/// `c` is NULL or a valid channel.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_connected_peers(c: *const fmq_channel) -> u64 {
    guard_value(0, || {
        // SAFETY: valid per contract.
        unsafe { refp(c, "channel") }.map_or(0, |c| c.0.number_of_connected_peers())
    })
}

/// The channel's transport (borrowed: do not free; valid while the channel lives).
///
/// # Safety
/// `c` is a valid channel.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_transport(c: *const fmq_channel) -> *const fmq_transport {
    guard_value(std::ptr::null(), || {
        // SAFETY: valid per contract. fmq_transport is a plain wrapper; the Transport lives in the channel.
        unsafe { refp(c, "channel") }.map_or(std::ptr::null(), |c| (c.0.transport() as *const fairmq::Transport).cast())
    })
}

/// An empty multipart container (free with `fmq_parts_free`).
#[no_mangle]
pub extern "C" fn fmq_parts_new() -> *mut fmq_parts {
    guard_value(std::ptr::null_mut(), || Box::into_raw(Box::new(fmq_parts(Parts::new()))))
}

/// Frees a container and its parts (NULL is fine).
///
/// # Safety
/// `p` is NULL or an owned container handle.
#[no_mangle]
pub unsafe extern "C" fn fmq_parts_free(p: *mut fmq_parts) {
    // SAFETY: contract of `take`.
    guard_value((), || unsafe { take(p) });
}

/// Appends `m`, taking ownership of it. The handle `m` is consumed in every case and must not be
/// used or freed afterwards: when the call fails (`p` NULL), the message is freed.
///
/// # Safety
/// `p` is valid or NULL; `m` an owned message handle or NULL.
#[no_mangle]
pub unsafe extern "C" fn fmq_parts_add(p: *mut fmq_parts, m: *mut fmq_message) -> fmq_result {
    guard(|| {
        code((|| {
            if m.is_null() {
                return Err(fail(FMQ_ERROR_NULL, "message is NULL"));
            }
            // SAFETY: an owned handle from `give`; consumed here (dropped if `p` is bad).
            let msg = unsafe { Box::from_raw(m) };
            // SAFETY: valid or NULL per contract.
            let parts = unsafe { mutp(p, "parts")? };
            parts.0.push(msg.0);
            Ok(FMQ_OK)
        })())
    })
}

/// Number of parts (0 for NULL).
///
/// # Safety
/// `p` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_parts_size(p: *const fmq_parts) -> usize {
    // SAFETY: valid or NULL per contract.
    guard_value(0, || unsafe { refp(p, "parts") }.map_or(0, |p| p.0.len()))
}

/// Part `i` (borrowed: valid while the container is unchanged; do not free), or NULL if out of range.
///
/// # Safety
/// `p` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_parts_at(p: *mut fmq_parts, i: usize) -> *mut fmq_message {
    guard_value(std::ptr::null_mut(), || {
        // SAFETY: valid per contract; fmq_message is repr(transparent) over Message.
        unsafe { mutp(p, "parts") }
            .ok()
            .and_then(|p| p.0.get_mut(i))
            .map_or(std::ptr::null_mut(), |m| (m as *mut fairmq::Message).cast())
    })
}

/// Removes all parts.
///
/// # Safety
/// `p` is valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_parts_clear(p: *mut fmq_parts) -> fmq_result {
    guard(|| {
        // SAFETY: valid per contract.
        code(unsafe { mutp(p, "parts") }.map(|p| {
            p.0.clear();
            FMQ_OK
        }))
    })
}

/// A poller over `n` channels (of either transport). The channels must outlive the poller.
/// Not thread-safe: use it from one thread at a time, and while `fmq_poller_poll` runs no other
/// thread may use the channels it polls (their sockets are ZeroMQ sockets, which are not
/// thread-safe). The results of `fmq_poller_check_input`/`_output` are those of the last poll.
#[allow(non_camel_case_types)]
pub struct fmq_poller {
    channels: Vec<*const fmq_channel>,
    input: Vec<bool>,
    output: Vec<bool>,
}

/// Creates a poller over `channels[0..n]`.
///
/// # Safety
/// `channels` holds `n` valid channel pointers that outlive the poller; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_poller_new(
    channels: *const *const fmq_channel,
    n: usize,
    out: *mut *mut fmq_poller,
) -> fmq_result {
    guard(|| {
        code((|| {
            check_out(out)?;
            if channels.is_null() && n > 0 {
                return Err(fail(FMQ_ERROR_NULL, "channels is NULL"));
            }
            // SAFETY: `n` entries per contract.
            let list: Vec<*const fmq_channel> = (0..n).map(|i| unsafe { *channels.add(i) }).collect();
            if list.iter().any(|c| c.is_null()) {
                return Err(fail(FMQ_ERROR_NULL, "a channel is NULL"));
            }
            // SAFETY: `out` checked.
            unsafe { give(out, fmq_poller { channels: list, input: vec![false; n], output: vec![false; n] }) };
            Ok(FMQ_OK)
        })())
    })
}

/// Frees a poller (NULL is fine).
///
/// # Safety
/// `p` is NULL or an owned poller.
#[no_mangle]
pub unsafe extern "C" fn fmq_poller_free(p: *mut fmq_poller) {
    // SAFETY: contract of `take`.
    guard_value((), || unsafe { take(p) });
}

/// Waits up to `timeout_ms` (-1 forever) for readiness; returns the number of ready channels, or
/// -3 if the transport was interrupted and nothing was ready, or -1 on error.
///
/// # Safety
/// `p` is valid and its channels still live.
#[no_mangle]
pub unsafe extern "C" fn fmq_poller_poll(p: *mut fmq_poller, timeout_ms: i32) -> i64 {
    guard_transfer(|| {
        // SAFETY: valid per contract.
        let Ok(p) = (unsafe { mutp(p, "poller") }) else { return -1 };
        // SAFETY: the channels outlive the poller (contract of fmq_poller_new).
        let sockets: Vec<&fairmq::Socket> = p.channels.iter().map(|c| unsafe { &**c }.0.socket()).collect();
        let mut poller = fairmq::Poller::new(&sockets);
        let r = poller.poll(timeout_ms);
        for i in 0..sockets.len() {
            p.input[i] = poller.check_input(i);
            p.output[i] = poller.check_output(i);
        }
        match r {
            Ok(n) => n as i64,
            Err(fairmq_zmq::PollError::Interrupted) => -3,
            Err(e) => {
                set_last(e.to_string());
                -1
            }
        }
    })
}

/// Whether channel `i` had input at the last poll.
///
/// # Safety
/// `p` is valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_poller_check_input(p: *const fmq_poller, i: usize) -> bool {
    // SAFETY: valid per contract.
    guard_value(false, || unsafe { refp(p, "poller") }.is_ok_and(|p| p.input.get(i).copied().unwrap_or(false)))
}

/// Whether channel `i` could send at the last poll.
///
/// # Safety
/// `p` is valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_poller_check_output(p: *const fmq_poller, i: usize) -> bool {
    // SAFETY: valid per contract.
    guard_value(false, || unsafe { refp(p, "poller") }.is_ok_and(|p| p.output.get(i).copied().unwrap_or(false)))
}
