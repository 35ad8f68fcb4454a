//! `fairmq-sink`: receives and counts messages, optionally writing them to a file, and reports
//! counts and rates at the end of RUNNING (so it doubles as the throughput meter).

use crate::options::{Kind, OptionGroup};
use crate::{Context, Device, HookResult};
use std::io::Write;
use std::time::Instant;

/// Receives messages from sub-channel 0 of `in-channel` and counts them, as FairMQ's sink does.
///
/// The sink receives `max-iterations + 1` messages. A `max-iterations` of 0 receives until the
/// device is stopped. The sink counts and reports only `max-iterations` of them: the last message
/// ends the run and is not counted. The message that reaches the maximum file size also ends the
/// run without being counted.
#[derive(Debug, Default)]
pub struct Sink {
    channel: String,
    multipart: bool,
    max_iterations: u64,
    out_filename: String,
    max_file_size: u64,
    /// Messages received in the last RUNNING.
    pub received: u64,
    /// Payload bytes received in the last RUNNING.
    pub bytes: u64,
}

impl Sink {
    /// Adds the device's options to `o`, with FairMQ's defaults.
    pub fn options(o: &mut OptionGroup) {
        o.add("in-channel", Kind::Str, "data", "Name of the input channel")
            .add("multipart", Kind::Bool, false, "Handle multipart payloads")
            .add("max-iterations", Kind::U64, 0u64, "Number of run iterations (0 - infinite)")
            .add("out-filename", Kind::Str, "", "Write incoming data to file")
            .add("max-file-size", Kind::U64, 2_000_000_000u64, "Maximum file size in bytes (0 - unlimited)");
    }
}

impl Device for Sink {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        let c = ctx.config();
        self.channel = c.get("in-channel")?;
        self.multipart = c.get("multipart")?;
        self.max_iterations = c.get("max-iterations")?;
        self.out_filename = c.get("out-filename")?;
        self.max_file_size = c.get("max-file-size")?;
        Ok(())
    }

    fn run(&mut self, ctx: &Context) -> HookResult {
        let ch = ctx.channel(&self.channel, 0)?;
        let mut file = if self.out_filename.is_empty() {
            None
        } else {
            Some(std::io::BufWriter::new(std::fs::File::create(&self.out_filename)?))
        };
        let (mut count, mut bytes, mut written) = (0u64, 0u64, 0u64);
        let mut start = None;
        log::info!("Starting sink and expecting to receive {} messages.", self.max_iterations);
        // The whole run reuses one buffer of parts, so the loop allocates no vector per message.
        let mut parts = Vec::new();
        let mut msg = ch.new_message();
        while !ctx.new_state_pending() {
            let got = if self.multipart {
                parts.clear();
                ch.receive_parts(&mut parts)
            } else {
                // Each receive gets a fresh message, as in FairMQ's sink. This assignment drops the
                // previous message.
                msg = ch.new_message();
                ch.receive(&mut msg)
            };
            let Ok(n) = got else { continue };
            start.get_or_insert_with(Instant::now);
            bytes += n as u64;
            if let Some(f) = file.as_mut() {
                let received = if self.multipart { &parts[..] } else { std::slice::from_ref(&msg) };
                for p in received {
                    f.write_all(p.data())?;
                    written += p.size() as u64;
                }
                if self.max_file_size > 0 && written >= self.max_file_size {
                    log::info!("Maximum file size reached.");
                    break;
                }
            }
            if self.max_iterations > 0 && count >= self.max_iterations {
                log::info!("Configured maximum number of iterations reached.");
                break;
            }
            count += 1;
        }
        if let Some(mut f) = file {
            f.flush()?;
            log::info!("Written {written} bytes to {}.", self.out_filename);
        }
        let secs = start.map_or(0.0, |s| s.elapsed().as_secs_f64());
        let rate = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
        log::info!("Received {count} messages in {}ms.", (secs * 1000.0) as u64);
        log::info!("Received {bytes} bytes: {:.0} msg/s, {:.3} MB/s.", rate(count), rate(bytes) / 1e6);
        self.received = count;
        self.bytes = bytes;
        log::info!("Leaving RUNNING state.");
        Ok(())
    }
}
