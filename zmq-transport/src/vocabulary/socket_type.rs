//! Socket patterns by FairMQ's names: [`SocketType`].
//!
//! A channel's `type` names its pattern: `pair`, `push`, `pull`, `pub`, `sub`, `xpub`, `xsub`,
//! `req`, `rep`, `dealer` or `router`. The names are case-sensitive, as in FairMQ.
//! [`SocketType::can_receive`] and [`SocketType::can_send`] tell which directions a poller watches.

use crate::vocabulary::error::SocketError;
use std::fmt;
use std::str::FromStr;

/// The socket pattern of a channel (`type` in FairMQ's channel configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SocketType {
    /// Exclusive pair.
    Pair,
    /// Load-balancing sender.
    Push,
    /// Fair-queuing receiver.
    Pull,
    /// Publisher. In FairMQ, only the zeromq transport offers it.
    Pub,
    /// Subscriber, subscribed to everything at creation.
    Sub,
    /// Publisher that sees subscriptions.
    XPub,
    /// Subscriber without automatic subscription.
    XSub,
    /// Requester: strictly send, receive, send, ...
    Req,
    /// Replier: strictly receive, send, receive, ...
    Rep,
    /// Asynchronous requester.
    Dealer,
    /// Asynchronous replier that routes by peer identity.
    Router,
}

impl SocketType {
    /// Every type, in the order of FairMQ's validation list.
    pub const ALL: [SocketType; 11] = [
        SocketType::Sub,
        SocketType::Pub,
        SocketType::Pull,
        SocketType::Push,
        SocketType::Req,
        SocketType::Rep,
        SocketType::XSub,
        SocketType::XPub,
        SocketType::Dealer,
        SocketType::Router,
        SocketType::Pair,
    ];

    /// FairMQ's name of the type (`"push"`, `"pull"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            SocketType::Pair => "pair",
            SocketType::Push => "push",
            SocketType::Pull => "pull",
            SocketType::Pub => "pub",
            SocketType::Sub => "sub",
            SocketType::XPub => "xpub",
            SocketType::XSub => "xsub",
            SocketType::Req => "req",
            SocketType::Rep => "rep",
            SocketType::Dealer => "dealer",
            SocketType::Router => "router",
        }
    }

    pub(crate) fn to_zmq(self) -> zmq::SocketType {
        match self {
            SocketType::Pair => zmq::PAIR,
            SocketType::Push => zmq::PUSH,
            SocketType::Pull => zmq::PULL,
            SocketType::Pub => zmq::PUB,
            SocketType::Sub => zmq::SUB,
            SocketType::XPub => zmq::XPUB,
            SocketType::XSub => zmq::XSUB,
            SocketType::Req => zmq::REQ,
            SocketType::Rep => zmq::REP,
            SocketType::Dealer => zmq::DEALER,
            SocketType::Router => zmq::ROUTER,
        }
    }

    /// Whether the socket can receive (a poller watches it for input).
    pub fn can_receive(self) -> bool {
        !matches!(self, SocketType::Push | SocketType::Pub | SocketType::XPub)
    }

    /// Whether the socket can send (a poller watches it for output).
    pub fn can_send(self) -> bool {
        !matches!(self, SocketType::Pull | SocketType::Sub | SocketType::XSub)
    }
}

impl FromStr for SocketType {
    type Err = SocketError;

    fn from_str(s: &str) -> Result<Self, SocketError> {
        SocketType::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| SocketError::InvalidSocketType(s.to_owned()))
    }
}

impl fmt::Display for SocketType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_an_error() {
        for t in SocketType::ALL {
            assert_eq!(t.as_str().parse::<SocketType>().unwrap(), t);
        }
        let err = "bla".parse::<SocketType>().unwrap_err();
        assert_eq!(err.to_string(), "Invalid channel type: 'bla'");
        assert!("PUSH".parse::<SocketType>().is_err(), "names are case-sensitive as in FairMQ");
    }

    #[test]
    fn directions_follow_fairmq_poller_table() {
        let inout: Vec<_> = SocketType::ALL.into_iter().filter(|t| t.can_send() && t.can_receive()).collect();
        assert_eq!(inout, [SocketType::Req, SocketType::Rep, SocketType::Dealer, SocketType::Router, SocketType::Pair]);
        assert!(!SocketType::Push.can_receive() && SocketType::Push.can_send());
        assert!(SocketType::Sub.can_receive() && !SocketType::Sub.can_send());
    }
}
