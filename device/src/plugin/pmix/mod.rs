//! The `pmix` plugin (`-P pmix`, cargo feature `pmix`): devices started by a PMIx launcher
//! (OpenMPI's `mpirun`, Slurm's `srun --mpi=pmix`) find each other without written addresses.
//!
//! - As it starts, every device publishes its `--id`; an id that several processes of the job share
//!   (`-n 2 fairmq-proxy --id proc`) becomes `<id>_<n>`, n counting those processes by rank.
//! - Once BOUND, every device publishes the addresses its bound channels got (a wildcard host is
//!   replaced by the address of `--network-interface`), and a fence waits for all of them. A
//!   connecting channel without an address then connects to the addresses bound under its name
//!   (several, comma-separated, when several processes bind it), while the device is CONNECTING.
//!   A connecting channel of several sub-channels (`numSockets=N`) deals them out instead: with
//!   as many binders as sub-channels, one each.
//!
//! Every process of the job must load the plugin: the two fences are collective.

pub mod command;
mod controller;
#[allow(unsafe_code)]
mod ffi;
mod link;
mod operator;
mod steps;

use super::{builtin_control::crate_version, Plugin, PluginServices, Version};
use crate::channel::ChannelConfig;
use crate::properties::Properties;
use crate::state::State;
use crate::BoxError;
use fairmq_zmq::layered::LayeredSocket;
use std::collections::BTreeMap;

const ID_KEY: &str = "fairmq-rs.id";
const BOUND_KEY: &str = "fairmq-rs.bound";
/// The key under which a device publishes its channel types, comma-separated. From the types, the
/// command tells sources from sinks.
const ROLE_KEY: &str = "fairmq-rs.role";
/// The key under which a `fairmq-pmix-command` process of the job publishes its address and the
/// secret that its links show, tab-separated. Devices publish an empty value.
const CONTROLLER_KEY: &str = "fairmq-rs.controller";
/// The key under which a device publishes the `host:port` of its metrics endpoint, as other hosts
/// reach it. An empty value means that the device has no endpoint.
const METRICS_KEY: &str = "fairmq-rs.metrics";

/// The longest frame that the command's sockets accept. Their frames hold only a few words.
/// A larger frame from a peer ends the peer's connection instead of being buffered, however large
/// the peer says the frame is. This matters because the controller's ROUTER listens on the
/// network.
const MAX_CONTROL_FRAME: i64 = 4096;

/// Makes a socket for the command's links (controller, devices' links, operator). Its frames are
/// bounded by `MAX_CONTROL_FRAME`.
fn control_socket(
    transport: &fairmq_zmq::Transport,
    ty: fairmq_zmq::SocketType,
    name: &str,
) -> Result<fairmq_zmq::Socket, BoxError> {
    let socket = transport.socket(ty, name)?;
    socket.set_max_message_size(MAX_CONTROL_FRAME)?;
    Ok(socket)
}

/// The `pmix` plugin.
#[derive(Debug, Default)]
pub struct PmixPlugin {
    exchange: Option<std::thread::JoinHandle<()>>,
    link: Option<(std::thread::JoinHandle<()>, link::StopFlag)>,
    initialized: bool,
}

impl Plugin for PmixPlugin {
    fn name(&self) -> &str {
        "pmix"
    }
    fn version(&self) -> Version {
        crate_version()
    }
    fn maintainer(&self) -> &str {
        "fairmq-rs"
    }
    fn start(&mut self, services: PluginServices) -> Result<(), BoxError> {
        let (nspace, rank) = ffi::init()?;
        self.initialized = true;
        let size = ffi::job_size()?;
        log::debug!("pmix: namespace {nspace}, rank {rank} of {size}");
        let config = services.config().clone();
        let timeout = config.get_or::<i32>("init-timeout", 120).unwrap_or(120);
        let id = config.get_or::<String>("id", String::new()).unwrap_or_default();
        ffi::put(ID_KEY, &id)?;
        ffi::put(CONTROLLER_KEY, "")?;
        // The metrics endpoint starts before the plugins, so it is bound already. When port 0 was
        // given, the endpoint holds the port that was chosen.
        let metrics = config.get_or::<String>(crate::metrics::OPTION, String::new()).unwrap_or_default();
        let interface = config.get_or::<String>("network-interface", "default".into()).unwrap_or_default();
        ffi::put(METRICS_KEY, &reachable_endpoint(&metrics, &interface))?;
        ffi::fence(timeout)?;
        let ids = (0..size).map(|r| ffi::get(r, ID_KEY)).collect::<Result<Vec<_>, _>>()?;
        // The command process, if any, has an empty id, so it never shares a device's id.
        if let Some(unique) = unique_id(&ids, rank as usize) {
            log::info!("pmix: device id '{id}' is given to several processes; this one is '{unique}'");
            config.set("id", unique);
        }
        // Find the command's address and the secret that its links must show (tab-separated).
        let controller = (0..size).find_map(|r| {
            let value = ffi::get(r, CONTROLLER_KEY).ok()?;
            value.split_once('\t').map(|(a, t)| (a.to_owned(), t.to_owned()))
        });
        if let Some((address, token)) = controller {
            log::info!("pmix: driven by the command process at {address}");
            let (tx, rx) = std::sync::mpsc::channel();
            services.subscribe_to_state_change(move |s| {
                let _ = tx.send(s);
            });
            let stop = link::StopFlag::default();
            let (svc, flag) = (services.clone(), stop.clone());
            let t = std::thread::spawn(move || link::run(&svc, (&address, &token), rank, &rx, &flag));
            self.link = Some((t, stop));
        }
        self.exchange = Some(std::thread::spawn(move || {
            if let Err(e) = exchange_addresses(&services, size, timeout) {
                log::error!("pmix: {e}");
            }
        }));
        Ok(())
    }
    fn stop(&mut self) {
        if let Some(t) = self.exchange.take() {
            let _ = t.join();
        }
        if let Some((t, stop)) = self.link.take() {
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            let _ = t.join();
        }
        if self.initialized {
            if let Err(e) = ffi::finalize() {
                log::warn!("pmix: {e}");
            }
        }
    }
}

