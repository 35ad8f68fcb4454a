//! What a send takes its parts as: this transport's [`Message`], or a caller's own message type
//! that may hold one. A device's multipart (its messages of either transport, made this
//! transport's before the send) is sent where it lies, not moved into a vector of ours and back.

use super::message::Message;

/// A part of a multipart to send: a shmem [`Message`], if it holds one (a send refuses the
/// multipart when any part holds none).
pub trait Part {
    /// The message to send.
    fn as_shm(&self) -> Option<&Message>;
    /// The message to send, emptied by the send once it was handed over.
    fn as_shm_mut(&mut self) -> Option<&mut Message>;
}

impl Part for Message {
    #[inline]
    fn as_shm(&self) -> Option<&Message> {
        Some(self)
    }

    #[inline]
    fn as_shm_mut(&mut self) -> Option<&mut Message> {
        Some(self)
    }
}

/// The message of a part whose multipart [`Socket::send_parts`](crate::Socket::send_parts) checked.
#[inline]
pub(crate) fn msg<P: Part>(p: &P) -> &Message {
    p.as_shm().expect("send_parts refused parts without a shmem message")
}

/// [`msg`], to change.
#[inline]
pub(crate) fn msg_mut<P: Part>(p: &mut P) -> &mut Message {
    p.as_shm_mut().expect("send_parts refused parts without a shmem message")
}
