//! FairMQ's copypush example: the sampler sends a copy of each message to every sub-channel but
//! the last, which gets the original. `ex-copypush sampler|sink <options>`.

use fairmq::{Context, Device, HookResult, Iterations, Message, Program};
use std::time::Duration;

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
        let subs = ctx.num_sub_channels("data")?;
        let mut msg = ctx.channel("data", 0)?.new_simple_message(&self.iterations.done().to_le_bytes())?;
        for i in 0..subs - 1 {
            let mut copy = ctx.channel("data", i)?.new_message();
            copy.copy_from(&msg)?;
            ctx.send(&mut copy, "data", i)?;
        }
        ctx.send(&mut msg, "data", subs - 1)?;
        if self.iterations.count() {
            return Ok(false);
        }
        ctx.wait_for(Duration::from_secs(1));
        Ok(true)
    }
}

#[derive(Default)]
struct Sink {
    iterations: Iterations,
}

impl Device for Sink {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.iterations = Iterations::from_config(ctx)?;
        ctx.on_data("data");
        Ok(())
    }
    fn handle_data(&mut self, _: &Context, _: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        log::info!("Received message: \"{}\"", u64::from_le_bytes(m.data().try_into()?));
        Ok(!self.iterations.count())
    }
}

fn main() -> std::process::ExitCode {
    let max = |o: &mut fairmq::options::OptionGroup| Iterations::add_option(o, 0);
    fairmq::run_role("ex-copypush", &["sampler", "sink"], |role, args| match role {
        "sampler" => Program::new(|_| Ok(Sampler::default())).options(max).run_with_args(args),
        _ => Program::new(|_| Ok(Sink::default())).options(max).run_with_args(args),
    })
}
