//! The standard `process_*` metrics of client_golang's process collector (CPU time, memory,
//! descriptors, threads, start time), read from `/proc/self` at each scrape.

use super::families::{Family, Value};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

const CPU: Family = Family::counter("process_cpu", "Total user and system CPU time spent").in_seconds();
const RESIDENT: Family = Family::gauge("process_resident_memory", "Resident memory size").in_bytes();
const VIRTUAL: Family = Family::gauge("process_virtual_memory", "Virtual memory size").in_bytes();
const OPEN_FDS: Family = Family::gauge("process_open_fds", "Number of open file descriptors");
const MAX_FDS: Family = Family::gauge("process_max_fds", "Maximum number of open file descriptors");
const THREADS: Family = Family::gauge("process_threads", "Number of OS threads in the process");
const START: Family =
    Family::gauge("process_start_time", "Start time of the process since the Unix epoch").in_seconds();

/// A collector that reads this process's figures at each scrape.
#[derive(Debug, Default)]
pub(crate) struct ProcessCollector;

/// The fields of `/proc/self/stat` that the collector uses, all of them after the command name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stat {
    pub cpu_seconds: f64,
    pub threads: u64,
    /// The process's start time, in clock ticks after boot.
    pub start_ticks: u64,
    pub virtual_bytes: u64,
    pub resident_pages: u64,
}

/// Parses `/proc/<pid>/stat`. The command name may hold spaces and parentheses, so `parse_stat`
/// counts the fields from the last `)`.
pub(crate) fn parse_stat(text: &str, ticks_per_second: f64) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `f` holds the fields from field 3 (state) on, so an index in `f` is the field number minus 3.
    // proc(5) numbers the fields: utime is 14, stime 15, num_threads 20, starttime 22, vsize 23
    // and rss 24.
    let num = |field: usize| f.get(field - 3)?.parse::<u64>().ok();
    Some(Stat {
        cpu_seconds: (num(14)? + num(15)?) as f64 / ticks_per_second,
        threads: num(20)?,
        start_ticks: num(22)?,
        virtual_bytes: num(23)?,
        resident_pages: num(24)?,
    })
}

/// Returns the boot time, in seconds since the epoch, from the `btime` line of `/proc/stat`.
fn boot_time() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    s.lines().find_map(|l| l.strip_prefix("btime ")).and_then(|v| v.trim().parse().ok())
}

fn sysconf(name: nix::unistd::SysconfVar) -> Option<u64> {
    nix::unistd::sysconf(name).ok().flatten().and_then(|v| u64::try_from(v).ok()).filter(|&v| v > 0)
}

impl Collector for ProcessCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let ticks = sysconf(nix::unistd::SysconfVar::CLK_TCK).unwrap_or(100) as f64;
        let page = sysconf(nix::unistd::SysconfVar::PAGE_SIZE).unwrap_or(4096);
        let none = Vec::new;
        if let Some(st) = std::fs::read_to_string("/proc/self/stat").ok().and_then(|s| parse_stat(&s, ticks)) {
            CPU.write(&mut enc, [(none(), Value::Float(st.cpu_seconds))])?;
            RESIDENT.write(&mut enc, [(none(), Value::Int(st.resident_pages * page))])?;
            VIRTUAL.write(&mut enc, [(none(), Value::Int(st.virtual_bytes))])?;
            THREADS.write(&mut enc, [(none(), Value::Int(st.threads))])?;
            if let Some(boot) = boot_time() {
                let start = boot as f64 + st.start_ticks as f64 / ticks;
                START.write(&mut enc, [(none(), Value::Float(start))])?;
            }
        }
        if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
            // While the directory is read, its own descriptor is listed too, so it is not counted.
            let n = fds.count().saturating_sub(1) as u64;
            OPEN_FDS.write(&mut enc, [(none(), Value::Int(n))])?;
        }
        if let Ok((soft, _)) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE) {
            MAX_FDS.write(&mut enc, [(none(), Value::Int(soft))])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let line = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 12345 104857600 2560 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        let s = parse_stat(line, 100.0).unwrap();
        assert_eq!(
            s,
            Stat { cpu_seconds: 3.0, threads: 7, start_ticks: 12345, virtual_bytes: 104857600, resident_pages: 2560 }
        );
        assert_eq!(parse_stat("4242 (cut short) S 1", 100.0), None);
        assert_eq!(parse_stat("no parenthesis", 100.0), None);
    }
}
