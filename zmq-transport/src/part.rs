//! What a multipart send takes its parts as: this transport's [`Message`], or a caller's own
//! message type that may hold one. A device's multipart (its messages of either transport, made
//! zeromq ones before the send) is sent where it lies, not moved into a vector of ours and back.

use crate::message::Message;
use crate::vocabulary::error::TransferError;

/// A part of a multipart to send: a zeromq [`Message`], if it holds one (a send refuses the
/// multipart when any part holds none).
pub trait Part {
    /// The message to send.
    fn as_zmq(&self) -> Option<&Message>;
    /// The message to send, emptied by the send.
    fn as_zmq_mut(&mut self) -> Option<&mut Message>;
}

impl Part for Message {
    #[inline]
    fn as_zmq(&self) -> Option<&Message> {
        Some(self)
    }

    #[inline]
    fn as_zmq_mut(&mut self) -> Option<&mut Message> {
        Some(self)
    }
}

/// Refuses a multipart with a part that holds no zeromq message.
pub(crate) fn check_all<P: Part>(parts: &[P]) -> Result<(), TransferError> {
    match parts.iter().all(|p| p.as_zmq().is_some()) {
        true => Ok(()),
        false => Err(TransferError::Transport("a part is not a zeromq message".into())),
    }
}

/// The message of a part whose multipart [`check_all`] passed.
#[inline]
pub(crate) fn msg<P: Part>(p: &P) -> &Message {
    p.as_zmq().expect("check_all refused parts without a zeromq message")
}

/// [`msg`], to change.
#[inline]
pub(crate) fn msg_mut<P: Part>(p: &mut P) -> &mut Message {
    p.as_zmq_mut().expect("check_all refused parts without a zeromq message")
}
