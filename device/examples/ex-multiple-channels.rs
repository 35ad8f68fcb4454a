//! FairMQ's multiple-channels example: the sampler polls a data output and a broadcast input, the
//! broadcaster publishes "OK" every second, the sink handles both inputs.
//! `ex-multiple-channels sampler|broadcaster|sink <options>`.

use fairmq::options::Kind;
use fairmq::{Context, Device, HookResult, Iterations, Message, Poller, Program};
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
    fn run(&mut self, ctx: &Context) -> HookResult {
        let (data, bcast) = (ctx.channel("data", 0)?, ctx.channel("broadcast", 0)?);
        let mut poller = Poller::new(&[data.socket(), bcast.socket()]);
        while !ctx.new_state_pending() {
            let _ = poller.poll(100);
            if poller.check_input(1) {
                let mut m = bcast.new_message();
                if bcast.receive(&mut m).is_ok() {
                    log::info!("Received broadcast: \"{}\"", String::from_utf8_lossy(m.data()));
                }
            }
            if poller.check_output(0) {
                ctx.wait_for(Duration::from_secs(1));
                let mut m = data.new_simple_message(self.text.as_bytes())?;
                if data.send(&mut m).is_ok() {
                    log::info!("Sent \"{}\"", self.text);
                    if self.iterations.count() {
                        break;
                    }
                }
            }
        }
        Ok(())
    }
}

struct Broadcaster;

impl Device for Broadcaster {
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        ctx.wait_for(Duration::from_secs(1));
        let mut m = ctx.channel("broadcast", 0)?.new_simple_message(b"OK")?;
        log::info!("Sending OK");
        let _ = ctx.send(&mut m, "broadcast", 0);
        Ok(true)
    }
}

#[derive(Default)]
struct Sink {
    max: u64,
    data: u64,
    bcast: bool,
}

impl Device for Sink {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.max = ctx.config().get(fairmq::iterations::OPTION)?;
        ctx.on_data("broadcast");
        ctx.on_data("data");
        Ok(())
    }
    fn handle_data(&mut self, _: &Context, ch: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        if ch == "broadcast" {
            log::info!("Received broadcast: \"{}\"", String::from_utf8_lossy(m.data()));
            self.bcast = true;
        } else {
            log::info!("Received message: \"{}\"", String::from_utf8_lossy(m.data()));
            self.data += 1;
        }
        let done = self.bcast && self.max > 0 && self.data >= self.max;
        if done {
            log::info!(
                "Configured maximum number of iterations reached & received a broadcast. Leaving RUNNING state."
            );
        }
        Ok(!done)
    }
}

fn main() -> std::process::ExitCode {
    let max = |o: &mut fairmq::options::OptionGroup| Iterations::add_option(o, 0);
    fairmq::run_role("ex-multiple-channels", &["sampler", "broadcaster", "sink"], |role, args| match role {
        "sampler" => Program::new(|_| Ok(Sampler::default()))
            .options(|o| {
                o.add("text", Kind::Str, "Hello", "Text to send out");
                max(o);
            })
            .run_with_args(args),
        "broadcaster" => Program::new(|_| Ok(Broadcaster)).run_with_args(args),
        _ => Program::new(|_| Ok(Sink::default())).options(max).run_with_args(args),
    })
}
