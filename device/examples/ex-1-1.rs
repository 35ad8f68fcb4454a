//! FairMQ's 1-1 example: a sampler sends a text, a sink receives it.
//! `ex-1-1 sampler|sink <device options>`; sampler options `--text` (Hello), `--max-iterations`.

use fairmq::options::Kind;
use fairmq::{Context, Device, HookResult, Iterations, Message, Program};

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
        // A message over a copy of the text that the transport releases when done.
        let mut msg = ctx.channel("data", 0)?.transport().new_message_from_vec(self.text.clone().into_bytes())?;
        log::info!("Sending \"{}\"", self.text);
        if ctx.send(&mut msg, "data", 0).is_err() {
            return Ok(false);
        }
        Ok(!self.iterations.count())
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
        log::info!("Received: \"{}\"", String::from_utf8_lossy(m.data()));
        Ok(!self.iterations.count())
    }
}

fn main() -> std::process::ExitCode {
    fairmq::run_role("ex-1-1", &["sampler", "sink"], |role, args| match role {
        "sampler" => Program::new(|_| Ok(Sampler::default()))
            .options(|o| {
                o.add("text", Kind::Str, "Hello", "Text to send out");
                Iterations::add_option(o, 0);
            })
            .run_with_args(args),
        _ => Program::new(|_| Ok(Sink::default())).options(|o| Iterations::add_option(o, 0)).run_with_args(args),
    })
}
