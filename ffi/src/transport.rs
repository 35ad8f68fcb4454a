//! Transports by name, configured with FairMQ's options: [`fmq_transport`].
//!
//! - [`fmq_transport_new`] makes a transport of a kind (`"zeromq"` or `"shmem"`) from FairMQ's
//!   command-line options, such as `--session` and `--shm-segment-size`.
//! - [`fmq_transport_new_with_config`] makes one from a configuration store instead.
//! - [`fmq_transport_interrupt`] makes the blocked transfers of a transport return -3, until
//!   [`fmq_transport_resume`].
//!
//! The kind `"default"` stands for zeromq. A transport may be used from several threads at once.

use crate::error::*;
use crate::ptr::*;
use fairmq::{Transport, TransportKind};
use std::ffi::c_char;

/// A transport ("zeromq" or "shmem"). Thread-safe: may be used from several threads at once.
#[allow(non_camel_case_types)]
#[repr(transparent)]
pub struct fmq_transport(pub(crate) Transport);

/// Collects `argc` strings from `argv`.
///
/// # Safety
/// `argv` must be NULL (with `argc` 0) or hold `argc` valid NUL-terminated strings.
pub(crate) unsafe fn args(argc: i32, argv: *const *const c_char) -> Result<Vec<String>, fmq_result> {
    let n = usize::try_from(argc).map_err(|_| fail(FMQ_ERROR_INVALID, "argc is negative"))?;
    if n > 0 && argv.is_null() {
        return Err(fail(FMQ_ERROR_NULL, "argv is NULL"));
    }
    (0..n)
        .map(|i| {
            // SAFETY: `argv` holds `argc` entries per the caller's contract.
            let p = unsafe { *argv.add(i) };
            // SAFETY: each entry is a NUL-terminated string per the contract.
            unsafe { str_arg(p) }.map(str::to_owned)
        })
        .collect()
}

/// Creates a transport of `kind` ("zeromq" or "shmem") for device `id`, configured by FairMQ
/// options in `argv` (e.g. `--session s1 --shm-segment-size 100000000`; may be empty).
/// On success `*out` owns the new transport (free with `fmq_transport_free`).
///
/// # Safety
/// `kind` and `id` are NUL-terminated strings; `argv` holds `argc` strings; `out` is valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_transport_new(
    kind: *const c_char,
    id: *const c_char,
    argc: i32,
    argv: *const *const c_char,
    out: *mut *mut fmq_transport,
) -> fmq_result {
    guard(|| {
        code((|| {
            check_out(out)?;
            // SAFETY: contracts as documented above.
            let (kind, id, argv) = unsafe { (str_arg(kind)?, str_arg(id)?, args(argc, argv)?) };
            let kind = match kind.parse::<TransportKind>() {
                Ok(TransportKind::Default) | Ok(TransportKind::Zeromq) => TransportKind::Zeromq,
                Ok(k) => k,
                Err(e) => return Err(fail(FMQ_ERROR_INVALID, e)),
            };
            let mut words: Vec<&str> = vec!["--id", id];
            words.extend(argv.iter().map(String::as_str));
            let config = fairmq::config_from_args(&words, vec![]).map_err(|e| fail(FMQ_ERROR_CONFIG, e))?;
            let t = fairmq::transport::create(kind, id, &config).map_err(fail_kind)?;
            // SAFETY: `out` was checked and is valid per the contract.
            unsafe { give(out, fmq_transport(t)) };
            Ok(FMQ_OK)
        })())
    })
}

/// Creates a transport of `kind` ("zeromq" or "shmem"; "default" is zeromq) for device `id`,
/// configured by the store `cfg` (`session`, `io-threads`, the `shm-*` options: FairMQ's
/// `TransportFactory::CreateTransportFactory(type, id, config)`). `*out` owns it.
///
/// # Safety
/// `kind` and `id` NUL-terminated; `cfg` a valid handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_transport_new_with_config(
    kind: *const c_char,
    id: *const c_char,
    cfg: *const crate::config::fmq_config,
    out: *mut *mut fmq_transport,
) -> fmq_result {
    guard(|| {
        code((|| {
            check_out(out)?;
            // SAFETY: contracts as documented above.
            let (kind, id, cfg) = unsafe { (str_arg(kind)?, str_arg(id)?, refp(cfg, "config")?) };
            let kind = match kind.parse::<TransportKind>() {
                Ok(TransportKind::Default) | Ok(TransportKind::Zeromq) => TransportKind::Zeromq,
                Ok(k) => k,
                Err(e) => return Err(fail(FMQ_ERROR_INVALID, e)),
            };
            let t = fairmq::transport::create(kind, id, crate::config::inner(cfg)).map_err(fail_kind)?;
            // SAFETY: `out` was checked and is valid per the contract.
            unsafe { give(out, fmq_transport(t)) };
            Ok(FMQ_OK)
        })())
    })
}

/// The transport's kind: 1 zeromq, 2 shmem (FairMQ's `fair::mq::Transport` numbers); 0 for NULL.
///
/// # Safety
/// `t` a valid transport or NULL.
#[no_mangle]
pub unsafe extern "C" fn fmq_transport_kind(t: *const fmq_transport) -> i32 {
    guard_value(0, || {
        // SAFETY: contract as documented.
        match unsafe { refp(t, "transport") }.map(|t| t.0.kind()) {
            Ok(TransportKind::Shmem) => 2,
            Ok(_) => 1,
            Err(_) => 0,
        }
    })
}

/// Frees a transport (NULL is fine). Sockets and messages made from it keep it alive until they
/// are freed too; the last one ends the context (linger applies) and may remove the session.
///
/// # Safety
/// `t` is NULL or from `fmq_transport_new`, and not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn fmq_transport_free(t: *mut fmq_transport) {
    // SAFETY: contract of `take`.
    guard_value((), || unsafe { take(t) });
}

/// Makes blocked transfers of this transport return -3 until `fmq_transport_resume`.
///
/// # Safety
/// `t` is a valid transport.
#[no_mangle]
pub unsafe extern "C" fn fmq_transport_interrupt(t: *const fmq_transport) -> fmq_result {
    guard(|| {
        // SAFETY: valid per the contract.
        code(unsafe { refp(t, "transport") }.map(|t| {
            t.0.interrupt();
            FMQ_OK
        }))
    })
}

/// Transfers of this transport block again.
///
/// # Safety
/// `t` is a valid transport.
#[no_mangle]
pub unsafe extern "C" fn fmq_transport_resume(t: *const fmq_transport) -> fmq_result {
    guard(|| {
        // SAFETY: valid per the contract.
        code(unsafe { refp(t, "transport") }.map(|t| {
            t.0.resume();
            FMQ_OK
        }))
    })
}
