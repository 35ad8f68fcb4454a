//! FairMQ's 1-1 example: a sampler sends a text, a sink receives it.
//! `ex-1-1 sampler|sink <device options>`; sampler options `--text` (Hello), `--max-iterations`.

use fairmq::options::Kind;
use fairmq::{Context, Device, HookResult, Message, Program};

#[derive(Default)]
struct Sampler {
    text: String,
    max: u64,
    n: u64,
}

impl Device for Sampler {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.text = ctx.config().get("text")?;
        self.max = ctx.config().get("max-iterations")?;
        Ok(())
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        // A message over a copy of the text that the transport releases when done.
        let mut msg = ctx.channel("data", 0)?.transport().new_message_from_vec(self.text.clone().into_bytes())?;
        log::info!("Sending \"{}\"", self.text);
        if ctx.send(&mut msg, "data", 0).is_err() {
            return Ok(false);
        }
        self.n += 1;
        if self.max > 0 && self.n >= self.max {
            log::info!("Configured maximum number of iterations reached. Leaving RUNNING state.");
            return Ok(false);
        }
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
        log::info!("Received: \"{}\"", String::from_utf8_lossy(m.data()));
        self.n += 1;
        if self.max > 0 && self.n >= self.max {
            log::info!("Configured maximum number of iterations reached. Leaving RUNNING state.");
            return Ok(false);
        }
        Ok(true)
    }
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = &args[1.min(args.len())..];
    let code = match args.first().map(String::as_str) {
        Some("sampler") => Program::new(|_| Ok(Sampler::default()))
            .options(|o| {
                o.add("text", Kind::Str, "Hello", "Text to send out").add(
                    "max-iterations",
                    Kind::U64,
                    0u64,
                    "Maximum number of iterations of Run/ConditionalRun/OnData (0 - infinite)",
                );
            })
            .run_with_args(rest),
        Some("sink") => Program::new(|_| Ok(Sink::default()))
            .options(|o| {
                o.add(
                    "max-iterations",
                    Kind::U64,
                    0u64,
                    "Maximum number of iterations of Run/ConditionalRun/OnData (0 - infinite)",
                );
            })
            .run_with_args(rest),
        _ => {
            eprintln!("usage: ex-1-1 sampler|sink <options>");
            1
        }
    };
    std::process::ExitCode::from(code as u8)
}
