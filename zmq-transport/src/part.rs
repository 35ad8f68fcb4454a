//! What a multipart send takes its parts as: this transport's [`Message`], or a caller's own
//! message type that may hold one. A device's multipart (its messages of either transport, made
//! zeromq ones before the send) is sent where it lies, not moved into a vector of ours and back.

use crate::message::Message;

/// A part of a multipart to send with [`Socket::send_parts_of`](crate::Socket::send_parts_of):
/// a zeromq [`Message`], if it holds one (the send refuses the multipart when any part holds
/// none). The send asks each part once, before it starts.
pub trait Part {
    /// The message to send, emptied by the send.
    fn as_zmq_mut(&mut self) -> Option<&mut Message>;
}

impl Part for Message {
    #[inline]
    fn as_zmq_mut(&mut self) -> Option<&mut Message> {
        Some(self)
    }
}

/// What the send path works on: a message, or a caller's part's message asked for once.
pub(crate) trait Held {
    fn msg_mut(&mut self) -> &mut Message;
}

impl Held for Message {
    #[inline]
    fn msg_mut(&mut self) -> &mut Message {
        self
    }
}

impl Held for &mut Message {
    #[inline]
    fn msg_mut(&mut self) -> &mut Message {
        self
    }
}
