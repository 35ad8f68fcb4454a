//! Endpoint addresses as FairMQ writes them.
//!
//! A channel address holds one or more endpoints. FairMQ's attach separates them with `,`, and
//! FairMQ's validation with `;`. This module accepts both and treats them alike, so what validates
//! is what gets attached.
//!
//! An endpoint may start with a modifier: `@` binds, and `+` or `>` connects, whatever the
//! channel's [`Method`] is.
//!
//! - [`split_endpoints`] splits an address into its [`Endpoint`]s.
//! - [`Endpoint::validate`] and [`validate_address`] check endpoints as FairMQ's channel
//!   validation does. An endpoint that passes has a [`Protocol`]: tcp, ipc or inproc.

use crate::vocabulary::error::{AddressProblem, SocketError};
use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::str::FromStr;

/// Bind or connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// Listen on the endpoint.
    Bind,
    /// Connect to a listening peer.
    Connect,
}

impl Method {
    /// FairMQ's name: `"bind"` or `"connect"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Bind => "bind",
            Method::Connect => "connect",
        }
    }
}

impl FromStr for Method {
    type Err = SocketError;

    fn from_str(s: &str) -> Result<Self, SocketError> {
        match s {
            "bind" => Ok(Method::Bind),
            "connect" => Ok(Method::Connect),
            other => Err(SocketError::InvalidMethod { method: other.to_owned(), endpoint: String::new() }),
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The protocol of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `tcp://host:port`
    Tcp,
    /// `ipc://path`
    Ipc,
    /// `inproc://name`
    Inproc,
}

/// One endpoint of a channel address, split into its optional modifier and the ZeroMQ address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint<'a> {
    /// `Some` when the endpoint starts with `@` (bind) or `+`/`>` (connect).
    pub modifier: Option<Method>,
    /// The address without modifier, e.g. `tcp://localhost:5555`.
    pub address: &'a str,
}

impl<'a> Endpoint<'a> {
    /// Splits `text` into its leading modifier, if any, and the address. Surrounding whitespace is
    /// trimmed first.
    pub fn parse(text: &'a str) -> Self {
        let text = text.trim();
        let (modifier, address) = match text.as_bytes().first() {
            Some(b'@') => (Some(Method::Bind), &text[1..]),
            Some(b'+') | Some(b'>') => (Some(Method::Connect), &text[1..]),
            _ => (None, text),
        };
        Endpoint { modifier, address }
    }

    /// The method for this endpoint: its modifier if it has one, else `channel_method`.
    pub fn method(&self, channel_method: Option<Method>) -> Option<Method> {
        self.modifier.or(channel_method)
    }

    /// Checks the address as FairMQ's channel validation does, and returns its protocol.
    pub fn validate(&self) -> Result<Protocol, SocketError> {
        protocol_of(self.address)
            .map_err(|problem| SocketError::InvalidAddress { address: self.address.to_owned(), problem })
    }
}

fn protocol_of(address: &str) -> Result<Protocol, AddressProblem> {
    if address.is_empty() || address == "unspecified" {
        Err(AddressProblem::Unspecified)
    } else if address.contains('\0') {
        Err(AddressProblem::Nul)
    } else if let Some(rest) = address.strip_prefix("tcp://") {
        let (_, port) = rest.rsplit_once(':').ok_or(AddressProblem::MissingPort)?;
        if port == "*" || port.parse::<u16>().is_ok() {
            Ok(Protocol::Tcp)
        } else {
            Err(AddressProblem::BadPort)
        }
    } else if let Some(rest) = address.strip_prefix("ipc://") {
        if rest.is_empty() {
            Err(AddressProblem::EmptyIpc)
        } else {
            Ok(Protocol::Ipc)
        }
    } else if let Some(rest) = address.strip_prefix("inproc://") {
        if rest.is_empty() {
            Err(AddressProblem::EmptyInproc)
        } else {
            Ok(Protocol::Inproc)
        }
    } else {
        Err(AddressProblem::MissingProtocol)
    }
}

/// Splits a channel address at `,` and `;` into its endpoints, in order. Empty pieces are skipped.
pub fn split_endpoints(address: &str) -> impl Iterator<Item = Endpoint<'_>> {
    address.split([',', ';']).filter(|p| !p.trim().is_empty()).map(Endpoint::parse)
}

/// Validates every endpoint of a channel address. An address with no endpoint fails as
/// `AddressProblem::Unspecified`.
pub fn validate_address(address: &str) -> Result<(), SocketError> {
    let mut any = false;
    for ep in split_endpoints(address) {
        ep.validate()?;
        any = true;
    }
    if any {
        Ok(())
    } else {
        Err(SocketError::InvalidAddress { address: address.to_owned(), problem: AddressProblem::Unspecified })
    }
}

