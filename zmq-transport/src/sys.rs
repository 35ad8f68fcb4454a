//! The only place that touches `zmq_msg_t` and raw socket pointers.
//!
//! The safe `zmq` crate falls short in two ways:
//!
//! - It cannot build a frame over a user's buffer with a free callback.
//! - Its `send` consumes the message even when libzmq refuses it (EAGAIN). A send that timed out
//!   would then lose its message.
//!
//! So this module builds frames ([`RawMsg`]) and sends and receives them ([`msg_send`],
//! [`msg_recv`]) with `zmq-sys` directly. Through the raw socket pointer ([`SockPtr`]) it also
//! sets the vendored libzmq's `ZMQ_FAIRMQ_WAKE_FD` ([`set_wake_fd`]) and `ZMQ_CONNECT_ROUTING_ID`
//! ([`set_connect_routing_id`]), and stops a socket's monitor ([`stop_monitor`]).
//!
//! The module keeps two invariants:
//!
//! - A [`RawMsg`] always holds an initialised `zmq_msg_t`. Its `Drop` closes it, exactly once.
//! - The bytes of a frame are handed out mutably only when libzmq says that the frame is neither
//!   shared nor constant. [`RawMsg::bytes_mut`] and [`RawMsg::try_bytes_mut`] ask
//!   [`RawMsg::is_shared`] themselves, and first replace shared or constant bytes by a private
//!   copy.

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

/// A `zmq_msg_t` with the alignment libzmq declares. libzmq declares `zmq_msg_t` with pointer
/// alignment, but zmq-sys declares it as `[u8; 64]`, which has alignment 1.
#[repr(C, align(8))]
struct AlignedMsg(zmq_sys::zmq_msg_t);

/// C signature of a free callback, as libzmq calls it: `ffn(data, hint)`.
pub type FreeFn = unsafe extern "C" fn(data: *mut c_void, hint: *mut c_void);

/// An owned, initialised ZeroMQ frame.
pub(crate) struct RawMsg(UnsafeCell<AlignedMsg>);

// SAFETY: a zmq_msg_t is plain data plus a pointer to heap content whose reference count is
// atomic. libzmq allows any thread to use a frame, as long as only one thread uses it at a time.
// `Send` without `Sync` expresses exactly that.
unsafe impl Send for RawMsg {}

impl RawMsg {
    fn uninit() -> Self {
        RawMsg(UnsafeCell::new(AlignedMsg(zmq_sys::zmq_msg_t::default())))
    }

    fn ptr(&self) -> *mut zmq_sys::zmq_msg_t {
        // `AlignedMsg` is repr(C) with the zmq_msg_t as its only field, so the addresses coincide.
        self.0.get().cast()
    }

    /// An empty frame (size 0).
    #[inline]
    pub(crate) fn empty() -> Self {
        let m = Self::uninit();
        // SAFETY: `m.ptr()` points to writable, aligned storage for a zmq_msg_t. zmq_msg_init
        // cannot fail.
        unsafe { zmq_sys::zmq_msg_init(m.ptr()) };
        m
    }

    /// A frame of `size` zeroed bytes, allocated by libzmq. A very small frame holds its bytes
    /// inline. The bytes are zeroed because Rust may not read uninitialised bytes through
    /// `bytes()`. The bare `zmq` crate zeroes them too.
    ///
    /// Aborts when the bytes cannot be allocated, as Rust's own allocations do.
    pub(crate) fn with_size(size: usize) -> Self {
        Self::try_with_size(size).unwrap_or_else(|| std::process::abort())
    }

    /// [`RawMsg::with_size`], or `None` when the bytes cannot be allocated.
    pub(crate) fn try_with_size(size: usize) -> Option<Self> {
        // libzmq adds its header's size to `size` without an overflow check. A size near
        // usize::MAX would wrap around to a small allocation that claims to be huge. No allocation
        // can exceed isize::MAX anyway, so such a size is refused here.
        if size > isize::MAX as usize {
            return None;
        }
        let m = Self::uninit();
        // SAFETY: the storage is valid as in `empty`. On failure (ENOMEM), the message is left
        // uninitialised. So it is forgotten, never returned or closed. Its storage is inline, so
        // nothing leaks.
        let rc = unsafe { zmq_sys::zmq_msg_init_size(m.ptr(), size) };
        if rc != 0 {
            std::mem::forget(m);
            return None;
        }
        if size != 0 {
            // SAFETY: libzmq just allocated `size` writable bytes at `data_ptr`, for this frame
            // only.
            unsafe { std::ptr::write_bytes(m.data_ptr(), 0, size) };
        }
        Some(m)
    }

