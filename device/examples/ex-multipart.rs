//! FairMQ's multipart example: seven parts per message, the first a header whose stop flag marks
//! the last message. `ex-multipart sampler|sink <options>`.

use fairmq::{Context, Device, HookResult, Iterations, Parts, Program};
use std::time::Duration;

/// `struct Header { int32_t stopFlag; }` on the wire (little-endian).
fn header(stop: bool) -> [u8; 4] {
    i32::from(stop).to_le_bytes()
}

#[derive(Default)]
struct Sampler {
    iterations: Iterations,
}

impl Device for Sampler {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.iterations = Iterations::from_config(ctx)?;
        Ok(())
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        let ch = ctx.channel("data", 0)?;
        let last = self.iterations.next_is_last();
        let mut parts: Parts = vec![ch.new_simple_message(&header(last))?, ch.new_message_with_size(1000)?];
        let mut more: Parts = [500, 600, 700].iter().map(|&n| ch.new_message_with_size(n)).collect::<Result<_, _>>()?;
        parts.append(&mut more);
        parts.push(ch.new_message());
        parts.push(ch.new_message_with_size(100)?);
        log::info!("Sending header with stopFlag: {}", i32::from(last));
        let _ = ch.send_parts(&mut parts);
        if self.iterations.count() {
            return Ok(false);
        }
        ctx.wait_for(Duration::from_secs(1));
        Ok(true)
    }
}

struct Sink;

impl Device for Sink {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        ctx.on_data_parts("data");
        Ok(())
    }
    fn handle_parts(&mut self, _: &Context, _: &str, parts: &mut Parts, _: usize) -> HookResult<bool> {
        if parts.len() != 7 {
            return Err("Number of received parts != 7".into());
        }
        let sizes: Vec<usize> = parts[1..].iter().map(|p| p.size()).collect();
        if parts[0].size() != 4 || sizes != [1000, 500, 600, 700, 0, 100] {
            return Err(format!("unexpected part sizes {sizes:?}").into());
        }
        let stop = i32::from_le_bytes(parts[0].data().try_into()?);
        log::info!("Received message with {} parts", parts.len());
        if stop == 1 {
            log::info!("stopFlag is 1, going IDLE");
            return Ok(false);
        }
        Ok(true)
    }
}

fn main() -> std::process::ExitCode {
    fairmq::run_role("ex-multipart", &["sampler", "sink"], |role, args| match role {
        "sampler" => {
            Program::new(|_| Ok(Sampler::default())).options(|o| Iterations::add_option(o, 5)).run_with_args(args)
        }
        _ => Program::new(|_| Ok(Sink)).run_with_args(args),
    })
}