/// Returns `<id>_<n>` for the process at `index` when `ids` gives its id to several processes.
/// `n` counts the processes with that id, in rank order.
fn unique_id(ids: &[String], index: usize) -> Option<String> {
    let mine = ids.get(index)?;
    let same: Vec<usize> = ids.iter().enumerate().filter(|(_, i)| *i == mine).map(|(n, _)| n).collect();
    (same.len() > 1).then(|| format!("{mine}_{}", same.iter().position(|&n| n == index).unwrap_or(0)))
}

/// Runs once the device is BOUND. Publishes the addresses of the bound channels and waits for the
/// addresses of every process. Then gives each connecting channel without an address the
/// addresses bound under the channel's name.
fn exchange_addresses(services: &PluginServices, size: u32, timeout: i32) -> Result<(), BoxError> {
    if !services.wait_for_state(State::Bound, None).map_err(|_| "the device went to ERROR before BOUND")? {
        return Ok(());
    }
    let config = services.config();
    let interface = config.get_or::<String>("network-interface", "default".into())?;
    let channels = sub_channels(config);
    let mine: Vec<String> = channels
        .iter()
        .filter(|c| c.method == "bind" && has_address(c))
        .map(|c| format!("{}\t{}", c.prefix, reachable(&c.address, &interface)))
        .collect();
    ffi::put(BOUND_KEY, &mine.join("\n"))?;
    // The channels exist once the device has initialised. Their types tell the command which
    // devices are sources and which are sinks.
    let types: Vec<&str> = channels.iter().map(|c| c.ty.as_str()).collect();
    ffi::put(ROLE_KEY, &types.join(","))?;
    ffi::fence(timeout)?;
    let mut bound: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in 0..size {
        for line in ffi::get(r, BOUND_KEY)?.lines() {
            if let Some((name, address)) = line.split_once('\t') {
                bound.entry(name.to_owned()).or_default().push(address.to_owned());
            }
        }
    }
    let counts = config.channel_info();
    for c in channels.iter().filter(|c| c.method == "connect" && !has_address(c)) {
        let (name, i) = (&c.prefix, c.index);
        match bound.get(name) {
            Some(list) => {
                let joined = share(list, counts.get(name).copied().unwrap_or(1), i).join(",");
                log::info!("pmix: channel {name}[{i}] connects to {joined}");
                config.set(&format!("chans.{name}.{i}.address"), joined);
            }
            None => log::error!("pmix: no process of the job binds a channel named '{name}'"),
        }
    }
    Ok(())
}

/// Returns the bound addresses (in rank order) that sub-channel `i` connects to, for a connecting
/// channel with `k` sub-channels.
///
/// A channel with one sub-channel connects to all of the addresses. Otherwise the addresses are
/// dealt out in turn. With as many addresses as sub-channels, each sub-channel gets one: the
/// guide's one receiver per sub-channel. With fewer addresses than sub-channels, a sub-channel
/// that is left over takes one again.
fn share(bound: &[String], k: usize, i: usize) -> Vec<String> {
    if k <= 1 || bound.is_empty() {
        return bound.to_vec();
    }
    if bound.len() < k {
        return vec![bound[i % bound.len()].clone()];
    }
    bound.iter().skip(i).step_by(k).cloned().collect()
}

