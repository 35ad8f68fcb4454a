//! Messages of the zeromq transport: [`Message`], one ZeroMQ frame each.
//!
//! A message owns its frame. A send moves the frame into libzmq and leaves the message empty. A
//! send that fails or times out leaves the message untouched.
//!
//! A message's bytes come from one of three places:
//!
//! - the message allocates them, zeroed or holding a copy ([`Message::with_size`],
//!   [`Message::from_slice`], ...);
//! - a Rust owner gives them, without a copy ([`Message::from_vec`], [`Message::from_owner`]);
//! - they are static, or a caller's buffer that a free function releases
//!   ([`Message::from_static`], [`Message::from_raw_parts`]).
//!
//! [`Message::copy_from`] shares the bytes instead of copying them, and libzmq counts the
//! references. A write through [`Message::data_mut`] to shared or constant bytes first makes a
//! private copy, so no other message sees the change.

use crate::sys::{FreeFn, RawMsg};
use crate::vocabulary::error::AllocError;
use std::ffi::c_void;
use std::fmt;

/// A message of the zeromq transport.
///
/// A `Message` owns one ZeroMQ frame. Sending moves the frame into libzmq and leaves the message
/// empty (size 0). A send that fails or times out leaves the message untouched.
///
/// [`copy_from`](Message::copy_from) shares the bytes instead of copying them, and libzmq counts
/// the references. A write through [`data_mut`](Message::data_mut) to shared or constant bytes
/// first makes a private copy, so a copy of the message never sees the change.
///
/// # Examples
///
/// ```
/// use fairmq_zmq::Message;
///
/// let original = Message::from_slice(b"shared");
/// let mut copy = Message::new();
/// copy.copy_from(&original);
/// copy.data_mut()[0] = b'S'; // a private copy is made first
/// assert_eq!(original.data(), b"shared");
/// assert_eq!(copy.data(), b"Shared");
/// ```
pub struct Message {
    pub(crate) raw: RawMsg,
    /// The requested alignment of received data (0: none). The message keeps it across receives.
    /// FairMQ forgets it after the first realignment, but a user of `Alignment` expects it to stay.
    alignment: usize,
}

impl Message {
    /// An empty message (size 0), typically to receive into.
    pub fn new() -> Self {
        Message { raw: RawMsg::empty(), alignment: 0 }
    }

    /// An empty message whose received data will be aligned to `alignment` bytes (0: no request).
    pub fn with_receive_alignment(alignment: usize) -> Self {
        Message { raw: RawMsg::empty(), alignment: normalized(alignment) }
    }

    /// A message of `size` zeroed bytes. Aborts when the bytes cannot be allocated, as `Vec` does.
    /// For sizes that come from outside, use [`Message::try_with_size`].
    pub fn with_size(size: usize) -> Self {
        Message { raw: RawMsg::with_size(size), alignment: 0 }
    }

    /// A message of `size` zeroed bytes, or an error when they cannot be allocated.
    pub fn try_with_size(size: usize) -> Result<Self, AllocError> {
        Self::try_with_size_aligned(size, 0)
    }

    /// A message of `size` zeroed bytes whose data starts at a multiple of `alignment` (0: no
    /// request). Aborts when the bytes cannot be allocated.
    pub fn with_size_aligned(size: usize, alignment: usize) -> Self {
        Self::try_with_size_aligned(size, alignment).unwrap_or_else(|_| std::process::abort())
    }

    /// Like [`Message::with_size_aligned`], but returns an error when the bytes cannot be
    /// allocated.
    pub fn try_with_size_aligned(size: usize, alignment: usize) -> Result<Self, AllocError> {
        let alignment = normalized(alignment);
        let raw =
            if alignment == 0 { RawMsg::try_with_size(size) } else { RawMsg::try_with_alignment(size, alignment) };
        raw.map(|raw| Message { raw, alignment }).ok_or(AllocError { size, alignment })
    }

    /// A message holding a copy of `bytes`.
    pub fn from_slice(bytes: &[u8]) -> Self {
        Message { raw: RawMsg::copied(bytes, 0), alignment: 0 }
    }

