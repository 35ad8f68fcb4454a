//! FairMQ's region example: the sampler creates a 10,000,000-byte unmanaged region on its output
//! channel's transport and sends, per iteration, 64 parts that all point at the region's start; it
//! counts pieces not yet acknowledged and, before leaving RUNNING, waits for every acknowledgement.
//! The sink receives multiparts and checks every byte.
//!
//! `ex-region sampler|sink <device options>`; sampler options `--chan-name` (data), `--msg-size`
//! (1000), `--sampling-rate` (Hz, 0: as fast as possible), `--region-linger` (ms, 100),
//! `--max-iterations` (0: infinite), `--external-region` (region id 1, kept after the device),
//! `--rc-segment-size`; sink options `--chan-name`, `--max-iterations`.

use fairmq::options::Kind;
use fairmq::region::{RegionBlock, RegionCallback, RegionConfig};
use fairmq::{Context, Device, HookResult, Iterations, Parts, Program, RateLimiter, UnmanagedRegion};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const REGION_SIZE: usize = 10_000_000;
const PARTS: usize = 64;

/// The byte at `offset` of the region (the sink checks it).
fn pattern(offset: usize) -> u8 {
    (offset % 251) as u8
}

#[derive(Default)]
struct Sampler {
    chan: String,
    size: usize,
    iterations: Iterations,
    rate: f64,
    region: Option<UnmanagedRegion>,
    unacked: Arc<AtomicI64>,
}

impl Device for Sampler {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        let c = ctx.config();
        self.chan = c.get("chan-name")?;
        self.size = c.get::<i64>("msg-size")?.try_into()?;
        self.iterations = Iterations::from_config(ctx)?;
        self.rate = c.get("sampling-rate")?;
        let external: bool = c.get("external-region")?;
        if self.size > REGION_SIZE {
            return Err(format!("--msg-size {} exceeds the region size {REGION_SIZE}", self.size).into());
        }
        let transport = ctx.channel(&self.chan, 0)?.transport();
        transport.subscribe_to_region_events(|info| log::info!("Region event: {info}"))?;
        let cfg = RegionConfig {
            linger: Duration::from_millis(c.get::<u64>("region-linger")?),
            lock: !external,
            zero: !external,
            rc_segment_size: c.get("rc-segment-size")?,
            id: external.then_some(1),
            remove_on_destruction: !external,
            ..RegionConfig::default()
        };
        let unacked = self.unacked.clone();
        let callback = RegionCallback::Bulk(Box::new(move |blocks: &[RegionBlock]| {
            unacked.fetch_sub(blocks.len() as i64, Ordering::AcqRel);
        }));
        let region = ctx.new_unmanaged_region_for(&self.chan, 0, REGION_SIZE, callback, &cfg)?;
        let bytes: Vec<u8> = (0..self.size).map(pattern).collect();
        region.write(0, &bytes)?;
        self.region = Some(region);
        Ok(())
    }

    fn run(&mut self, ctx: &Context) -> HookResult {
        let region = self.region.as_ref().ok_or("no region")?;
        let mut limiter = (self.rate > 0.0).then(|| RateLimiter::new(self.rate));
        while !ctx.new_state_pending() {
            let mut parts: Parts = Vec::with_capacity(PARTS);
            for _ in 0..PARTS {
                parts.push(ctx.new_message_for_region(&self.chan, 0, region, 0, self.size, 0)?);
                self.unacked.fetch_add(1, Ordering::AcqRel);
            }
            // Pieces of a message the transport kept (a failed send) are acknowledged when dropped.
            if let Err(e) = ctx.send_parts(&mut parts, &self.chan, 0) {
                log::warn!("send failed: {e}");
            }
            if self.iterations.count() {
                break;
            }
            if let Some(l) = limiter.as_mut() {
                l.tick();
            }
        }
        while self.unacked.load(Ordering::Acquire) > 0 && !ctx.new_state_pending() {
            ctx.wait_for(Duration::from_millis(25));
        }
        match self.unacked.load(Ordering::Acquire) {
            0 => log::info!("All acknowledgements received."),
            left => log::info!("Done, still not acknowledged: {left}"),
        }
        Ok(())
    }

    fn reset_task(&mut self, ctx: &Context) -> HookResult {
        drop(self.region.take());
        ctx.channel(&self.chan, 0)?.transport().unsubscribe_from_region_events();
        Ok(())
    }
}

#[derive(Default)]
struct Sink {
    chan: String,
    iterations: Iterations,
}

impl Device for Sink {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.chan = ctx.config().get("chan-name")?;
        self.iterations = Iterations::from_config(ctx)?;
        Ok(())
    }

    fn run(&mut self, ctx: &Context) -> HookResult {
        let (mut pieces, mut bytes) = (0u64, 0u64);
        while !ctx.new_state_pending() {
            let mut parts: Parts = Vec::new();
            if let Err(e) = ctx.receive_parts(&mut parts, &self.chan, 0) {
                if e.code() != fairmq::TransferCode::Interrupted {
                    log::warn!("receive failed: {e}");
                }
                continue;
            }
            for p in &parts {
                if let Some(i) = p.data().iter().enumerate().position(|(i, &b)| b != pattern(i)) {
                    let n = self.iterations.done();
                    return Err(format!("part of message {n}: byte {i} is not the region's").into());
                }
                pieces += 1;
                bytes += p.size() as u64;
            }
            if self.iterations.count() {
                break;
            }
        }
        let n = self.iterations.done();
        log::info!("Received {n} messages, {pieces} parts, {bytes} bytes, every byte checked.");
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    fairmq::run_role("ex-region", &["sampler", "sink"], |role, args| match role {
        "sampler" => Program::new(|_| Ok(Sampler::default()))
            .options(|o| {
                o.add("chan-name", Kind::Str, "data", "name of the output channel")
                    .add("msg-size", Kind::Int, 1000i64, "Message size in bytes")
                    .add("sampling-rate", Kind::Float, 0.0f32, "Sampling rate in Hz (0: as fast as possible)")
                    .add("region-linger", Kind::U64, 100u64, "Linger period for regions (ms)")
                    .add("external-region", Kind::Bool, false, "Use region created by another process")
                    .add(
                        "rc-segment-size",
                        Kind::U64,
                        10_000_000u64,
                        "Size of the reference count segment for the region",
                    );
                Iterations::add_option(o, 0);
            })
            .run_with_args(args),
        _ => Program::new(|_| Ok(Sink::default()))
            .options(|o| {
                o.add("chan-name", Kind::Str, "data", "name of the input channel");
                Iterations::add_option(o, 0);
            })
            .run_with_args(args),
    })
}
