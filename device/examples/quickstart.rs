//! A real topology end to end, over shared memory: a sampler process sends N messages and an end
//! message carrying N to a processor process, which forwards everything to a sink process; the
//! sink checks every sequence number and the count, and reports rates. The devices stop in the
//! right order by themselves (`--control static`): nothing is lost. Ctrl-C stops the topology in the
//! guide's order: only the sampler is signalled; it sends its end message while resetting, and the
//! processor and the sink end after it, so even then no message is lost.
//!
//! `cargo run --release --example quickstart [-- <messages> <size> <transport>]` (messages 0: until Ctrl-C)

use fairmq::options::Kind;
use fairmq::{Context, Device, HookResult, Message, Program};
use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

const END: u64 = u64::MAX;

/// The sequence number a message starts with (`END` for an end message).
fn seq_of(m: &Message) -> Result<u64, String> {
    let head = m.data().get(..8).ok_or_else(|| format!("a message of {} bytes (at least 8)", m.size()))?;
    Ok(u64::from_le_bytes(head.try_into().map_err(|_| "8 bytes")?))
}

struct Sampler {
    count: u64,
    size: usize,
    sent: u64,
    /// Data messages sent on each sub-channel of `data1` (they take turns).
    sent_on: Vec<u64>,
    ended: bool,
}

impl Sampler {
    /// One end message on every sub-channel, carrying what that one carried: with several
    /// receivers, each needs its own (the guide: one end message on a shared push socket reaches
    /// only one of them).
    fn send_end(&mut self, ctx: &Context, timeout_ms: i32) -> HookResult {
        for (i, sent) in self.sent_on.iter().enumerate() {
            let ch = ctx.channel("data1", i)?;
            let mut m = ch.new_message_with_size(self.size)?;
            m.data_mut()?[..16].copy_from_slice(&[END.to_le_bytes(), sent.to_le_bytes()].concat());
            ch.send_timeout(&mut m, timeout_ms)?;
        }
        self.ended = true;
        Ok(())
    }
}

impl Device for Sampler {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.count = ctx.config().get("messages")?;
        self.size = ctx.config().get::<usize>("msg-size")?.max(16);
        self.sent_on = vec![0; ctx.num_sub_channels("data1")?];
        Ok(())
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        if self.count > 0 && self.sent == self.count {
            self.send_end(ctx, -1)?;
            return Ok(false);
        }
        let i = (self.sent % self.sent_on.len() as u64) as usize;
        let ch = ctx.channel("data1", i)?;
        let mut m = ch.new_message_with_size(self.size)?;
        m.data_mut()?[..16].copy_from_slice(&[self.sent.to_le_bytes(), [0; 8]].concat());
        if ch.send(&mut m).is_err() {
            return Ok(false); // interrupted: Ctrl-C
        }
        self.sent += 1;
        self.sent_on[i] += 1;
        Ok(true)
    }
    fn post_run(&mut self, _: &Context) -> HookResult {
        // What was sent is final once RUNNING ended: the count to compare with the sink's.
        log::warn!("sampler: sent {} data messages", self.sent);
        Ok(())
    }
    fn reset_task(&mut self, ctx: &Context) -> HookResult {
        // Stopped early: the end message goes out now (transports are not interrupted here).
        if !self.ended {
            self.send_end(ctx, 5_000)?;
        }
        Ok(())
    }
}

struct Processor;

impl Device for Processor {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        ctx.on_data("data1");
        Ok(())
    }
    fn handle_data(&mut self, ctx: &Context, _: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        let end = seq_of(m)? == END;
        ctx.send(m, "data2", 0)?;
        Ok(!end) // forward the end message, then leave RUNNING
    }
}

struct Sink {
    /// Data messages received.
    received: u64,
    bytes: u64,
    start: Option<Instant>,
    /// `--num-senders`: end messages to wait for.
    senders: u64,
    ends: u64,
    /// What the end messages announced, summed.
    announced: u64,
    /// Every sequence number below this one arrived.
    next: u64,
    /// Several senders: numbers above `next` that arrived (their streams interleave, each in
    /// order, so this stays as small as the senders are apart).
    ahead: BTreeSet<u64>,
}

impl Sink {
    fn new() -> Sink {
        Sink { received: 0, bytes: 0, start: None, senders: 1, ends: 0, announced: 0, next: 0, ahead: BTreeSet::new() }
    }

    /// Checks and records sequence number `seq`.
    fn record(&mut self, seq: u64) -> Result<(), String> {
        if seq == self.next {
            self.next += 1;
            while !self.ahead.is_empty() && self.ahead.remove(&self.next) {
                self.next += 1;
            }
            return Ok(());
        }
        if self.senders == 1 {
            return Err(format!("gap: expected message {}, got {seq}", self.next));
        }
        if seq < self.next || !self.ahead.insert(seq) {
            return Err(format!("message {seq} arrived twice"));
        }
        Ok(())
    }