    /// A frame over `data[..size]` that libzmq releases by calling `ffn(data, hint)`.
    ///
    /// # Safety
    /// `data` must be valid for reads of `size` bytes until `ffn` is called. If the caller later
    /// writes through the frame, `data` must be valid for those writes too. When `ffn` is `None`
    /// (a constant frame), `data` must stay valid forever. libzmq may call `ffn` from any thread,
    /// including its I/O threads.
    // SAFETY: the function is unsafe to call because the caller promises the buffer's lifetime
    // (see above). The body only hands the buffer to libzmq.
    pub(crate) unsafe fn from_raw_parts(data: *mut u8, size: usize, ffn: Option<FreeFn>, hint: *mut c_void) -> Self {
        let m = Self::uninit();
        // SAFETY: the storage is valid as in `empty`. The caller upholds the buffer contract (see
        // above). libzmq fails here only on ENOMEM, for its small content header.
        let rc = unsafe { zmq_sys::zmq_msg_init_data(m.ptr(), data.cast(), size, ffn, hint) };
        if rc != 0 {
            std::process::abort();
        }
        m
    }

    /// A zero-copy frame over an owned byte container that grants exclusive access through `AsMut`,
    /// such as a `Vec` or a `Box<[u8]>`. Receivers may write to the bytes, even across inproc. So
    /// shared containers such as `Arc<[u8]>` cannot be used. The container is dropped when libzmq
    /// is done with the frame.
    pub(crate) fn from_owner<T: AsMut<[u8]> + Send + 'static>(owner: T) -> Self {
        let mut boxed = Box::new(owner);
        let bytes = (*boxed).as_mut();
        let (data, size) = (bytes.as_mut_ptr(), bytes.len());
        let hint = Box::into_raw(boxed).cast::<c_void>();
        // SAFETY: the bytes live inside the boxed owner. Only `drop_owner::<T>` drops the owner,
        // and libzmq calls it once the frame and all its copies are closed. T: Send allows that
        // call on an I/O thread. The owner is the only way to the bytes (AsMut), so whoever holds
        // the frame may write to them.
        unsafe { Self::from_raw_parts(data, size, Some(drop_owner::<T>), hint) }
    }

    /// A constant frame over static bytes: nothing is freed.
    pub(crate) fn from_static(bytes: &'static [u8]) -> Self {
        // SAFETY: static bytes outlive every frame. With no free function, libzmq marks the frame
        // constant and never writes to it. `is_shared` reports a constant frame as shared, so this
        // module never writes to it either.
        unsafe { Self::from_raw_parts(bytes.as_ptr() as *mut u8, bytes.len(), None, std::ptr::null_mut()) }
    }

    /// A frame of `size` zeroed bytes whose first byte is aligned to `alignment`, a power of two.
    /// Returns `None` when the bytes cannot be allocated.
    pub(crate) fn try_with_alignment(size: usize, alignment: usize) -> Option<Self> {
        if !alignment.is_power_of_two() {
            return None;
        }
        let total = size.checked_add(alignment).filter(|&t| t <= isize::MAX as usize)?;
        // SAFETY: a plain calloc. It zeroes the block, so the bytes may be read. `NonNull::new`
        // checks the result for NULL.
        let base = NonNull::new(unsafe { libc::calloc(total, 1) }.cast::<u8>())?;
        let offset = alignment - (base.as_ptr() as usize % alignment);
        // SAFETY: `offset` is in 1..=alignment, so `data .. data + size` stays inside the `size +
        // alignment` bytes just allocated. The block is freed by `free_malloced(_, base)`.
        unsafe {
            let data = base.as_ptr().add(offset);
            Some(Self::from_raw_parts(data, size, Some(free_malloced), base.as_ptr().cast()))
        }
    }

    /// Size of the frame in bytes.
    #[inline]
    pub(crate) fn size(&self) -> usize {
        // SAFETY: the frame is initialised (module invariant); zmq_msg_size only reads it.
        unsafe { zmq_sys::zmq_msg_size(self.ptr()) }
    }

    /// Address of the first byte (inside the frame itself for very small messages).
    pub(crate) fn data_ptr(&self) -> *mut u8 {
        // SAFETY: initialised frame; zmq_msg_data only computes an address.
        unsafe { zmq_sys::zmq_msg_data(self.ptr()) }.cast()
    }

    /// The frame's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        let size = self.size();
        if size == 0 {
            return &[];
        }
        // SAFETY: libzmq guarantees `size` readable bytes at `data_ptr`. They live as long as the
        // frame, which the borrow of `self` keeps alive. Nobody writes them meanwhile: this module
        // writes only to unshared frames, and only through `&mut self`.
        unsafe { std::slice::from_raw_parts(self.data_ptr(), size) }
    }

    /// The frame's bytes, writable. Shared or constant content is first replaced by a private
    /// copy, aligned to `alignment` when it is non-zero. So no other frame ever sees the write.
    pub(crate) fn bytes_mut(&mut self, alignment: usize) -> &mut [u8] {
        if self.is_shared() {
            *self = RawMsg::copied(self.bytes(), alignment);
        }
        self.unshared_bytes_mut()
    }

    /// Like [`RawMsg::bytes_mut`], but returns `None` when the private copy cannot be allocated.
    /// The frame is then unchanged.
    pub(crate) fn try_bytes_mut(&mut self, alignment: usize) -> Option<&mut [u8]> {
        if self.is_shared() {
            *self = RawMsg::try_copied(self.bytes(), alignment)?;
        }
        Some(self.unshared_bytes_mut())
    }

    /// The bytes of a frame that is not shared.
    fn unshared_bytes_mut(&mut self) -> &mut [u8] {
        let size = self.size();
        if size == 0 {
            return &mut [];
        }
        // SAFETY: the bytes are readable as in `bytes`. Access is exclusive, because both callers
        // replaced a shared or constant frame by a private copy just before, and the frame is
        // borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.data_ptr(), size) }
    }

    /// A fresh private frame holding a copy of `bytes`, aligned to `alignment` when it is non-zero.
    /// Aborts when the frame cannot be allocated, as Rust's own allocations do.
    pub(crate) fn copied(bytes: &[u8], alignment: usize) -> RawMsg {
        Self::try_copied(bytes, alignment).unwrap_or_else(|| std::process::abort())
    }

    /// Like [`RawMsg::copied`], but returns `None` when the copy cannot be allocated.
    pub(crate) fn try_copied(bytes: &[u8], alignment: usize) -> Option<RawMsg> {
        let fresh = if alignment == 0 {
            let m = Self::uninit();
            // SAFETY: as in `with_size`; the bytes are overwritten below, so they need no zeroing.
            if unsafe { zmq_sys::zmq_msg_init_size(m.ptr(), bytes.len()) } != 0 {
                std::mem::forget(m); // uninitialised: never closed (inline storage, nothing leaks)
                return None;
            }
            m
        } else {
            RawMsg::try_with_alignment(bytes.len(), alignment)?
        };
        if !bytes.is_empty() {
            // SAFETY: the fresh frame has exactly `bytes.len()` writable bytes, and nothing else
            // refers to them. `bytes` belongs to another frame, so the ranges do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), fresh.data_ptr(), bytes.len()) };
        }
        Some(fresh)
    }

    /// Whether the content may be referenced by another frame, or is constant.
    pub(crate) fn is_shared(&self) -> bool {
        // SAFETY: initialised frame; ZMQ_SHARED is a read-only property.
        unsafe { zmq_sys::zmq_msg_get(self.ptr(), zmq_sys::ZMQ_SHARED as i32) == 1 }
    }

    /// A new frame that shares this frame's content. libzmq counts the references to the content,
    /// and copies tiny content instead.
    pub(crate) fn share(&self) -> RawMsg {
        let dst = RawMsg::empty();
        // SAFETY: both frames are initialised. zmq_msg_copy closes `dst` (empty) and makes it refer
        // to the source's content. It also adjusts the source's flags through the pointer, which is
        // why the frame is kept in an UnsafeCell.
        let rc = unsafe { zmq_sys::zmq_msg_copy(dst.ptr(), self.ptr()) };
        debug_assert_eq!(rc, 0);
        dst
    }

    /// A frame of the first `len` bytes of `self`, without copying. `self` lives until the view is
    /// closed.
    pub(crate) fn into_prefix_view(self, len: usize) -> RawMsg {
        debug_assert!(len <= self.size());
        // Box the frame first. A very small frame stores its bytes inline, so the address of the
        // bytes must be taken after the frame has reached its final place.
        let boxed = Box::new(self);
        let data = boxed.data_ptr();
        let hint = Box::into_raw(boxed).cast::<c_void>();
        // SAFETY: the bytes belong to the boxed original frame. `drop_owner::<RawMsg>` closes that
        // frame only when the view is released, and `len` is within its size. A view of a very
        // small original points into the boxed frame itself, whose address is stable.
        unsafe { Self::from_raw_parts(data, len, Some(drop_owner::<RawMsg>), hint) }
    }

    /// Whether more frames of the same multipart follow this received frame.
    pub(crate) fn more(&self) -> bool {
        // SAFETY: initialised frame; zmq_msg_more only reads it.
        unsafe { zmq_sys::zmq_msg_more(self.ptr()) == 1 }
    }
}

