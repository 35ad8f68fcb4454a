//! The address that a bind channel without an address listens on: [`default_bind_address`].
//!
//! As in FairMQ, the address is the IPv4 address of `--network-interface`, with port 1. The
//! interface `default` is that of the default route; without a default route, the channel binds
//! on every interface. Port 1 makes the bind fail for users other than root, so that auto-bind
//! picks a free port instead.

use std::net::Ipv4Addr;

/// The interface of the default route, from `/proc/net/route`.
pub fn default_route_interface() -> Option<String> {
    let table = std::fs::read_to_string("/proc/net/route").ok()?;
    table.lines().skip(1).find_map(|l| {
        let cols: Vec<&str> = l.split_whitespace().collect();
        (cols.len() > 2 && cols[1] == "00000000").then(|| cols[0].to_owned())
    })
}

/// The first IPv4 address of interface `name`.
pub fn interface_ipv4(name: &str) -> Option<Ipv4Addr> {
    nix::ifaddrs::getifaddrs().ok()?.find_map(|ifa| {
        if ifa.interface_name != name {
            return None;
        }
        ifa.address.and_then(|a| a.as_sockaddr_in().map(|s| s.ip()))
    })
}

/// `tcp://<ip>:1` for `--network-interface` (`default` = the default route's; without a default
/// route, `tcp://*:1`). An interface given by name that has no IPv4 address is an error, as in
/// FairMQ (whose bind then fails): binding on every interface instead would be a surprise.
pub fn default_bind_address(interface: &str) -> Result<String, String> {
    if interface != "default" {
        return match interface_ipv4(interface) {
            Some(ip) => Ok(format!("tcp://{ip}:1")),
            None => Err(format!("Could not find provided network interface: \"{interface}\"!, exiting.")),
        };
    }
    match default_route_interface().and_then(|n| interface_ipv4(&n)) {
        Some(ip) => Ok(format!("tcp://{ip}:1")),
        None => {
            log::debug!("no default route: binding on tcp://*:1");
            Ok("tcp://*:1".to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_an_address_and_unknown_interfaces_are_errors() {
        assert_eq!(interface_ipv4("lo"), Some(Ipv4Addr::LOCALHOST));
        let e = default_bind_address("no-such-if0").unwrap_err();
        assert_eq!(e, "Could not find provided network interface: \"no-such-if0\"!, exiting.");
        assert_eq!(default_bind_address("lo").unwrap(), "tcp://127.0.0.1:1");
        assert!(default_bind_address("default").unwrap().starts_with("tcp://"));
    }
}
