//! Messages of either transport: [`fmq_message`].
//!
//! - The `fmq_message_new*` calls make a message on a transport: empty, of a size, aligned, a
//!   copy of bytes, over a caller's buffer, or over constant bytes.
//! - [`fmq_message_size`], [`fmq_message_data`] and [`fmq_message_data_ptr`] give access to the
//!   bytes.
//! - [`fmq_message_set_used_size`] shrinks a message. The `fmq_message_rebuild*` calls release
//!   its content and give it new content.
//! - [`fmq_message_copy`] makes a message refer to another's content, shared where the transport
//!   allows. [`fmq_message_ref_count`] tells how many messages share the bytes.
//!   [`fmq_message_take`] moves the content into a new message.
//!
//! Where the transports differ, each call says how. For example, zeromq takes a caller's buffer
//! without a copy, and shmem copies it into shared memory.

use crate::error::*;
use crate::ptr::*;
use crate::transport::fmq_transport;
use fairmq::{Message, Transport};
use std::ffi::c_void;

/// A message of either transport. Not thread-safe: use one message from one thread at a time.
#[allow(non_camel_case_types)]
#[repr(transparent)]
pub struct fmq_message(pub(crate) Message);

/// Release function of a user buffer: `ffn(data, hint)`, possibly called on another thread (zeromq:
/// one of its I/O threads); it must not throw (C++).
#[allow(non_camel_case_types)]
pub type fmq_free_fn = Option<unsafe extern "C" fn(data: *mut c_void, hint: *mut c_void)>;

/// Makes a message of transport `t` with `f` inside the panic boundary; `*out` only on success.
pub(crate) fn new_with(
    t: *const fmq_transport,
    out: *mut *mut fmq_message,
    f: impl FnOnce(&Transport) -> Result<Message, fmq_result>,
) -> fmq_result {
    guard(|| {
        code((|| {
            check_out(out)?;
            // SAFETY: the exported functions' contracts say `t` is a valid transport.
            let t = unsafe { refp(t, "transport") }?;
            let m = f(&t.0)?;
            // SAFETY: `out` checked non-null and valid per contract.
            unsafe { give(out, fmq_message(m)) };
            Ok(FMQ_OK)
        })())
    })
}

fn alloc_err(e: fairmq::Error) -> fmq_result {
    fail(FMQ_ERROR_ALLOC, e)
}

/// An empty message (to receive into). `*out` owns it (free with `fmq_message_free`).
///
/// # Safety
/// `t` is a valid transport; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_new(t: *const fmq_transport, out: *mut *mut fmq_message) -> fmq_result {
    new_with(t, out, |t| Ok(t.new_message()))
}

/// A message of `size` bytes (zeromq: zeroed; shmem: content undefined).
///
/// # Safety
/// As for `fmq_message_new`.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_new_size(
    t: *const fmq_transport,
    size: usize,
    out: *mut *mut fmq_message,
) -> fmq_result {
    new_with(t, out, |t| t.new_message_with_size(size).map_err(alloc_err))
}

/// A message of `size` bytes whose data is aligned to `alignment` (a power of two; 0 = none).
///
/// # Safety
/// As for `fmq_message_new`.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_new_aligned(
    t: *const fmq_transport,
    size: usize,
    alignment: usize,
    out: *mut *mut fmq_message,
) -> fmq_result {
    new_with(t, out, |t| t.new_message_aligned(size, alignment).map_err(alloc_err))
}

/// A message holding a copy of `size` bytes at `data`.
///
/// # Safety
/// As for `fmq_message_new`; `data` is readable for `size` bytes (may be NULL when `size` is 0).
#[no_mangle]
pub unsafe extern "C" fn fmq_message_new_copy(
    t: *const fmq_transport,
    data: *const c_void,
    size: usize,
    out: *mut *mut fmq_message,
) -> fmq_result {
    new_with(t, out, |t| {
        let bytes = if size == 0 {
            &[][..]
        } else if data.is_null() {
            return Err(fail(FMQ_ERROR_NULL, "data is NULL"));
        } else {
            // SAFETY: readable for `size` bytes per the contract.
            unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) }
        };
        t.new_simple_message(bytes).map_err(alloc_err)
    })
}

/// FairMQ's `NewMessage(data, size, ffn, hint)`: zeromq takes the buffer without copying and calls
/// `ffn(data, hint)` when done (possibly on another thread; NULL `ffn`: the buffer is never
/// released); shmem copies it into shared memory and releases it at once (`ffn`, or `free()` when
/// `ffn` is NULL). Ownership of the buffer passes to the message on success only.
///
/// # Safety
/// As for `fmq_message_new`; `data` is valid for `size` bytes until released as described.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_new_data(
    t: *const fmq_transport,
    data: *mut c_void,
    size: usize,
    ffn: fmq_free_fn,
    hint: *mut c_void,
    out: *mut *mut fmq_message,
) -> fmq_result {
    new_with(t, out, |t| {
        if data.is_null() && size > 0 {
            return Err(fail(FMQ_ERROR_NULL, "data is NULL"));
        }
        Ok(match t {
            Transport::Zeromq(_) => {
                // SAFETY: the buffer contract is the caller's, exactly what from_raw_parts requires.
                Message::Zeromq(unsafe { fairmq_zmq::Message::from_raw_parts(data.cast(), size, ffn, hint) })
            }
            Transport::Shmem(s) => Message::Shmem(
                // SAFETY: as above; shmem copies and releases at once.
                unsafe { s.new_message_from_raw_parts(data.cast(), size, ffn, hint) }
                    .map_err(|e| fail(code_of(e.kind()), e))?,
            ),
        })
    })
}