impl Drop for RawMsg {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the frame is initialised and closed only here; after this it is never used again.
        unsafe { zmq_sys::zmq_msg_close(self.ptr()) };
    }
}

impl std::fmt::Debug for RawMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawMsg").field("size", &self.size()).finish()
    }
}

/// Free callback for boxed owners. It runs on whichever thread libzmq releases the frame on.
// SAFETY: called only by libzmq, once per frame made in this module with `hint` from
// `Box::into_raw`.
unsafe extern "C" fn drop_owner<T>(_data: *mut c_void, hint: *mut c_void) {
    // A panic must not unwind into libzmq's C++ frames. So a drop that panics is abandoned, and
    // what it did not free leaks.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `hint` came from `Box::<T>::into_raw` in this module, and libzmq calls this
        // callback exactly once.
        drop(unsafe { Box::from_raw(hint.cast::<T>()) });
    }));
}

/// Free callback for blocks from `libc::calloc` (aligned frames). `hint` is the start of the block.
// SAFETY: called only by libzmq, once per aligned frame, with the `hint` that
// `try_with_alignment` gave it.
unsafe extern "C" fn free_malloced(_data: *mut c_void, hint: *mut c_void) {
    // SAFETY: `hint` is the pointer that calloc returned in `try_with_alignment`, and libzmq calls
    // this callback exactly once.
    unsafe { libc::free(hint) };
}

