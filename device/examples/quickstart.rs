//! A real topology end to end, over shared memory: a sampler process sends N messages and an end
//! message carrying N to a processor process, which forwards everything to a sink process; the
//! sink checks every sequence number and the count, and reports rates. The devices stop in the
//! right order by themselves (`--control static`): nothing is lost.
//!
//! `cargo run --release --example quickstart [-- <messages> <size> <transport>]`

use fairmq::options::Kind;
use fairmq::{Context, Device, HookResult, Message, Program};
use std::process::{Command, ExitCode};
use std::time::Instant;

const END: u64 = u64::MAX;

fn seq_of(m: &Message) -> u64 {
    m.data().get(..8).map_or(END - 1, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

struct Sampler {
    count: u64,
    size: usize,
    sent: u64,
}

impl Device for Sampler {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.count = ctx.config().get("messages")?;
        self.size = ctx.config().get::<usize>("msg-size")?.max(16);
        Ok(())
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        let ch = ctx.channel("data", 0)?;
        let mut m = ch.new_message_with_size(self.size)?;
        let end = self.sent == self.count;
        let header =
            if end { [END.to_le_bytes(), self.count.to_le_bytes()] } else { [self.sent.to_le_bytes(), [0; 8]] };
        m.data_mut()?[..16].copy_from_slice(&header.concat());
        if ch.send(&mut m).is_err() {
            return Ok(false); // interrupted: a controller stops us
        }
        self.sent += 1;
        Ok(!end)
    }
}

struct Processor;

impl Device for Processor {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        ctx.on_data("in");
        Ok(())
    }
    fn handle_data(&mut self, ctx: &Context, _: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        let end = seq_of(m) == END;
        ctx.send(m, "out", 0)?;
        Ok(!end) // forward the end message, then leave RUNNING
    }
}

struct Sink {
    next: u64,
    bytes: u64,
    start: Option<Instant>,
}

impl Device for Sink {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        ctx.on_data("data");
        Ok(())
    }
    fn handle_data(&mut self, _: &Context, _: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        self.start.get_or_insert_with(Instant::now);
        let seq = seq_of(m);
        if seq == END {
            let announced = u64::from_le_bytes(m.data()[8..16].try_into()?);
            if announced != self.next {
                return Err(format!("received {} messages, the end message says {announced}", self.next).into());
            }
            let secs = self.start.map_or(0.0, |s| s.elapsed().as_secs_f64()).max(1e-9);
            log::warn!(
                "sink: received all {} messages ({} bytes) in {secs:.3} s: {:.0} msg/s, {:.1} MB/s; none lost",
                self.next,
                self.bytes,
                self.next as f64 / secs,
                self.bytes as f64 / 1e6 / secs
            );
            return Ok(false);
        }
        if seq != self.next {
            return Err(format!("gap: expected message {}, got {seq}", self.next).into());
        }
        self.next += 1;
        self.bytes += m.size() as u64;
        Ok(true)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--role") => role(&args[1], &args[2..]),
        _ => orchestrate(&args),
    }
}

fn role(name: &str, rest: &[String]) -> ExitCode {
    let add = |o: &mut fairmq::options::OptionGroup| {
        o.add("messages", Kind::U64, 100_000u64, "data messages to send").add(
            "msg-size",
            Kind::Size,
            1024u64,
            "message size",
        );
    };
    let code = match name {
        "sampler" => Program::new(|_| Ok(Sampler { count: 0, size: 0, sent: 0 })).options(add).run_with_args(rest),
        "processor" => Program::new(|_| Ok(Processor)).options(add).run_with_args(rest),
        _ => Program::new(|_| Ok(Sink { next: 0, bytes: 0, start: None })).options(add).run_with_args(rest),
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn orchestrate(args: &[String]) -> ExitCode {
    let count = args.first().cloned().unwrap_or_else(|| "200000".into());
    let size = args.get(1).cloned().unwrap_or_else(|| "1024".into());
    let transport = args.get(2).cloned().unwrap_or_else(|| "shmem".into());
    let dir = tempfile_dir();
    let session = format!("quickstart-{}", std::process::id());
    let (a, b) = (format!("ipc://{dir}/data1"), format!("ipc://{dir}/data2"));
    println!("quickstart: sampler -> processor -> sink, {count} messages of {size} B over {transport}");
    let me = std::env::current_exe().expect("own path");
    let spawn = |role: &str, id: &str, chans: &[String]| {
        let mut c = Command::new(&me);
        c.args(["--role", role, "--id", id, "--control", "static", "--color", "false", "--severity", "warn"]);
        c.args(["--transport", &transport, "--session", &session, "--shm-segment-size", "268435456"]);
        c.args(["--messages", &count, "--msg-size", &size, "--channel-config"]).args(chans);
        c.spawn().expect("spawn device")
    };
    let mut devices = [
        ("sink", spawn("sink", "sink1", &[format!("name=data,type=pull,method=bind,address={b},rateLogging=0")])),
        (
            "processor",
            spawn(
                "processor",
                "processor1",
                &[
                    format!("name=in,type=pull,method=bind,address={a},rateLogging=0"),
                    format!("name=out,type=push,method=connect,address={b},rateLogging=0"),
                ],
            ),
        ),
        (
            "sampler",
            spawn("sampler", "sampler1", &[format!("name=data,type=push,method=connect,address={a},rateLogging=0")]),
        ),
    ];
    let mut ok = true;
    for (name, child) in devices.iter_mut() {
        let status = child.wait().expect("wait");
        println!("{name} exited with {status}");
        ok &= status.success();
    }
    let _ = std::fs::remove_dir_all(&dir);
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn tempfile_dir() -> String {
    let d = std::env::temp_dir().join(format!("fairmq-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d.display().to_string()
}
