//! The parts that a multipart send takes: the trait [`Part`].
//!
//! A part is this transport's [`Message`], or a caller's own message type that may hold one.
//! `Socket::send_parts_of` takes a slice of such parts.
//!
//! A device's multipart holds messages of either transport, and the device makes them zeromq
//! messages before the send. The send then takes the parts where they lie. It does not move them
//! into a vector of this crate and back.
//!
//! Inside the crate, the send path works on a [`Held`]: a message, or the message that a caller's
//! part gave when the send asked for it.

use crate::message::Message;

/// A part of a multipart to send with [`Socket::send_parts_of`](crate::Socket::send_parts_of).
///
/// A part may hold a zeromq [`Message`]. The send refuses the whole multipart when any part holds
/// none. The send asks each part for its message once, before it starts.
pub trait Part {
    /// The message to send, or `None` when the part holds no zeromq message. The send empties the
    /// message.
    fn as_zmq_mut(&mut self) -> Option<&mut Message>;
}

impl Part for Message {
    #[inline]
    fn as_zmq_mut(&mut self) -> Option<&mut Message> {
        Some(self)
    }
}

/// What the send path works on: a message, or the message that a caller's part gave when the send
/// asked for it (once).
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
