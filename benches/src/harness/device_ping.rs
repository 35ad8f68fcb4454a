//! Device to device round trip: two FairMQ devices on one PAIR channel, `ping` timing a fresh
//! message out and the answer in (as the harness's ping does with the bare transport), `pong`
//! answering each message with a fresh one of the same size. With `--busy-poll` both receive by
//! polling without blocking (as iceoryx2's own benchmark does), else they block in receive.
//!
//! The ping ends its run once it has measured (an empty message tells the pong to end too) and
//! reports `Round trip median: <ns> ns, p99: <ns> ns, over <n> round trips.`

use super::devices::{number_before, read_to_end, Implementation};
use super::spawn::{Cell, Runner};
use super::workload::{self, Latency, Spin};
use fairmq::options::{Kind, OptionGroup};
use fairmq::{Channel, Context, Device, HookResult, Message, TransferError};
use std::io::BufRead;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// Receives into `m`: polling without blocking (spin, then yield) when `busy`, else blocking in
/// slices, so that a state change (SIGTERM) ends the wait. `Ok(None)`: a state change is pending.
fn receive(ctx: &Context, ch: &Channel, m: &mut Message, busy: bool) -> Result<Option<usize>, TransferError> {
    let mut spin = Spin::default();
    loop {
        match ch.receive_timeout(m, if busy { 0 } else { 100 }) {
            Ok(n) => return Ok(Some(n)),
            Err(TransferError::Timeout) if ctx.new_state_pending() => return Ok(None),
            Err(TransferError::Timeout) => spin.wait(),
            Err(e) => return Err(e),
        }
    }
}

/// The ping's report of its round trips.
fn report(l: &Latency) -> String {
    format!("Round trip median: {} ns, p99: {} ns, over {} round trips.", l.median_ns, l.p99_ns, l.count)
}

/// The round trips a log line reports, if it is the ping's report.
fn parse_report(line: &str) -> Option<Latency> {
    Some(Latency {
        median_ns: number_before(line, " ns, p99")?,
        p99_ns: number_before(line, " ns, over")?,
        count: number_before(line, " round trips")? as u64,
    })
}

/// Options both devices take.
fn common_options(o: &mut OptionGroup) {
    o.add("busy-poll", Kind::Bool, false, "Receive by polling without blocking");
}

/// Times round trips on channel `data`.
#[derive(Debug, Default)]
pub struct Ping {
    size: usize,
    busy: bool,
    warmup: Duration,
    measure: Duration,
    round_trips: u64,
}

impl Ping {
    /// The ping device's options: the common ones, the message size and the measured times.
    pub fn options(o: &mut OptionGroup) {
        common_options(o);
        o.add("msg-size", Kind::Size, 64u64, "Message size in bytes")
            .add("warmup-ms", Kind::U64, 250u64, "Round trips before measuring (ms, at least 100 round trips)")
            .add("measure-ms", Kind::U64, 1000u64, "Round trips measured (ms)")
            .add("round-trips", Kind::U64, 0u64, "Exactly this many round trips, no warm-up (0: by time)");
    }
}

impl Device for Ping {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        let c = ctx.config();
        self.size = c.get("msg-size")?;
        self.busy = c.get("busy-poll")?;
        self.warmup = Duration::from_millis(c.get("warmup-ms")?);
        self.measure = Duration::from_millis(c.get("measure-ms")?);
        self.round_trips = c.get("round-trips")?;
        Ok(())
    }

    fn run(&mut self, ctx: &Context) -> HookResult {
        let ch = ctx.channel("data", 0)?;
        // The first failure ends the work of every later round trip (the timing loop runs on).
        let mut failed: Option<Box<dyn std::error::Error + Send + Sync>> = None;
        let round_trip = || -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            let mut m = ch.new_message_with_size(self.size)?;
            ch.send(&mut m)?;
            let mut r = ch.new_message();
            match receive(ctx, ch, &mut r, self.busy)? {
                Some(_) => Ok(()),
                None => Err("stopped before the answer came".into()),
            }
        };
        let once = |_| {
            if failed.is_none() {
                failed = round_trip().err();
            }
        };
        let lat = match self.round_trips {
            0 => workload::ping_for(self.warmup, self.measure, once),
            n => workload::ping_count(n, once),
        };
        if let Some(e) = failed {
            return Err(e);
        }
        ch.send(&mut ch.new_message())?;
        log::info!("{}", report(&lat));
        Ok(())
    }
}