/// A libzmq socket handle, borrowed from the `zmq::Socket` that owns and closes it.
#[derive(Clone, Copy)]
pub(crate) struct SockPtr(*mut c_void);

// SAFETY: a SockPtr is only a copy of the handle of the owning `zmq::Socket`, which is `Send`.
// This crate's `Socket` keeps both together and is itself not `Sync`. So only one thread uses the
// handle at a time.
unsafe impl Send for SockPtr {}

impl SockPtr {
    pub(crate) fn of(socket: &mut zmq::Socket) -> Self {
        SockPtr(socket.as_mut_ptr())
    }
}

fn last_error() -> zmq::Error {
    // SAFETY: zmq_errno only reads the calling thread's errno.
    zmq::Error::from_raw(unsafe { zmq_sys::zmq_errno() })
}

/// Sends `msg` with `zmq_msg_send`. On success, libzmq takes the content and leaves `msg` empty.
/// On failure, `msg` is untouched, so the caller keeps its message.
#[inline]
pub(crate) fn msg_send(msg: &mut RawMsg, sock: SockPtr, flags: i32) -> Result<(), zmq::Error> {
    // SAFETY: `msg` is initialised and exclusively borrowed. `sock` is a live socket handle: the
    // owning zmq::Socket outlives every call (see `Socket`).
    let rc = unsafe { zmq_sys::zmq_msg_send(msg.ptr(), sock.0, flags) };
    if rc < 0 {
        Err(last_error())
    } else {
        Ok(())
    }
}

/// Receives into `msg` with `zmq_msg_recv`. On success, the old content of `msg` is released and
/// replaced by the received frame.
#[inline]
pub(crate) fn msg_recv(msg: &mut RawMsg, sock: SockPtr, flags: i32) -> Result<(), zmq::Error> {
    // SAFETY: as in `msg_send`.
    let rc = unsafe { zmq_sys::zmq_msg_recv(msg.ptr(), sock.0, flags) };
    if rc < 0 {
        Err(last_error())
    } else {
        Ok(())
    }
}