    /// Like [`Message::from_slice`], but returns an error when the copy cannot be allocated. The C
    /// ABI and the device's messages use it to report that error instead of aborting.
    pub fn try_from_slice(bytes: &[u8]) -> Result<Self, AllocError> {
        let raw = RawMsg::try_copied(bytes, 0).ok_or(AllocError { size: bytes.len(), alignment: 0 })?;
        Ok(Message { raw, alignment: 0 })
    }

    /// A message over the vector's bytes, without a copy. The message drops the vector when libzmq
    /// is done with the bytes.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        Message { raw: RawMsg::from_owner(bytes), alignment: 0 }
    }

    /// A message over owned bytes, without a copy. The owner must grant exclusive access to the
    /// bytes: it can be anything `AsMut<[u8]>`, such as a `Box<[u8]>`, a `Vec` or a
    /// `bytes::BytesMut`. The message drops the owner when libzmq is done with the frame, possibly
    /// on a ZeroMQ I/O thread. Copy shared bytes, such as an `Arc<[u8]>`, with
    /// [`Message::from_slice`] instead, because the receiver of a message may write to it.
    pub fn from_owner<T: AsMut<[u8]> + Send + 'static>(owner: T) -> Self {
        Message { raw: RawMsg::from_owner(owner), alignment: 0 }
    }

    /// A message over static bytes, without a copy (FairMQ's `NewStaticMessage`). The bytes are
    /// never freed.
    pub fn from_static(bytes: &'static [u8]) -> Self {
        Message { raw: RawMsg::from_static(bytes), alignment: 0 }
    }

    /// A message over a caller's buffer, without a copy
    /// (FairMQ's `NewMessage(data, size, ffn, hint)`). When libzmq is done with the buffer, it
    /// releases the buffer by calling `ffn(data, hint)`. With `ffn == None`, the buffer is treated
    /// as constant and is never released.
    ///
    /// # Safety
    /// `data` must be valid for reads and writes of `size` bytes until `ffn` is called, or forever
    /// when `ffn` is `None`. Nothing else may write to the buffer meanwhile. `ffn` may run on any
    /// thread.
    // SAFETY: unsafe to call because the buffer's lifetime is the caller's promise (contract
    // above).
    pub unsafe fn from_raw_parts(data: *mut u8, size: usize, ffn: Option<FreeFn>, hint: *mut c_void) -> Self {
        // SAFETY: the caller's contract is the one `RawMsg::from_raw_parts` requires.
        Message { raw: unsafe { RawMsg::from_raw_parts(data, size, ffn, hint) }, alignment: 0 }
    }

    /// Size in bytes.
    #[inline]
    pub fn size(&self) -> usize {
        self.raw.size()
    }

    /// Whether the size is 0.
    pub fn is_empty(&self) -> bool {
        self.size() == 0
    }

    /// The bytes.
    #[inline]
    pub fn data(&self) -> &[u8] {
        self.raw.bytes()
    }

    /// Address of the data, null when the size is 0 (as FairMQ's `GetData`).
    pub fn data_ptr(&self) -> *const u8 {
        if self.size() == 0 {
            std::ptr::null()
        } else {
            self.raw.data_ptr()
        }
    }

    /// The bytes, writable. Shared or constant bytes are first copied into a private frame, with
    /// the same alignment, so other messages never see the write.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        self.raw.bytes_mut(self.alignment)
    }

    /// Like [`Message::data_mut`], but returns an error when a shared message's private copy
    /// cannot be allocated. The message is then unchanged.
    pub fn try_data_mut(&mut self) -> Result<&mut [u8], AllocError> {
        let (size, alignment) = (self.size(), self.alignment);
        self.raw.try_bytes_mut(alignment).ok_or(AllocError { size, alignment })
    }

    /// Shrinks the message to its first `size` bytes. When the bytes are shared or constant, the
    /// message copies those first `size` bytes; otherwise it copies nothing. Returns false, and
    /// changes nothing, if `size` is larger than the current size. Size 0 releases the buffer at
    /// once.
    pub fn set_used_size(&mut self, size: usize) -> bool {
        let current = self.size();
        if size > current {
            log::error!("cannot set used size higher than original.");
            return false;
        }
        if size == current {
            return true;
        }
        if size == 0 {
            self.raw = RawMsg::empty();
        } else if self.raw.is_shared() {
            // A view would be a frame of its own over bytes that other frames refer to, or over
            // constant memory. Whoever holds the view could write to those bytes. So the message
            // copies the prefix instead.
            self.raw = RawMsg::copied(&self.raw.bytes()[..size], self.alignment);
        } else {
            let old = std::mem::replace(&mut self.raw, RawMsg::empty());
            self.raw = old.into_prefix_view(size);
        }
        true
    }

    /// Releases the content. The message becomes empty and forgets its alignment.
    pub fn rebuild(&mut self) {
        *self = Message::new();
    }

    /// Releases the content and remembers an alignment for the next receive.
    pub fn rebuild_with_receive_alignment(&mut self, alignment: usize) {
        *self = Message::with_receive_alignment(alignment);
    }

    /// Releases the content and allocates `size` new bytes.
    pub fn rebuild_with_size(&mut self, size: usize) {
        *self = Message::with_size(size);
    }

    /// Releases the content and allocates `size` new bytes aligned to `alignment`.
    pub fn rebuild_with_size_aligned(&mut self, size: usize, alignment: usize) {
        *self = Message::with_size_aligned(size, alignment);
    }

    /// Like [`Message::rebuild_with_size_aligned`], but returns an error when the bytes cannot be
    /// allocated. The message is then empty.
    pub fn try_rebuild_with_size_aligned(&mut self, size: usize, alignment: usize) -> Result<(), AllocError> {
        *self = Message::new();
        *self = Message::try_with_size_aligned(size, alignment)?;
        Ok(())
    }

    /// Releases the content and adopts `bytes` without copying.
    pub fn rebuild_from_vec(&mut self, bytes: Vec<u8>) {
        *self = Message::from_vec(bytes);
    }

    /// Releases the content and adopts a caller's buffer.
    ///
    /// # Safety
    /// As for [`Message::from_raw_parts`].
    // SAFETY: unsafe to call because the buffer's lifetime is the caller's promise (contract
    // above).
    pub unsafe fn rebuild_from_raw_parts(
        &mut self,
        data: *mut u8,
        size: usize,
        ffn: Option<FreeFn>,
        hint: *mut c_void,
    ) {
        // SAFETY: the caller's contract is the one `from_raw_parts` requires.
        *self = unsafe { Message::from_raw_parts(data, size, ffn, hint) };
    }

    /// Makes this message refer to the same bytes as `other`. The bytes are shared, not copied.
    pub fn copy_from(&mut self, other: &Message) {
        self.raw = other.raw.share();
        self.alignment = other.alignment;
    }

    /// The alignment requested for this message (0: none).
    pub fn alignment(&self) -> usize {
        self.alignment
    }

    /// Called after a successful receive. When the data misses the requested alignment, the
    /// message copies it into an aligned frame.
    pub(crate) fn after_receive(&mut self) {
        let a = self.alignment;
        if a != 0 && self.size() != 0 && self.raw.data_ptr() as usize % a != 0 {
            match RawMsg::try_copied(self.raw.bytes(), a) {
                Some(aligned) => self.raw = aligned,
                None => log::error!("could not realign a received message of {} bytes to {a}", self.size()),
            }
        }
    }

    /// Called after a successful send: libzmq has taken the content and left an empty frame.
    pub(crate) fn after_send(&mut self) {
        debug_assert_eq!(self.raw.size(), 0);
    }
}

