//! The guide's test devices: a source that ends with end messages, a sink that counts them, and
//! helpers to start and stop a topology of in-process devices.

use super::*;
use fairmq::{Context, Device, HookResult, Message, State, TransferCode, Transition};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What a sink saw.
#[derive(Default, Debug)]
pub struct Seen {
    pub data: AtomicU64,
    pub ends: AtomicU64,
    pub announced: AtomicU64,
    pub gaps: AtomicU64,
    /// Sequence numbers a single sender's stream skipped.
    pub missing: parking_lot::Mutex<Vec<u64>>,
}

/// Sends `n` data messages (sequence numbers 0..n, all but `skip`), then one end message carrying
/// `n` on every sub-channel.
pub struct Source {
    pub n: u64,
    pub sent: u64,
    pub end_on_every_sub_channel: bool,
    /// A sequence number not sent (a message lost on the way, for G40).
    pub skip: Option<u64>,
}

impl Device for Source {
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        let subs = ctx.num_sub_channels("data")?;
        if self.skip == Some(self.sent) {
            self.sent += 1;
            return Ok(true);
        }
        if self.sent < self.n {
            let i = (self.sent as usize) % subs;
            let mut m = ctx.channel("data", i)?.new_simple_message(&eod::data(self.sent))?;
            if ctx.send(&mut m, "data", i).is_err() {
                return Ok(false);
            }
            self.sent += 1;
            return Ok(true);
        }
        // G20: the end message's send is checked.
        let targets = if self.end_on_every_sub_channel { subs } else { 1 };
        for i in 0..targets {
            let mut end = ctx.channel("data", i)?.new_simple_message(&eod::end(self.n))?;
            ctx.send(&mut end, "data", i).map_err(|e| format!("end message not sent: {e}"))?;
        }
        Ok(false)
    }
}

/// Counts data messages (checking sequence numbers per sender) and leaves RUNNING after
/// `num_senders` end messages.
pub struct SinkDev {
    pub num_senders: u64,
    pub seen: Arc<Seen>,
    pub last: Option<u64>,
}

impl Device for SinkDev {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        ctx.on_data("data");
        Ok(())
    }
    fn handle_data(&mut self, _: &Context, _: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        let (end, v) = eod::parse(m.data());
        if end {
            self.seen.announced.fetch_add(v, Ordering::SeqCst);
            let ends = self.seen.ends.fetch_add(1, Ordering::SeqCst) + 1;
            return Ok(ends < self.num_senders);
        }
        let next = self.last.map_or(0, |l| l + 1);
        if self.num_senders == 1 && v != next {
            self.seen.gaps.fetch_add(1, Ordering::SeqCst);
            self.seen.missing.lock().extend(next..v);
        }
        self.last = Some(v);
        self.seen.data.fetch_add(1, Ordering::SeqCst);
        Ok(true)
    }
}

pub fn sink(s: &Session, tr: &str, id: &str, addr: &str, num_senders: u64) -> (Running, Arc<Seen>) {
    sink_on(s, tr, id, &format!("name=data,type=pull,method=bind,address={addr}"), num_senders)
}

/// A counting sink on the channel `spec` (a `--channel-config` value).
pub fn sink_on(s: &Session, tr: &str, id: &str, spec: &str, num_senders: u64) -> (Running, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let d = spawn(SinkDev { num_senders, seen: seen.clone(), last: None }, config(&args(id, tr, s, spec)));
    (d, seen)
}

pub fn source(s: &Session, tr: &str, id: &str, addresses: &[&str], n: u64, every: bool) -> Running {
    let addrs: String = addresses.iter().map(|a| format!(",address={a}")).collect();
    spawn(
        Source { n, sent: 0, end_on_every_sub_channel: every, skip: None },
        config(&args(id, tr, s, &format!("name=data,type=push,method=connect{addrs}"))),
    )
}

pub fn start_all(devs: &[&Running]) {
    for d in devs {
        d.to_ready();
    }
    for d in devs {
        d.go(Transition::Run, State::Running);
    }
}

pub fn wait_ready(d: &Running) {
    assert!(d.h.wait_for_state(State::Ready, T).unwrap(), "did not leave RUNNING");
}

pub fn end_all(devs: Vec<Running>) {
    for d in devs {
        d.ready_to_exit();
        assert!(d.join());
    }
}

/// A source that never ends by itself: it sends (with a timeout) until stopped, counting successes.
pub fn endless_source(sent: Arc<AtomicU64>) -> Hooks {
    endless_source_counting(sent, Arc::new(AtomicU64::new(0)))
}

/// [`endless_source`] that also counts the sends that timed out.
pub fn endless_source_counting(sent: Arc<AtomicU64>, timed_out: Arc<AtomicU64>) -> Hooks {
    Hooks {
        conditional_run: Some(Box::new(move |ctx| {
            let mut m = ctx.new_simple_message(eod::data(sent.load(Ordering::SeqCst)))?;
            match ctx.send_timeout(&mut m, "data", 0, 100) {
                Ok(_) => {
                    sent.fetch_add(1, Ordering::SeqCst);
                }
                Err(e) if e.code() == TransferCode::Interrupted => return Ok(false),
                Err(e) if e.code() == TransferCode::Timeout => {
                    // G26: the sink's queue is full, the send timed out; try again
                    timed_out.fetch_add(1, Ordering::SeqCst);
                }
                Err(e) => return Err(e.into()),
            }
            Ok(true)
        })),
        ..Hooks::default()
    }
}