/// Answers each message on channel `data` with a fresh one of the same size, until an empty one
/// comes (or it is told to stop).
#[derive(Debug, Default)]
pub struct Pong {
    busy: bool,
}

impl Pong {
    /// The pong device's options: the common ones.
    pub fn options(o: &mut OptionGroup) {
        common_options(o);
    }
}

impl Device for Pong {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.busy = ctx.config().get("busy-poll")?;
        Ok(())
    }

    fn run(&mut self, ctx: &Context) -> HookResult {
        let ch = ctx.channel("data", 0)?;
        loop {
            let mut m = ch.new_message();
            match receive(ctx, ch, &mut m, self.busy)? {
                None | Some(0) => return Ok(()),
                Some(n) => {
                    drop(m);
                    ch.send(&mut ch.new_message_with_size(n)?)?;
                }
            }
        }
    }
}

/// One ping-pong cell.
struct PingRun<'a> {
    /// Whose devices: fairmq-rs's, or C++ FairMQ's built from `benches/cpp/pingpong.cxx`.
    implementation: Implementation,
    transport: &'static str,
    size: usize,
    /// 0: by time (`--seconds`, after `--warmup`).
    round_trips: u64,
    profile: Option<&'a Path>,
}

impl Runner {
    /// The round trip between `implementation`'s `ping` and `pong` devices on FairMQ's
    /// `transport` (`shmem` or `zeromq`), messages of `size` bytes.
    pub fn device_latency(
        &mut self,
        implementation: Implementation,
        transport: &'static str,
        size: usize,
    ) -> Result<Latency, String> {
        self.device_cell("fmqbping", |runner, cell, session| {
            let run = PingRun { implementation, transport, size, round_trips: 0, profile: None };
            runner.run_ping(cell, &run, session)
        })
    }

    /// Exactly `round_trips` round trips (see [`Runner::device_latency`]), under callgrind when
    /// `profile` is a directory (as `ping1.callgrind` and `pong1.callgrind`).
    pub fn device_round_trips(
        &mut self,
        implementation: Implementation,
        transport: &'static str,
        size: usize,
        round_trips: u64,
        profile: Option<&Path>,
    ) -> Result<Latency, String> {
        self.device_cell("fmqbping", |runner, cell, session| {
            runner.run_ping(cell, &PingRun { implementation, transport, size, round_trips, profile }, session)
        })
    }

    fn run_ping(&mut self, cell: &Cell, r: &PingRun<'_>, session: &str) -> Result<Latency, String> {
        let (transport, size) = (r.transport, r.size);
        let address = self.address("ping");
        let device = |id: &str, method: &str| -> Vec<String> {
            let mut a = self.device_args(id, transport, session);
            a.extend(["--busy-poll".into(), self.busy_poll().to_string()]);
            a.extend(["--channel-config".into(), format!("name=data,type=pair,method={method},address={address}")]);
            a
        };
        let spawn = |name: &str, args: &[String], stdout: Stdio, id: &str| {
            self.spawn_as(r.implementation, name, args, stdout, r.profile, id)
        };
        let pong = device("pong1", "connect");
        cell.add_quiet(spawn("pong", &pong, Stdio::null(), "pong1")?);
        let mut ping = device("ping1", "bind");
        let ms = |s: f64| ((s * 1000.0) as u64).max(1).to_string();
        ping.extend(["--msg-size".into(), size.to_string()]);
        ping.extend(["--warmup-ms".into(), ms(self.warmup()), "--measure-ms".into(), ms(self.seconds())]);
        ping.extend(["--round-trips".into(), r.round_trips.to_string()]);
        let mut out = cell.add(spawn("ping", &ping, Stdio::piped(), "ping1")?);
        let mut line = String::new();
        let latency = loop {
            line.clear();
            if out.read_line(&mut line).map_err(|e| format!("reading the ping: {e}"))? == 0 {
                return Err("the ping ended without reporting its round trips".into());
            }
            if let Some(l) = parse_report(&line) {
                break l;
            }
        };
        // The pong ends at the empty message; told to stop as well, should it have missed it.
        cell.terminate_quiet();
        read_to_end(&mut out);
        Ok(latency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pings_report_is_read_back() {
        let l = Latency { median_ns: 842.0, p99_ns: 1312.0, count: 1_180_000 };
        let line = format!("[22:50:01][INFO] {}", report(&l));
        assert_eq!(parse_report(&line), Some(l));
        assert_eq!(parse_report("[22:50:01][INFO] Received 1000 messages in 12ms."), None);
    }
}