fn normalized(alignment: usize) -> usize {
    match alignment {
        0 => 0,
        // No allocation can honour an alignment beyond the largest power of two. `usize::MAX`
        // makes the allocation fail, with an error from the `try_` constructors, instead of
        // overflowing here.
        a => a.checked_next_power_of_two().unwrap_or(usize::MAX),
    }
}

impl Default for Message {
    fn default() -> Self {
        Message::new()
    }
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Message").field("size", &self.size()).field("alignment", &self.alignment).finish()
    }
}

impl From<Vec<u8>> for Message {
    fn from(v: Vec<u8>) -> Self {
        Message::from_vec(v)
    }
}

impl From<&[u8]> for Message {
    fn from(v: &[u8]) -> Self {
        Message::from_slice(v)
    }
}

impl From<String> for Message {
    fn from(s: String) -> Self {
        Message::from_vec(s.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shortened_copy_or_static_message_is_copied_before_a_write() {
        let original = Message::from_vec((0u8..100).collect());
        let mut copy = Message::new();
        copy.copy_from(&original);
        assert!(copy.set_used_size(10));
        copy.data_mut()[0] = 0xff;
        assert_eq!(original.data()[0], 0, "the original's bytes are untouched");
        static BYTES: [u8; 8] = *b"constant";
        let mut s = Message::from_static(&BYTES);
        assert!(s.set_used_size(4));
        s.data_mut()[0] = b'C';
        assert_eq!((&BYTES[..], s.data()), (&b"constant"[..], &b"Cons"[..]));
    }

    #[test]
    fn resize_like_fairmq_test() {
        let mut m = Message::from_slice(b"ABCDEF");
        assert!(m.set_used_size(5));
        assert!(m.set_used_size(5));
        assert!(!m.set_used_size(7));
        assert_eq!(m.data(), b"ABCDE");
        assert!(m.set_used_size(2));
        assert_eq!(m.data(), b"AB");
        let mut c = Message::new();
        c.copy_from(&m);
        assert_eq!(c.size(), 2);
        let mut big = Message::with_size(1000);
        assert!(big.set_used_size(0));
        assert_eq!(big.size(), 0);
        assert!(big.data_ptr().is_null());
    }

    #[test]
    fn rebuild_variants() {
        let mut m = Message::new();
        assert_eq!(m.size(), 0);
        m.rebuild_with_size(100);
        assert_eq!(m.size(), 100);
        m.rebuild_from_vec(b"asdf".to_vec());
        assert_eq!(m.data(), b"asdf");
        m.rebuild_with_size_aligned(50, 64);
        assert_eq!(m.data_ptr() as usize % 64, 0);
        m.rebuild_with_size_aligned(50, 32);
        assert_eq!(m.data_ptr() as usize % 32, 0);
        m.rebuild();
        assert!(m.is_empty());
    }

    #[test]
    fn aligned_messages_and_their_copies_are_aligned() {
        for size in [100, 32] {
            let m = Message::with_size_aligned(size, 64);
            assert_eq!(m.data_ptr() as usize % 64, 0);
            let mut c = Message::new();
            c.copy_from(&m);
            assert_eq!(c.data_ptr() as usize % 64, 0);
        }
    }

    #[test]
    fn writing_a_shared_message_does_not_change_its_copy() {
        let mut a = Message::from_vec(vec![1u8; 4096]);
        let mut b = Message::new();
        b.copy_from(&a);
        assert_eq!(a.data_ptr(), b.data_ptr(), "copy shares the bytes");
        a.data_mut()[0] = 9;
        assert_eq!(a.data()[0], 9);
        assert_eq!(b.data()[0], 1);
        let mut s = Message::from_static(b"static");
        s.data_mut()[0] = b'S';
        assert_eq!(s.data(), b"Static");
    }

    #[test]
    fn user_buffer_free_callback_runs_once_when_released() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static FREED: AtomicUsize = AtomicUsize::new(0);
        // SAFETY: unsafe to call because `data` must be the boxed slice leaked below (contract of a
        // free callback); only libzmq calls it, once per buffer.
        unsafe extern "C" fn free_it(data: *mut c_void, hint: *mut c_void) {
            assert_eq!(hint as usize, 42);
            // SAFETY: `data` is the boxed slice leaked below, released exactly once.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(data.cast::<u8>(), 8)) });
            FREED.fetch_add(1, Ordering::SeqCst);
        }
        let buf = Box::into_raw(vec![5u8; 8].into_boxed_slice()).cast::<u8>();
        // SAFETY: the buffer is valid until free_it runs.
        let m = unsafe { Message::from_raw_parts(buf, 8, Some(free_it), 42 as *mut c_void) };
        let mut c = Message::new();
        c.copy_from(&m);
        drop(m);
        assert_eq!(FREED.load(Ordering::SeqCst), 0, "the copy still refers to the buffer");
        assert_eq!(c.data(), &[5u8; 8]);
        drop(c);
        assert_eq!(FREED.load(Ordering::SeqCst), 1);
    }
}
