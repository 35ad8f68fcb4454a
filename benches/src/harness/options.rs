//! The harness's command line: what to measure (sections, systems, modes, sizes) and for how long,
//! plus the hidden `role` subcommand with which the harness starts its own sender and receiver
//! processes.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

/// `cargo run --release -p fairmq-benches --bin throughput -- [OPTIONS]`
#[derive(Parser, Debug)]
#[command(
    name = "throughput",
    about = "Cross-process throughput and latency of fairmq-shm, fairmq-zmq, bare libzmq and iceoryx2, side by side"
)]
pub struct Cli {
    /// Internal: one process of a measurement, started by the harness itself.
    #[command(subcommand)]
    pub role: Option<RoleCommand>,
    /// What to measure.
    #[command(flatten)]
    pub options: Options,
}

/// The hidden subcommand of child processes.
#[derive(Subcommand, Debug)]
pub enum RoleCommand {
    /// One sender, receiver, ping or pong process.
    #[command(hide = true)]
    Role(RoleArgs),
}

/// Sections, systems and sizes to run; defaults give the full table.
#[derive(Args, Debug, Clone)]
pub struct Options {
    /// Sections to run, comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "throughput,flat,latency,parts,senders,alloc")]
    pub sections: Vec<Section>,
    /// Systems to compare, comma separated (fairmq-shm is the reference of the ratios).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "fairmq-shm,fairmq-zmq,bare-zmq,iceoryx2")]
    pub systems: Vec<System>,
    /// Modes: `fairmq` (fresh message per send, dropped unread) and `touch` (every byte written and read).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "fairmq,touch")]
    pub modes: Vec<Mode>,
    /// Payload sizes of the throughput table (bytes; suffixes K, M, G for KiB, MiB, GiB).
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64,1K,64K,1M,16M")]
    pub sizes: Vec<usize>,
    /// Parts per multipart of the throughput table.
    #[arg(long, value_delimiter = ',', default_value = "1,8,64")]
    pub parts: Vec<usize>,
    /// Seconds measured per run (senders send --warmup seconds longer; ping measures this long).
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,
    /// Seconds of warm-up before each timed window (senders send this much longer).
    #[arg(long, default_value_t = 0.25)]
    pub warmup: f64,
    /// Runs per cell; tables show the median and the min-max.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Payload sizes of the round-trip latency section.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64,1K")]
    pub latency_sizes: Vec<usize>,
    /// Latency of the ZeroMQ-based systems with a busy-polling receive (as iceoryx2's) instead of a
    /// blocking one.
    #[arg(long)]
    pub busy_poll: bool,
    /// Payload sizes of the topologies section.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64,1K")]
    pub topology_sizes: Vec<usize>,
    /// Payload size of the parts-per-multipart section.
    #[arg(long, value_parser = parse_size, default_value = "64")]
    pub parts_size: usize,
    /// Parts per multipart of the parts section.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32,64")]
    pub parts_scaling: Vec<usize>,
    /// Numbers of sender processes into one receiver (senders section).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    pub senders: Vec<usize>,
    /// Payload sizes of the senders section.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64,1M")]
    pub senders_sizes: Vec<usize>,
    /// Sizes whose alloc+free is timed in the allocator section.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64,1K,64K,1M")]
    pub alloc_sizes: Vec<usize>,
    /// Fractions of the heap filled before every other block is freed (allocator section).
    #[arg(long, value_delimiter = ',', default_value = "0,0.5,0.9,0.99")]
    pub alloc_fill: Vec<f64>,
    /// Heap (and segment) size of the allocator section.
    #[arg(long, value_parser = parse_size, default_value = "256M")]
    pub alloc_heap: usize,
    /// Segment size of fairmq-shm (sparse: only touched pages cost memory; must hold 16 MiB messages).
    #[arg(long, value_parser = parse_size, default_value = "2G")]
    pub segment_size: usize,
    /// Seconds after which a cell's processes are killed and the cell reported as failed
    /// (default: 30 + 10 x (--seconds + --warmup)).
    #[arg(long)]
    pub timeout: Option<f64>,
    /// A directory holding C++ FairMQ's devices (`fairmq-bsampler`, `fairmq-sink`,
    /// `fairmq-proxy`): the `instructions` and `topologies` sections then measure them beside
    /// fairmq-rs's, with the same command lines.
    #[arg(long, value_name = "DIR")]
    pub cpp_fairmq: Option<PathBuf>,
}

