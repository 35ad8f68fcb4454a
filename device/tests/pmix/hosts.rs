//! Test hosts made of network namespaces for the multi-host tests.

use super::strings;

/// Test hosts made of network namespaces, each with its own address on a bridge: created by the
/// test, removed on drop (also when the test fails).
pub struct Hosts {
    namespaces: Vec<String>,
    bridge: String,
    /// The hosts' addresses, in the order of `namespaces`.
    pub addresses: Vec<String>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = std::process::Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl Hosts {
    /// `n` hosts, or why they cannot be made here.
    fn new(n: usize) -> Result<Hosts, String> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        // Unique among the tests of this process (they run in parallel) and, mostly, among processes.
        let tag = (std::process::id() % 10_000) * 10 + NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 10;
        let subnet = format!("10.78.{}", tag % 250);
        let mut hosts = Hosts { namespaces: Vec::new(), bridge: format!("fmqb{tag}"), addresses: Vec::new() };
        ip(&["link", "add", &hosts.bridge, "type", "bridge"])?;
        ip(&["addr", "add", &format!("{subnet}.1/24"), "dev", &hosts.bridge])?;
        ip(&["link", "set", &hosts.bridge, "up"])?;
        for i in 0..n {
            let ns = format!("fmqh{tag}-{i}");
            let (outer, inner) = (format!("fmqv{tag}{i}"), format!("fmqi{tag}{i}"));
            let address = format!("{subnet}.{}", i + 2);
            ip(&["netns", "add", &ns])?;
            hosts.namespaces.push(ns.clone());
            ip(&["link", "add", &outer, "type", "veth", "peer", "name", &inner])?;
            ip(&["link", "set", &inner, "netns", &ns])?;
            ip(&["link", "set", &outer, "master", &hosts.bridge])?;
            ip(&["link", "set", &outer, "up"])?;
            ip(&["-n", &ns, "addr", "add", &format!("{address}/24"), "dev", &inner])?;
            ip(&["-n", &ns, "link", "set", &inner, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            ip(&["-n", &ns, "route", "add", "default", "via", &format!("{subnet}.1")])?;
            hosts.addresses.push(address);
        }
        Ok(hosts)
    }

    /// `n` hosts, or `None` (the reason printed) where namespaces cannot be made.
    pub fn or_skip(n: usize) -> Option<Hosts> {
        Hosts::new(n).map_err(|why| println!("skipped: network namespaces cannot be made here ({why})")).ok()
    }

    /// mpirun's options to start processes on these hosts: the launcher agent (written into
    /// `dir`), the hosts' network, and daemons that talk to mpirun directly (ORTE's routing tree
    /// failed now and then across namespaces).
    pub fn launcher(&self, dir: &std::path::Path) -> Vec<String> {
        let agent = self.agent(dir).to_string_lossy().into_owned();
        let subnet = format!("{}.0/24", self.addresses[0].rsplit_once('.').expect("an IPv4 address").0);
        strings(&[
            "--mca",
            "routed",
            "direct",
            "--mca",
            "plm_rsh_agent",
            &agent,
            "--mca",
            "oob_tcp_if_include",
            &subnet,
        ])
    }

    /// mpirun's launcher agent: "ssh HOST COMMAND" runs COMMAND in HOST's namespace. The hosts
    /// share one /tmp and one host name: each daemon gets a session directory of its own under
    /// `dir` (daemons creating the same one at once failed with "File exists").
    fn agent(&self, dir: &std::path::Path) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let mut script = String::from("#!/bin/sh\nhost=$1; shift\ncase \"$host\" in\n");
        for (a, ns) in self.addresses.iter().zip(&self.namespaces) {
            script.push_str(&format!("  {a}) ns={ns} ;;\n"));
        }
        script.push_str(&format!(
            "  *) echo \"unknown host $host\" >&2; exit 1 ;;\nesac\ntmp=\"{}/$ns\"\nmkdir -p \"$tmp\"\n\
             exec ip netns exec \"$ns\" env OMPI_MCA_orte_tmpdir_base=\"$tmp\" /bin/sh -c \"$*\"\n",
            dir.display()
        ));
        let path = dir.join("agent.sh");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            let _ = ip(&["netns", "del", ns]);
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}
