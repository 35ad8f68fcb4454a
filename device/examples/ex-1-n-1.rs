//! FairMQ's 1-n-1 example: a sampler, several processors that modify the text, a sink.
//! `ex-1-n-1 sampler|processor|sink <device options>`; `ex-1-n-1.json` holds FairMQ's config.

use fairmq::options::Kind;
use fairmq::{Context, Device, HookResult, Iterations, Message, Program};
use std::time::Duration;

#[derive(Default)]
struct Sampler {
    text: String,
    iterations: Iterations,
}

impl Device for Sampler {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.text = ctx.config().get("text")?;
        self.iterations = Iterations::from_config(ctx)?;
        Ok(())
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        let mut msg = ctx.channel("data1", 0)?.new_simple_message(self.text.as_bytes())?;
        log::info!("Sending \"{}\"", self.text);
        if ctx.send(&mut msg, "data1", 0).is_err() {
            return Ok(false);
        }
        if self.iterations.count() {
            return Ok(false);
        }
        ctx.wait_for(Duration::from_secs(1));
        Ok(true)
    }
}

struct Processor;

impl Device for Processor {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        ctx.on_data("data1");
        Ok(())
    }
    fn handle_data(&mut self, ctx: &Context, _: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        let text = format!("{} (modified by {})", String::from_utf8_lossy(m.data()), ctx.id());
        log::info!("Received data, processing...");
        let mut out = ctx.channel("data2", 0)?.new_simple_message(text.as_bytes())?;
        Ok(ctx.send(&mut out, "data2", 0).is_ok())
    }
}

#[derive(Default)]
struct Sink {
    iterations: Iterations,
}

impl Device for Sink {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.iterations = Iterations::from_config(ctx)?;
        ctx.on_data("data2");
        Ok(())
    }
    fn handle_data(&mut self, _: &Context, _: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        log::info!("Received: \"{}\"", String::from_utf8_lossy(m.data()));
        Ok(!self.iterations.count())
    }
}

fn main() -> std::process::ExitCode {
    let max = |o: &mut fairmq::options::OptionGroup| Iterations::add_option(o, 0);
    fairmq::run_role("ex-1-n-1", &["sampler", "processor", "sink"], |role, args| match role {
        "sampler" => Program::new(|_| Ok(Sampler::default()))
            .options(|o| {
                o.add("text", Kind::Str, "Hello", "Text to send out");
                max(o);
            })
            .run_with_args(args),
        "processor" => Program::new(|_| Ok(Processor)).run_with_args(args),
        _ => Program::new(|_| Ok(Sink::default())).options(max).run_with_args(args),
    })
}
