//! The `--metrics-address` value: `HOST:PORT`, where HOST is an IPv4 address, `[IPv6]`, a name,
//! or `*` (every interface); port 0 picks a free port.

use std::net::{SocketAddr, ToSocketAddrs};

/// The error for a refused metrics address, with the reason.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("--metrics-address '{given}': {reason} (expected HOST:PORT, e.g. 127.0.0.1:9100, *:0 or [::1]:0)")]
pub struct AddressError {
    /// The value given.
    pub given: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Parses `given` into a socket address. A host name can resolve to several addresses: `parse`
/// returns the first one.
pub fn parse(given: &str) -> Result<SocketAddr, AddressError> {
    let refuse = |reason: &str| AddressError { given: given.to_owned(), reason: reason.to_owned() };
    let (host, port) = given.rsplit_once(':').ok_or_else(|| refuse("no port"))?;
    let port: u16 = port.parse().map_err(|_| refuse("the port is not a number from 0 to 65535"))?;
    let host = match host {
        "" => return Err(refuse("no host (use * for every interface)")),
        "*" => "0.0.0.0",
        h => h.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(h),
    };
    if host.contains(':') {
        let ip: std::net::Ipv6Addr = host.parse().map_err(|_| refuse("not an IPv6 address"))?;
        return Ok(SocketAddr::from((ip, port)));
    }
    (host, port)
        .to_socket_addrs()
        .map_err(|e| refuse(&format!("the host does not resolve: {e}")))?
        .next()
        .ok_or_else(|| refuse("the host resolves to no address"))
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn addresses_as_operators_write_them() {
        assert_eq!(parse("127.0.0.1:9100").unwrap().to_string(), "127.0.0.1:9100");
        assert_eq!(parse("*:0").unwrap().to_string(), "0.0.0.0:0");
        assert_eq!(parse("[::1]:0").unwrap().to_string(), "[::1]:0");
        assert!(parse("localhost:0").unwrap().ip().is_loopback());
        for bad in
            ["", "9100", "127.0.0.1", ":9100", "127.0.0.1:port", "127.0.0.1:70000", "[::1:0", "no.such.host.invalid:1"]
        {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.given, bad);
            assert!(e.to_string().contains("expected HOST:PORT"), "{e}");
        }
    }
}