/// A section of the output.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Messages/s and GB/s per size and parts, one table per mode.
    Throughput,
    /// Round-trip median and p99.
    Latency,
    /// Messages/s against parts per multipart.
    Parts,
    /// Messages/s against the number of sender processes into one receiver.
    Senders,
    /// Allocator time against segment fragmentation.
    Alloc,
    /// fairmq-shm messages/s against payload size, sizes interleaved.
    Flat,
    /// FairMQ's builtin devices (shmem and zeromq) beside the transport's rate.
    Devices,
    /// Builtin devices with their metrics endpoints scraped every 100 ms, beside none.
    Metrics,
    /// Instructions and cache misses per message, bsampler -> sink under callgrind.
    Instructions,
    /// Multi-peer topologies (fan-out, fan-in, n-m, publish, proxy): messages/s and instructions
    /// per delivered message beside the single link.
    Topologies,
}

/// A system under test.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    /// fairmq-shm over ipc metadata sockets.
    #[value(name = "fairmq-shm")]
    Shm,
    /// fairmq-zmq over ipc.
    #[value(name = "fairmq-zmq")]
    FmqZmq,
    /// The `zmq` crate over ipc.
    #[value(name = "bare-zmq")]
    BareZmq,
    /// iceoryx2 publish-subscribe.
    #[value(name = "iceoryx2")]
    Iceoryx2,
}

impl System {
    /// FairMQ's name of the transport with devices this system is (`shmem` for fairmq-shm,
    /// `zeromq` for fairmq-zmq); `None` for the systems without devices.
    pub fn fairmq_transport(self) -> Option<&'static str> {
        match self {
            System::Shm => Some("shmem"),
            System::FmqZmq => Some("zeromq"),
            _ => None,
        }
    }

    /// The name used on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            System::Shm => "fairmq-shm",
            System::FmqZmq => "fairmq-zmq",
            System::BareZmq => "bare-zmq",
            System::Iceoryx2 => "iceoryx2",
        }
    }
}

/// What sender and receiver do with the payload.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// FairMQ's benchmark mode: a fresh message per send, the receiver drops it unread.
    Fairmq,
    /// The sender writes every byte, the receiver reads every byte (and checks them).
    Touch,
}

impl Mode {
    /// The name used on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Fairmq => "fairmq",
            Mode::Touch => "touch",
        }
    }
}

/// What a child process does.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Receives until every sender's end marker; prints the count and the time.
    Receiver,
    /// Sends for `--seconds`, then an end marker; stays until its stdin closes.
    Sender,
    /// Answers every message with one of the same size until an empty message arrives.
    Pong,
    /// Times round trips for `--seconds`; prints median and p99.
    Ping,
    /// Binds `--address`, connects to `--forward-to` and passes on every message (the senders' end
    /// markers too) until `--senders` ends passed; stays until its stdin closes.
    Forwarder,
}

