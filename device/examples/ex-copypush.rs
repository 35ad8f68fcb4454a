//! FairMQ's copypush example: the sampler sends a copy of each message to every sub-channel but
//! the last, which gets the original. `ex-copypush sampler|sink <options>`.

use fairmq::options::Kind;
use fairmq::{Context, Device, HookResult, Message, Program};
use std::time::Duration;

#[derive(Default)]
struct Sampler {
    max: u64,
    n: u64,
}

impl Device for Sampler {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.max = ctx.config().get("max-iterations")?;
        Ok(())
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        let subs = ctx.num_sub_channels("data")?;
        let mut msg = ctx.channel("data", 0)?.new_simple_message(&self.n.to_le_bytes())?;
        for i in 0..subs - 1 {
            let mut copy = ctx.channel("data", i)?.new_message();
            copy.copy_from(&msg)?;
            ctx.send(&mut copy, "data", i)?;
        }
        ctx.send(&mut msg, "data", subs - 1)?;
        self.n += 1;
        if self.max > 0 && self.n >= self.max {
            log::info!("Configured maximum number of iterations reached. Leaving RUNNING state.");
            return Ok(false);
        }
        ctx.wait_for(Duration::from_secs(1));
        Ok(true)
    }
}

#[derive(Default)]
struct Sink {
    max: u64,
    n: u64,
}

impl Device for Sink {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.max = ctx.config().get("max-iterations")?;
        ctx.on_data("data");
        Ok(())
    }
    fn handle_data(&mut self, _: &Context, _: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        log::info!("Received message: \"{}\"", u64::from_le_bytes(m.data().try_into()?));
        self.n += 1;
        Ok(!(self.max > 0 && self.n >= self.max))
    }
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = &args[1.min(args.len())..];
    let max = |o: &mut fairmq::options::OptionGroup| {
        o.add("max-iterations", Kind::U64, 0u64, "Maximum number of iterations (0 - infinite)");
    };
    let code = match args.first().map(String::as_str) {
        Some("sampler") => Program::new(|_| Ok(Sampler::default())).options(max).run_with_args(rest),
        Some("sink") => Program::new(|_| Ok(Sink::default())).options(max).run_with_args(rest),
        _ => {
            eprintln!("usage: ex-copypush sampler|sink <options>");
            1
        }
    };
    std::process::ExitCode::from(code as u8)
}
