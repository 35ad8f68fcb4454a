//! `fairmq-bsampler`: sends messages of a configurable size as fast as allowed (FairMQ's
//! `BenchmarkSampler`).

use crate::options::{Kind, OptionGroup};
use crate::{Context, Device, HookResult, RateLimiter};
use std::time::Instant;

/// Sends messages of `msg-size` bytes on sub-channel 0 of `out-channel`.
///
/// The sampler sends `max-iterations + 1` messages, which is FairMQ's count. A `max-iterations` of
/// 0 sends until the device is stopped. Options make the sampler send multiparts, fill messages
/// with zeros, align them, and limit the rate to `msg-rate`. With `same-msg`, the sampler sends
/// copies of one message, like FairMQ's older `--same-msg`. With shared memory, these copies share
/// one block, so nothing is allocated per message.
#[derive(Debug, Default)]
pub struct BenchmarkSampler {
    channel: String,
    multipart: bool,
    memset: bool,
    num_parts: usize,
    msg_size: usize,
    alignment: usize,
    max_iterations: u64,
    rate: f32,
    same_msg: bool,
}

impl BenchmarkSampler {
    /// Adds the device's options to `o`, with FairMQ's defaults.
    pub fn options(o: &mut OptionGroup) {
        o.add("out-channel", Kind::Str, "data", "Name of the output channel")
            .add("multipart", Kind::Bool, false, "Handle multipart payloads")
            .add("memset", Kind::Bool, false, "Memset allocated buffers to 0")
            .add("num-parts", Kind::Size, 1u64, "Number of parts to send. 1 will send single messages, not parts")
            .add("msg-size", Kind::Size, 1_000_000u64, "Message size in bytes")
            .add("msg-alignment", Kind::Size, 0u64, "Message alignment")
            .add("max-iterations", Kind::U64, 0u64, "Number of run iterations (0 - infinite)")
            .add("msg-rate", Kind::Float, 0.0f32, "Msg rate limit in maximum number of messages per second")
            .add(
                "same-msg",
                Kind::Bool,
                false,
                "Re-send the same message (copies sharing one buffer) instead of allocating each",
            );
    }
}

impl Device for BenchmarkSampler {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        let c = ctx.config();
        self.channel = c.get("out-channel")?;
        self.multipart = c.get("multipart")?;
        self.memset = c.get("memset")?;
        self.num_parts = c.get("num-parts")?;
        self.msg_size = c.get("msg-size")?;
        self.alignment = c.get("msg-alignment")?;
        self.max_iterations = c.get("max-iterations")?;
        self.rate = c.get("msg-rate")?;
        self.same_msg = c.get("same-msg")?;
        Ok(())
    }

    fn run(&mut self, ctx: &Context) -> HookResult {
        let ch = ctx.channel(&self.channel, 0)?;
        let mut limiter = (self.rate > 0.0).then(|| RateLimiter::new(f64::from(self.rate)));
        let mut sent = 0u64;
        let start = Instant::now();
        log::info!(
            "Starting the benchmark with message size of {} and {} iterations.",
            self.msg_size,
            self.max_iterations
        );
        let fresh = || -> HookResult<crate::Message> {
            let mut m = ch.transport().new_message_aligned(self.msg_size, self.alignment)?;
            if self.memset {
                m.data_mut()?.fill(0);
            }
            Ok(m)
        };
        let original = if self.same_msg { Some(fresh()?) } else { None };
        let make = || -> HookResult<crate::Message> {
            match &original {
                Some(o) => {
                    let mut m = ch.transport().new_message();
                    m.copy_from(o)?;
                    Ok(m)
                }
                None => fresh(),
            }
        };
        // The whole run reuses one buffer of parts, so the loop allocates no vector per message.
        let mut parts = Vec::with_capacity(self.num_parts.max(1));
        while !ctx.new_state_pending() {
            let ok = if self.multipart {
                parts.clear();
                for _ in 0..self.num_parts.max(1) {
                    parts.push(make()?);
                }
                ch.send_parts(&mut parts).is_ok()
            } else {
                ch.send(&mut make()?).is_ok()
            };
            if ok {
                if self.max_iterations > 0 && sent >= self.max_iterations {
                    break;
                }
                sent += 1;
            }
            if let Some(l) = limiter.as_mut() {
                l.tick();
            }
        }
        log::info!("Done {sent} iterations in {}ms.", start.elapsed().as_millis());
        Ok(())
    }
}