/// Everything one child process needs, passed on its command line.
#[derive(Args, Debug, Clone)]
pub struct RoleArgs {
    /// What this process does.
    #[arg(value_enum)]
    pub role: Role,
    /// The system under test.
    #[arg(long, value_enum)]
    pub system: System,
    /// Payload handling.
    #[arg(long, value_enum)]
    pub mode: Mode,
    /// Bytes per part.
    #[arg(long)]
    pub size: usize,
    /// Parts per multipart.
    #[arg(long, default_value_t = 1)]
    pub parts: usize,
    /// Seconds to measure.
    #[arg(long)]
    pub seconds: f64,
    /// Seconds of warm-up before the measurement.
    #[arg(long)]
    pub warmup: f64,
    /// ZeroMQ endpoint, or iceoryx2 service name.
    #[arg(long)]
    pub address: String,
    /// fairmq-shm session name.
    #[arg(long)]
    pub session: String,
    /// Directory for iceoryx2's files (its root path).
    #[arg(long)]
    pub scratch: PathBuf,
    /// Prefix of iceoryx2's shared-memory names (so the harness can remove exactly its own).
    #[arg(long)]
    pub prefix: String,
    /// Senders the receiver waits for.
    #[arg(long, default_value_t = 1)]
    pub senders: usize,
    /// fairmq-shm segment size.
    #[arg(long)]
    pub segment_size: usize,
    /// Busy-poll receives in ping and pong (ZeroMQ-based systems).
    #[arg(long)]
    pub busy_poll: bool,
    /// Where a forwarder sends (empty for the other roles).
    #[arg(long, default_value = "")]
    pub forward_to: String,
}

impl RoleArgs {
    /// The command line that reproduces these arguments (after the `role` subcommand).
    pub fn to_args(&self) -> Vec<String> {
        let value = |v: &dyn ValueName| v.value_name();
        let mut a = vec![value(&self.role), "--system".into(), value(&self.system), "--mode".into(), value(&self.mode)];
        for (name, v) in [
            ("--size", self.size.to_string()),
            ("--parts", self.parts.to_string()),
            ("--seconds", self.seconds.to_string()),
            ("--warmup", self.warmup.to_string()),
            ("--address", self.address.clone()),
            ("--session", self.session.clone()),
            ("--scratch", self.scratch.display().to_string()),
            ("--prefix", self.prefix.clone()),
            ("--senders", self.senders.to_string()),
            ("--segment-size", self.segment_size.to_string()),
            ("--forward-to", self.forward_to.clone()),
        ] {
            a.push(name.into());
            a.push(v);
        }
        if self.busy_poll {
            a.push("--busy-poll".into());
        }
        a
    }

    /// How long a sender sends: the warm-up, then the measured time.
    pub fn send_duration(&self) -> Duration {
        Duration::from_secs_f64(self.warmup + self.seconds)
    }

    /// The warm-up.
    pub fn warmup(&self) -> Duration {
        Duration::from_secs_f64(self.warmup)
    }

    /// The measured time.
    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.seconds)
    }
}

/// The command-line spelling of a value enum.
trait ValueName {
    fn value_name(&self) -> String;
}

impl<T: ValueEnum> ValueName for T {
    fn value_name(&self) -> String {
        self.to_possible_value().expect("no skipped values").get_name().to_owned()
    }
}

/// Parses `64`, `1K`, `64KiB`, `1M`, `16MiB`, `2G` (binary multiples).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(digits);
    let n: usize = n.parse().map_err(|_| format!("not a size: {s:?}"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        _ => return Err(format!("unknown unit in {s:?} (use K, M or G)")),
    };
    n.checked_mul(1 << shift).ok_or_else(|| format!("size too large: {s:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("64"), Ok(64));
        assert_eq!(parse_size("1K"), Ok(1024));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert!(parse_size("1T").is_err());
        assert!(parse_size("x").is_err());
    }

    #[test]
    fn role_args_round_trip() {
        let a = RoleArgs {
            role: Role::Receiver,
            system: System::BareZmq,
            mode: Mode::Touch,
            size: 1024,
            parts: 8,
            seconds: 0.5,
            warmup: 0.1,
            address: "ipc:///tmp/x".into(),
            session: "s".into(),
            scratch: "/tmp".into(),
            prefix: "p_".into(),
            senders: 2,
            segment_size: 1 << 30,
            busy_poll: true,
            forward_to: "ipc:///tmp/y".into(),
        };
        let mut argv = vec!["throughput".to_owned(), "role".to_owned()];
        argv.extend(a.to_args());
        let cli = Cli::try_parse_from(argv).unwrap();
        let Some(RoleCommand::Role(b)) = cli.role else { panic!("no role parsed") };
        assert_eq!(b.to_args(), a.to_args());
    }
}