/// `tcp://host:port` with the port replaced.
pub(crate) fn with_port(address: &str, port: u16) -> String {
    match address.rsplit_once(':') {
        Some((head, _)) => format!("{head}:{port}"),
        None => address.to_owned(),
    }
}

/// Replaces the host of a tcp address by the host's first IPv4 address, as FairMQ does. A host that
/// is `*` (bind to all interfaces) or already a numeric IPv4 address stays as it is. Addresses of
/// other protocols are returned unchanged.
pub(crate) fn resolve_tcp(address: &str) -> Result<String, SocketError> {
    let Some(rest) = address.strip_prefix("tcp://") else { return Ok(address.to_owned()) };
    let Some((host, port)) = rest.rsplit_once(':') else { return Ok(address.to_owned()) };
    if host == "*" || host.parse::<std::net::Ipv4Addr>().is_ok() {
        return Ok(address.to_owned());
    }
    // The resolver's API needs a port, but the port does not change the result. So `*` (any port)
    // is resolved as port 0.
    let ipv4 = (host, port.parse::<u16>().unwrap_or(0))
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.find(SocketAddr::is_ipv4))
        .ok_or_else(|| SocketError::Resolve { host: host.to_owned() })?;
    Ok(format!("tcp://{}:{port}", ipv4.ip()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(addr: &str) -> AddressProblem {
        match Endpoint::parse(addr).validate() {
            Err(SocketError::InvalidAddress { problem, .. }) => problem,
            other => panic!("{addr}: expected an address error, got {other:?}"),
        }
    }

    #[test]
    fn validation_matches_fairmq_cases() {
        assert_eq!(problem("tcp://localhost"), AddressProblem::MissingPort);
        assert_eq!(problem("tcp://"), AddressProblem::MissingPort);
        assert_eq!(problem("ipc://"), AddressProblem::EmptyIpc);
        assert_eq!(problem("inproc://"), AddressProblem::EmptyInproc);
        assert_eq!(problem("verbs://"), AddressProblem::MissingProtocol);
        assert_eq!(problem("bla"), AddressProblem::MissingProtocol);
        assert_eq!(problem("tcp://host:70000"), AddressProblem::BadPort);
        assert_eq!(problem("unspecified"), AddressProblem::Unspecified);
        assert_eq!(problem("ipc://a\0b"), AddressProblem::Nul, "libzmq would get a cut C string");
        assert_eq!(problem("inproc://x\0"), AddressProblem::Nul);
        assert_eq!(Endpoint::parse("tcp://localhost:5555").validate().unwrap(), Protocol::Tcp);
        assert_eq!(Endpoint::parse("@ipc:///tmp/x").validate().unwrap(), Protocol::Ipc);
        assert_eq!(Endpoint::parse(">inproc://a").validate().unwrap(), Protocol::Inproc);
        let msg = Endpoint::parse("tcp://localhost").validate().unwrap_err().to_string();
        assert_eq!(msg, "invalid channel address: 'tcp://localhost' (missing port?)");
    }

    #[test]
    fn modifiers_and_lists() {
        let eps: Vec<_> = split_endpoints("@tcp://*:5555, +ipc://a;>inproc://b,tcp://h:1").collect();
        assert_eq!(eps.len(), 4);
        assert_eq!(eps[0], Endpoint { modifier: Some(Method::Bind), address: "tcp://*:5555" });
        assert_eq!(eps[1].modifier, Some(Method::Connect));
        assert_eq!(eps[2], Endpoint { modifier: Some(Method::Connect), address: "inproc://b" });
        assert_eq!(eps[3].method(Some(Method::Bind)), Some(Method::Bind));
        assert_eq!(eps[3].method(None), None);
        assert!(validate_address("tcp://a:1,ipc://").is_err(), "every endpoint of a list is checked");
        assert!(validate_address(" , ").is_err());
    }

    #[test]
    fn port_replacement_and_resolution() {
        assert_eq!(with_port("tcp://127.0.0.1:1", 22001), "tcp://127.0.0.1:22001");
        assert_eq!(resolve_tcp("tcp://localhost:5555").unwrap(), "tcp://127.0.0.1:5555");
        assert_eq!(resolve_tcp("tcp://*:5555").unwrap(), "tcp://*:5555");
        assert_eq!(resolve_tcp("ipc://x").unwrap(), "ipc://x");
        assert!(matches!(resolve_tcp("tcp://no-such-host.invalid:1"), Err(SocketError::Resolve { .. })));
        assert_eq!("bind".parse::<Method>().unwrap(), Method::Bind);
        assert!("listen".parse::<Method>().is_err());
    }
}