/// Every sub-channel of the device, as configured. A key that the configuration lacks keeps
/// FairMQ's default.
fn sub_channels(config: &Properties) -> Vec<ChannelConfig> {
    config
        .channel_info()
        .into_iter()
        .flat_map(|(name, count)| (0..count).map(move |i| (name.clone(), i)))
        .filter_map(|(name, i)| ChannelConfig::from_properties(config, &name, i).ok())
        .collect()
}

/// Whether a sub-channel's address is known: it was given, or binding the channel set it.
fn has_address(c: &ChannelConfig) -> bool {
    !matches!(c.address.as_str(), "" | "unspecified")
}

/// A metrics endpoint's `host:port` as other hosts reach it (see [`reachable`]). An empty
/// `address` means no endpoint, and gives an empty text.
fn reachable_endpoint(address: &str, interface: &str) -> String {
    if address.is_empty() {
        return String::new();
    }
    let tcp = reachable(&format!("tcp://{}", address.replace("[::]", "*")), interface);
    tcp.strip_prefix("tcp://").unwrap_or(&tcp).to_owned()
}

/// Replaces a wildcard host (`*`, `0.0.0.0`) in `address` with the IPv4 address of `interface`,
/// so that other hosts can connect to it. The interface `default` means the default route's.
fn reachable(address: &str, interface: &str) -> String {
    let Some(rest) = address.strip_prefix("tcp://") else { return address.to_owned() };
    let Some((host, port)) = rest.rsplit_once(':') else { return address.to_owned() };
    if host != "*" && host != "0.0.0.0" {
        return address.to_owned();
    }
    let name =
        if interface == "default" { crate::network::default_route_interface() } else { Some(interface.to_owned()) };
    match name.and_then(|n| crate::network::interface_ipv4(&n)) {
        Some(ip) => format!("tcp://{ip}:{port}"),
        None => format!("tcp://127.0.0.1:{port}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_endpoints_are_published_as_other_hosts_reach_them() {
        assert_eq!(reachable_endpoint("", "lo"), "");
        assert_eq!(reachable_endpoint("10.1.2.3:9100", "lo"), "10.1.2.3:9100");
        assert_eq!(reachable_endpoint("0.0.0.0:9100", "lo"), "127.0.0.1:9100");
    }

    #[test]
    fn shared_ids_are_numbered_by_rank_and_wildcards_become_reachable() {
        let ids: Vec<String> = ["sampler", "proc", "sink", "proc"].iter().map(|s| s.to_string()).collect();
        assert_eq!(unique_id(&ids, 0), None);
        assert_eq!(unique_id(&ids, 1).as_deref(), Some("proc_0"));
        assert_eq!(unique_id(&ids, 3).as_deref(), Some("proc_1"));
        assert_eq!(reachable("tcp://*:5555", "lo"), "tcp://127.0.0.1:5555");
        assert_eq!(reachable("tcp://0.0.0.0:5555", "lo"), "tcp://127.0.0.1:5555");
        assert_eq!(reachable("tcp://10.1.2.3:5555", "lo"), "tcp://10.1.2.3:5555");
        assert_eq!(reachable("ipc:///tmp/x", "lo"), "ipc:///tmp/x");
    }

    #[test]
    fn a_control_socket_drops_a_peer_whose_frame_is_too_large() {
        use fairmq_zmq::{Message, SocketType, Transport};
        let t = Transport::new("control-frames").unwrap();
        let router = control_socket(&t, SocketType::Router, "router").unwrap();
        let bound = router.attach("tcp://127.0.0.1:0", &fairmq_zmq::AttachOptions::new(Some(fairmq_zmq::Method::Bind)));
        let bound = bound.unwrap();
        let send = |size: usize, name: &str| {
            let d = t.socket(SocketType::Dealer, name).unwrap();
            d.connect(&bound).unwrap();
            d.send(&mut Message::from_slice(&vec![7u8; size]), 5000).unwrap();
            d
        };
        let _big = send(MAX_CONTROL_FRAME as usize + 1, "big");
        let mut parts = Vec::new();
        assert!(router.receive_parts(&mut parts, 500).is_err(), "a frame over the bound is not delivered");
        let _small = send(64, "small");
        router.receive_parts(&mut parts, 5000).unwrap();
        let id = String::from_utf8_lossy(parts[0].data()).into_owned();
        assert!(id.contains("small") && parts[1].size() == 64, "{id}: {} bytes", parts[1].size());
    }

    #[test]
    fn bound_addresses_are_dealt_out_over_sub_channels() {
        let bound: Vec<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
        assert_eq!(share(&bound, 1, 0), bound);
        assert_eq!(share(&bound, 2, 0), ["a", "c"]);
        assert_eq!(share(&bound, 2, 1), ["b", "d"]);
        assert_eq!(share(&bound, 4, 3), ["d"]);
        assert_eq!(share(&bound[..2], 3, 2), ["a"]);
        assert_eq!(share(&[], 2, 1), Vec::<String>::new());
    }
}
