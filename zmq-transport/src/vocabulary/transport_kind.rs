//! Transport names: [`TransportKind`], one of `"default"`, `"zeromq"` and `"shmem"`.
//!
//! `default` stands for the device's default transport, which the option `--transport` sets.
//! [`TransportKind::resolve`] replaces it by that transport.

use crate::vocabulary::error::SocketError;
use std::fmt;
use std::str::FromStr;

/// Which transport a channel uses (`transport` in FairMQ's channel configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TransportKind {
    /// The device's default transport, which the option `--transport` sets. That option is
    /// `zeromq` by default.
    #[default]
    Default,
    /// Payload inside ZeroMQ frames.
    Zeromq,
    /// Payload in shared memory, metadata over ZeroMQ.
    Shmem,
}

impl TransportKind {
    /// FairMQ's name.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::Default => "default",
            TransportKind::Zeromq => "zeromq",
            TransportKind::Shmem => "shmem",
        }
    }

    /// Returns `device_default` for `Default`, and any other kind unchanged.
    pub fn resolve(self, device_default: TransportKind) -> TransportKind {
        match self {
            TransportKind::Default => device_default,
            other => other,
        }
    }
}

impl FromStr for TransportKind {
    type Err = SocketError;

    fn from_str(s: &str) -> Result<Self, SocketError> {
        match s {
            "default" => Ok(TransportKind::Default),
            "zeromq" => Ok(TransportKind::Zeromq),
            "shmem" => Ok(TransportKind::Shmem),
            other => Err(SocketError::UnknownTransport(other.to_owned())),
        }
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_unknown_is_a_clear_error() {
        assert_eq!("zeromq".parse::<TransportKind>().unwrap(), TransportKind::Zeromq);
        assert_eq!("shmem".parse::<TransportKind>().unwrap(), TransportKind::Shmem);
        assert_eq!("default".parse::<TransportKind>().unwrap(), TransportKind::Default);
        let e = "nanomsg".parse::<TransportKind>().unwrap_err();
        assert_eq!(e.to_string(), "Unknown transport provided: nanomsg");
        assert_eq!(TransportKind::Default.resolve(TransportKind::Shmem), TransportKind::Shmem);
        assert_eq!(TransportKind::Zeromq.resolve(TransportKind::Shmem), TransportKind::Zeromq);
    }
}
