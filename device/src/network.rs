//! The address a bind channel without address listens on: FairMQ uses the IPv4 address of
//! `--network-interface` (`default`: the interface of the default route) and port 1, so that the
//! bind fails for non-root users and auto-bind picks a free port.

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

/// `tcp://<ip>:1` for `--network-interface` (`default` = the default route's), or `tcp://*:1`.
pub fn default_bind_address(interface: &str) -> String {
    let name = if interface == "default" { default_route_interface() } else { Some(interface.to_owned()) };
    match name.and_then(|n| interface_ipv4(&n)) {
        Some(ip) => format!("tcp://{ip}:1"),
        None => {
            log::debug!("binding on tcp://*:1");
            "tcp://*:1".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_an_address_and_unknown_interfaces_fall_back() {
        assert_eq!(interface_ipv4("lo"), Some(Ipv4Addr::LOCALHOST));
        assert_eq!(default_bind_address("no-such-if0"), "tcp://*:1");
        assert_eq!(default_bind_address("lo"), "tcp://127.0.0.1:1");
    }
}