/// A socket option of the vendored libzmq (see vendor/zeromq-src/PATCHES.md). While the descriptor
/// set with this option is readable, the socket's blocking send and receive fail with EINTR.
const ZMQ_FAIRMQ_WAKE_FD: i32 = 0x464d57;

/// Makes `fd` interrupt the blocking calls of `sock` (see [`ZMQ_FAIRMQ_WAKE_FD`]).
pub(crate) fn set_wake_fd(sock: SockPtr, fd: std::os::fd::RawFd) -> Result<(), zmq::Error> {
    let value: i32 = fd;
    // SAFETY: `sock` is a live socket handle; the option value is an int read during the call.
    let rc = unsafe {
        zmq_sys::zmq_setsockopt(sock.0, ZMQ_FAIRMQ_WAKE_FD, (&value as *const i32).cast(), std::mem::size_of::<i32>())
    };
    if rc < 0 {
        Err(last_error())
    } else {
        Ok(())
    }
}

/// Stops the socket monitor of `sock` by calling `zmq_socket_monitor` with no endpoint. libzmq
/// sends its last event and closes the monitor's socket while the reader is still connected.
pub(crate) fn stop_monitor(sock: SockPtr) {
    // SAFETY: `sock` is a live socket handle; a NULL endpoint stops monitoring (documented).
    let _ = unsafe { zmq_sys::zmq_socket_monitor(sock.0, std::ptr::null(), 0) };
}

/// Sets `ZMQ_CONNECT_ROUTING_ID`: the routing id a router gives the peer of its next connect.
pub(crate) fn set_connect_routing_id(sock: SockPtr, id: &[u8]) -> Result<(), zmq::Error> {
    // SAFETY: `sock` is a live socket handle; the option value is `id.len()` bytes read during
    // the call.
    let rc = unsafe {
        zmq_sys::zmq_setsockopt(sock.0, zmq_sys::ZMQ_CONNECT_ROUTING_ID as i32, id.as_ptr().cast(), id.len())
    };
    if rc < 0 {
        Err(last_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_report_their_bytes() {
        assert_eq!(RawMsg::empty().size(), 0);
        assert_eq!(RawMsg::from_owner(b"hello".to_vec()).bytes(), b"hello");
        assert_eq!(RawMsg::from_static(b"abc").bytes(), b"abc");
        assert!(RawMsg::from_static(b"abc").is_shared(), "constant frames must not be written");
        for align in [8, 64, 4096] {
            let m = RawMsg::try_with_alignment(100, align).unwrap();
            assert_eq!(m.data_ptr() as usize % align, 0);
            assert_eq!(m.size(), 100);
        }
    }

    #[test]
    fn sizes_no_allocation_can_hold_are_refused_not_wrapped() {
        for size in [usize::MAX, usize::MAX - 16, isize::MAX as usize + 1] {
            assert!(RawMsg::try_with_size(size).is_none(), "{size}");
            assert!(RawMsg::try_with_alignment(size, 64).is_none(), "{size}");
        }
        assert!(RawMsg::try_with_alignment(isize::MAX as usize - 8, 64).is_none(), "size + alignment too large");
        assert_eq!(RawMsg::try_with_size(40).unwrap().bytes(), [0; 40]);
    }

    #[test]
    fn prefix_view_keeps_original_bytes() {
        let m = RawMsg::from_owner((0u8..200).collect::<Vec<_>>());
        let v = m.into_prefix_view(10);
        assert_eq!(v.bytes(), &(0u8..10).collect::<Vec<_>>()[..]);
        let tiny = RawMsg::from_owner(b"ABCDEF".to_vec()).into_prefix_view(2);
        assert_eq!(tiny.bytes(), b"AB");
    }

    #[test]
    fn shared_frames_are_reported() {
        let m = RawMsg::from_owner(vec![7u8; 1000]);
        assert!(!m.is_shared());
        let c = m.share();
        assert!(m.is_shared() && c.is_shared());
        assert_eq!(c.bytes(), m.bytes());
        assert_eq!(c.data_ptr(), m.data_ptr(), "large frames are shared, not copied");
    }
}
