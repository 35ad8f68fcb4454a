//! FairMQ's n-m example: a synchronizer publishes timeframe ids; n senders send one sub-timeframe
//! per id to receiver `id % m`, each sender with one sub-channel per receiver; a receiver completes a
//! timeframe when all `--num-senders` parts arrived. `ex-n-m synchronizer|sender|receiver <options>`.

use fairmq::options::Kind;
use fairmq::{Context, Device, HookResult, Parts, Program};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// `struct Header { uint16_t id; int senderIndex; }` as laid out by C (2 bytes of padding).
fn header(id: u16, sender: i32) -> [u8; 8] {
    let mut h = [0u8; 8];
    h[..2].copy_from_slice(&id.to_le_bytes());
    h[4..].copy_from_slice(&sender.to_le_bytes());
    h
}

#[derive(Default)]
struct Synchronizer {
    id: u16,
}

impl Device for Synchronizer {
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        let mut m = ctx.channel("sync", 0)?.new_simple_message(&self.id.to_le_bytes())?;
        if !matches!(ctx.send(&mut m, "sync", 0), Ok(n) if n > 0) {
            return Ok(false);
        }
        self.id = if self.id == u16::MAX - 1 { 0 } else { self.id + 1 };
        Ok(true)
    }
}

#[derive(Default)]
struct Sender {
    index: i32,
    size: usize,
    receivers: usize,
}

impl Device for Sender {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.index = ctx.config().get("sender-index")?;
        self.size = ctx.config().get::<i32>("subtimeframe-size")?.max(0) as usize;
        self.receivers = ctx.config().get::<i32>("num-receivers")?.max(1) as usize;
        Ok(())
    }
    fn run(&mut self, ctx: &Context) -> HookResult {
        let sync = ctx.channel("sync", 0)?;
        while !ctx.new_state_pending() {
            let mut id = sync.new_message();
            if sync.receive(&mut id).is_err() {
                continue;
            }
            let id = u16::from_le_bytes(id.data().get(..2).ok_or("short sync message")?.try_into()?);
            let dest = usize::from(id) % self.receivers;
            let ch = ctx.channel("data", dest)?;
            let mut parts: Parts =
                vec![ch.new_simple_message(&header(id, self.index))?, ch.new_message_with_size(self.size)?];
            // Non-blocking: a receiver that cannot keep up loses this sub-timeframe.
            if ch.send_parts_timeout(&mut parts, 0).is_err() {
                log::debug!("could not queue sub-timeframe #{id} to receiver {dest}");
            }
        }
        Ok(())
    }
}

#[derive(Default)]
struct Receiver {
    senders: usize,
    max: i32,
    timeout: Duration,
    buffer: HashMap<u16, (usize, Instant)>,
    completed: i32,
}

impl Device for Receiver {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.senders = ctx.config().get::<i32>("num-senders")?.max(1) as usize;
        self.max = ctx.config().get("max-timeframes")?;
        self.timeout = Duration::from_millis(ctx.config().get::<i32>("buffer-timeout")?.max(0) as u64);
        ctx.on_data_parts("data");
        Ok(())
    }
    fn handle_parts(&mut self, _: &Context, _: &str, parts: &mut Parts, _: usize) -> HookResult<bool> {
        let h = parts.first().ok_or("empty message")?.data();
        let id = u16::from_le_bytes(h.get(..2).ok_or("short header")?.try_into()?);
        let now = Instant::now();
        self.buffer.retain(|_, (_, since)| now.duration_since(*since) < self.timeout);
        let e = self.buffer.entry(id).or_insert((0, now));
        e.0 += 1;
        if e.0 == self.senders {
            self.buffer.remove(&id);
            self.completed += 1;
            log::info!("Successfully completed timeframe #{id}");
            if self.max > 0 && self.completed >= self.max {
                log::info!("Reached configured maximum number of timeframes ({}). Leaving RUNNING state.", self.max);
                return Ok(false);
            }
        }
        Ok(true)
    }
}

fn main() -> std::process::ExitCode {
    fairmq::run_role("ex-n-m", &["synchronizer", "sender", "receiver"], |role, args| match role {
        "synchronizer" => Program::new(|_| Ok(Synchronizer::default())).run_with_args(args),
        "sender" => Program::new(|_| Ok(Sender::default()))
            .options(|o| {
                o.add("sender-index", Kind::Int, 0i32, "Sender Index")
                    .add("subtimeframe-size", Kind::Int, 1000i32, "Subtimeframe size in bytes")
                    .add_required("num-receivers", Kind::Int, "Number of EPNs");
            })
            .run_with_args(args),
        _ => Program::new(|_| Ok(Receiver::default()))
            .options(|o| {
                o.add("buffer-timeout", Kind::Int, 1000i32, "Buffer timeout in milliseconds")
                    .add_required("num-senders", Kind::Int, "Number of senders")
                    .add("max-timeframes", Kind::Int, 0i32, "Maximum number of timeframes to receive (0 - infinite)");
            })
            .run_with_args(args),
    })
}