/// A message over constant bytes that outlive it (zeromq: zero-copy, never released; shmem: copied).
///
/// # Safety
/// As for `fmq_message_new`; `data` stays valid and unchanged until the message and every copy of it
/// are released (for zeromq: forever is the safe choice).
#[no_mangle]
pub unsafe extern "C" fn fmq_message_new_static(
    t: *const fmq_transport,
    data: *const c_void,
    size: usize,
    out: *mut *mut fmq_message,
) -> fmq_result {
    new_with(t, out, |t| {
        if data.is_null() && size > 0 {
            return Err(fail(FMQ_ERROR_NULL, "data is NULL"));
        }
        Ok(match t {
            // SAFETY: a NULL free function marks the buffer constant; its lifetime is the caller's contract.
            Transport::Zeromq(_) => Message::Zeromq(unsafe {
                fairmq_zmq::Message::from_raw_parts(data.cast_mut().cast(), size, None, std::ptr::null_mut())
            }),
            Transport::Shmem(_) => {
                let bytes = if size == 0 {
                    &[][..]
                } else {
                    // SAFETY: readable for `size` bytes per the contract.
                    unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) }
                };
                t.new_simple_message(bytes).map_err(alloc_err)?
            }
        })
    })
}

/// Frees a message (NULL is fine).
///
/// # Safety
/// `m` is NULL or an owned message handle, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_free(m: *mut fmq_message) {
    // SAFETY: contract of `take`.
    guard_value((), || unsafe { take(m) });
}

/// Size in bytes (0 for NULL).
///
/// # Safety
/// `m` is NULL or a valid message.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_size(m: *const fmq_message) -> usize {
    // SAFETY: valid or NULL per contract.
    guard_value(0, || unsafe { refp(m, "message") }.map_or(0, |m| m.0.size()))
}

/// Writable data pointer (NULL when empty or on error). A block shared with copies is copied first
/// (`fmq_last_error` tells if that failed). A shmem region message points into the region itself,
/// as in FairMQ (write only pieces no other message refers to). Valid until the message is changed
/// or freed.
///
/// # Safety
/// `m` is NULL or a valid message used by this thread only.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_data(m: *mut fmq_message) -> *mut c_void {
    guard_value(std::ptr::null_mut(), || {
        // SAFETY: valid per contract.
        match unsafe { mutp(m, "message") } {
            // No Rust reference is made to the region's bytes: C writes through the pointer under
            // FairMQ's contract (Rust's `data_mut` would copy the piece, as it cannot check that).
            Ok(m) if matches!(&m.0, Message::Shmem(s) if s.region_piece().is_some()) => {
                m.0.data_ptr().cast_mut().cast()
            }
            Ok(m) if m.0.size() > 0 => match m.0.data_mut() {
                Ok(d) => d.as_mut_ptr().cast(),
                Err(e) => {
                    set_last(e.to_string());
                    std::ptr::null_mut()
                }
            },
            _ => std::ptr::null_mut(),
        }
    })
}

/// How many messages (in every process) share this message's bytes (FairMQ's shmem
/// `GetRefCount`): 1 for an empty or unshared message, 2 after one `fmq_message_copy`, ...; a
/// zeromq message answers 1. 0 for a NULL message.
///
/// # Safety
/// `m` is NULL or a valid message.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_ref_count(m: *const fmq_message) -> u32 {
    // SAFETY: valid per contract.
    guard_value(0, || unsafe { refp(m, "message") }.map_or(0, |m| m.0.ref_count()))
}

/// The data pointer as FairMQ's `GetData()` gives it (NULL when empty): the bytes the message
/// refers to, also when copies share them, never copied first (`fmq_message_data` copies a shared
/// block before it gives a pointer to write through). Write only through a message whose bytes
/// no other message shares, as FairMQ's contract says. Valid until the message is changed or
/// freed.
///
/// # Safety
/// `m` is NULL or a valid message.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_data_ptr(m: *const fmq_message) -> *mut c_void {
    guard_value(std::ptr::null_mut(), || {
        // SAFETY: valid per contract. No Rust reference is made to the bytes: the pointer goes to
        // C, which writes through it under FairMQ's contract (as for region pieces above).
        unsafe { refp(m, "message") }.map_or(std::ptr::null_mut(), |m| {
            if m.0.size() == 0 {
                std::ptr::null_mut()
            } else {
                m.0.data_ptr().cast_mut().cast()
            }
        })
    })
}