    /// After the last end message: every number below what was announced arrived, no other.
    fn complete(&self) -> Result<(), String> {
        if self.received != self.announced || self.next != self.announced || !self.ahead.is_empty() {
            return Err(format!(
                "received {} messages ({} in sequence from 0), the end messages say {}",
                self.received, self.next, self.announced
            ));
        }
        Ok(())
    }
}

impl Device for Sink {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.senders = ctx.config().get::<u64>("num-senders")?.max(1);
        ctx.on_data("data2");
        Ok(())
    }
    fn handle_data(&mut self, _: &Context, _: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        if self.start.is_none() {
            self.start = Some(Instant::now());
            log::warn!("sink: data flows");
        }
        let seq = seq_of(m)?;
        if seq == END {
            let count = m.data().get(8..16).ok_or("an end message without its count")?;
            self.announced = self
                .announced
                .checked_add(u64::from_le_bytes(count.try_into()?))
                .ok_or("the end messages announce more than 2^64 messages")?;
            self.ends += 1;
            if self.ends < self.senders {
                return Ok(true);
            }
            self.complete()?;
            let secs = self.start.map_or(0.0, |s| s.elapsed().as_secs_f64()).max(1e-9);
            log::warn!(
                "sink: received all {} messages ({} bytes) in {secs:.3} s: {:.0} msg/s, {:.3} GB/s; 0 lost",
                self.received,
                self.bytes,
                self.received as f64 / secs,
                self.bytes as f64 / 1e9 / secs
            );
            return Ok(false);
        }
        self.record(seq)?;
        self.received += 1;
        self.bytes += m.size() as u64;
        Ok(true)
    }
    fn post_run(&mut self, _: &Context) -> HookResult {
        log::warn!("sink: received {} data messages", self.received);
        Ok(())
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
        o.add("messages", Kind::U64, 100_000u64, "data messages to send")
            .add("msg-size", Kind::Size, 1024u64, "message size")
            .add("num-senders", Kind::U64, 1u64, "sink: end messages to wait for (one per sender)");
    };
    let code = match name {
        "sampler" => Program::new(|_| Ok(Sampler { count: 0, size: 0, sent: 0, sent_on: Vec::new(), ended: false }))
            .options(add)
            .run_with_args(rest),
        "processor" => Program::new(|_| Ok(Processor)).options(add).run_with_args(rest),
        _ => Program::new(|_| Ok(Sink::new())).options(add).run_with_args(rest),
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
        // Their own process group: Ctrl-C reaches only us, and we signal in the right order.
        c.process_group(0);
        c.args(["--role", role, "--id", id, "--control", "static", "--color", "false", "--severity", "warn"]);
        c.args(["--transport", &transport, "--session", &session, "--shm-segment-size", "268435456"]);
        c.args(["--messages", &count, "--msg-size", &size, "--channel-config"]).args(chans);
        c.spawn().expect("spawn device")
    };
    // The senders' linger: how long a device that ends keeps delivering what it queued. FairMQ's
    // default (500 ms) drops the tail of the stream when the receiver is held up longer (a loaded
    // machine, a debug build); the guide's remedy is a linger that covers the slowest drain.
    let linger = "linger=10000";
    let mut devices = [
        ("sink", spawn("sink", "sink1", &[format!("name=data2,type=pull,method=bind,address={b},rateLogging=0")])),
        (
            "processor",
            spawn(
                "processor",
                "processor1",
                &[
                    format!("name=data1,type=pull,method=bind,address={a},rateLogging=0"),
                    format!("name=data2,type=push,method=connect,address={b},rateLogging=0,{linger}"),
                ],
            ),
        ),
        (
            "sampler",
            spawn(
                "sampler",
                "sampler1",
                &[format!("name=data1,type=push,method=connect,address={a},rateLogging=0,{linger}")],
            ),
        ),
    ];
    let interrupted = Arc::new(AtomicBool::new(false));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, interrupted.clone());
    let mut signalled = false;
    let mut ok = true;
    let mut done = [false; 3];
    while done.iter().any(|d| !d) {
        if interrupted.load(Ordering::SeqCst) && !signalled {
            println!("Ctrl-C: stopping the sampler first; the others end after its end message");
            let _ = Command::new("kill").args(["-INT", &devices[2].1.id().to_string()]).status();
            signalled = true;
        }
        for (i, (name, child)) in devices.iter_mut().enumerate() {
            if !done[i] {
                if let Ok(Some(status)) = child.try_wait() {
                    println!("{name} exited with {status}");
                    ok &= status.success();
                    done[i] = true;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
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