/// Shrinks the message to `size` bytes; false if larger than its size.
///
/// # Safety
/// `m` is a valid message.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_set_used_size(m: *mut fmq_message, size: usize) -> bool {
    // SAFETY: valid per contract.
    guard_value(false, || unsafe { mutp(m, "message") }.is_ok_and(|m| m.0.set_used_size(size)))
}

/// Releases the content; the message becomes empty.
///
/// # Safety
/// `m` is a valid message.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_rebuild(m: *mut fmq_message) -> fmq_result {
    guard(|| {
        // SAFETY: valid per contract.
        code(unsafe { mutp(m, "message") }.map(|m| {
            m.0.rebuild();
            FMQ_OK
        }))
    })
}

/// Releases the content and allocates `size` new bytes.
///
/// # Safety
/// `m` is a valid message.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_rebuild_size(m: *mut fmq_message, size: usize) -> fmq_result {
    guard(|| {
        // SAFETY: valid per contract.
        code(unsafe { mutp(m, "message") }.and_then(|m| m.0.rebuild_with_size(size).map(|_| FMQ_OK).map_err(alloc_err)))
    })
}

/// Releases the content and allocates `size` new bytes aligned to `alignment` (a power of two; 0:
/// none), as FairMQ's `Rebuild(size, Alignment)`.
///
/// # Safety
/// `m` is a valid message.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_rebuild_aligned(m: *mut fmq_message, size: usize, alignment: usize) -> fmq_result {
    guard(|| {
        if alignment != 0 && !alignment.is_power_of_two() {
            return fail(FMQ_ERROR_INVALID, format!("alignment {alignment} is not a power of two"));
        }
        // SAFETY: valid per contract.
        code(
            unsafe { mutp(m, "message") }
                .and_then(|m| m.0.rebuild_with_size_aligned(size, alignment).map(|_| FMQ_OK).map_err(alloc_err)),
        )
    })
}

/// Releases the content and takes `size` bytes at `data` as FairMQ's `Rebuild(data, size, ffn,
/// hint)` does (see `fmq_message_new_data`: zeromq takes the buffer, shmem copies it and releases
/// it at once). On failure the message is empty and the buffer still the caller's.
///
/// # Safety
/// `m` is a valid message; `data` as for `fmq_message_new_data`.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_rebuild_data(
    m: *mut fmq_message,
    data: *mut c_void,
    size: usize,
    ffn: fmq_free_fn,
    hint: *mut c_void,
) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: valid per contract.
            let m = unsafe { mutp(m, "message")? };
            if data.is_null() && size > 0 {
                return Err(fail(FMQ_ERROR_NULL, "data is NULL"));
            }
            m.0.rebuild();
            match &mut m.0 {
                // SAFETY: the buffer contract is the caller's, what from_raw_parts requires.
                Message::Zeromq(z) => *z = unsafe { fairmq_zmq::Message::from_raw_parts(data.cast(), size, ffn, hint) },
                Message::Shmem(s) => {
                    let bytes = if size == 0 {
                        &[][..]
                    } else {
                        // SAFETY: readable for `size` bytes per the contract.
                        unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) }
                    };
                    s.rebuild_from_slice(bytes).map_err(|e| fail(code_of(e.kind()), e))?;
                    // SAFETY: the copy above was the buffer's last use; `ffn` (or free) releases
                    // it, the caller says.
                    unsafe {
                        match ffn {
                            Some(f) => f(data, hint),
                            None => libc::free(data),
                        }
                    }
                }
            }
            Ok(FMQ_OK)
        })())
    })
}

/// Moves `m`'s content into a new message `*out` (free it with `fmq_message_free`); `m` is left
/// empty. A data handler's message belongs to the framework: this is how a handler keeps it beyond
/// the call.
///
/// # Safety
/// `m` is a valid message; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_take(m: *mut fmq_message, out: *mut *mut fmq_message) -> fmq_result {
    guard(|| {
        code((|| {
            check_out(out)?;
            // SAFETY: valid per contract.
            let m = unsafe { mutp(m, "message")? };
            let taken = fmq_message(m.0.take());
            // SAFETY: checked non-null, valid per contract.
            unsafe { give(out, taken) };
            Ok(FMQ_OK)
        })())
    })
}

/// Makes `dst` refer to `src`'s content (shared where the transport allows, else copied). The same
/// message as both `dst` and `src` is left as it is.
///
/// # Safety
/// `dst` and `src` are valid messages.
#[no_mangle]
pub unsafe extern "C" fn fmq_message_copy(dst: *mut fmq_message, src: *const fmq_message) -> fmq_result {
    guard(|| {
        if std::ptr::eq(dst.cast_const(), src) && !src.is_null() {
            return FMQ_OK; // a `&mut` and a `&` to one message would be undefined behaviour
        }
        code((|| {
            // SAFETY: valid per contract, and distinct (checked above).
            let (d, s) = unsafe { (mutp(dst, "dst")?, refp(src, "src")?) };
            d.0.copy_from(&s.0).map_err(alloc_err)?;
            Ok(FMQ_OK)
        })())
    })
}
