//! FairMQ's multiple-transports example: sampler1 sends 1 MB over shmem and listens for acks over
//! zeromq, sampler2 sends over zeromq, the sink reads both inputs (two transports in one device)
//! and acks sampler1. `ex-multiple-transports sampler1|sampler2|sink <options>`.

use fairmq::options::Kind;
use fairmq::{Context, Device, HookResult, Message, Program};

#[derive(Default)]
struct Sampler1 {
    max: u64,
    n: u64,
    acks: u64,
}

impl Device for Sampler1 {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.max = ctx.config().get("max-iterations")?;
        Ok(())
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        let mut m = ctx.new_message_for("data1", 0, 1_000_000)?;
        if ctx.send(&mut m, "data1", 0).is_err() {
            return Ok(false);
        }
        self.n += 1;
        self.count_acks(ctx)?;
        Ok(!(self.max > 0 && self.n >= self.max))
    }
    fn post_run(&mut self, ctx: &Context) -> HookResult {
        // Acks travel over PUB/SUB, which may drop them while the subscription is on its way; what
        // has arrived is counted (FairMQ's listener thread does the same until Stop interrupts it).
        self.count_acks(ctx)?;
        log::info!("Acknowledged {} messages", self.acks);
        Ok(())
    }
}

impl Sampler1 {
    fn count_acks(&mut self, ctx: &Context) -> HookResult {
        let mut ack = ctx.channel("ack", 0)?.new_message();
        while ctx.receive_timeout(&mut ack, "ack", 0, 0).is_ok() {
            self.acks += 1;
        }
        Ok(())
    }
}

#[derive(Default)]
struct Sampler2 {
    max: u64,
    n: u64,
}

impl Device for Sampler2 {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.max = ctx.config().get("max-iterations")?;
        Ok(())
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        let mut m = ctx.new_message_with_size(1000)?;
        if ctx.send(&mut m, "data2", 0).is_err() {
            return Ok(false);
        }
        self.n += 1;
        Ok(!(self.max > 0 && self.n >= self.max))
    }
}

#[derive(Default)]
struct Sink {
    max: u64,
    d1: u64,
    d2: u64,
}

impl Device for Sink {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.max = ctx.config().get("max-iterations")?;
        ctx.on_data("data1");
        ctx.on_data("data2");
        Ok(())
    }
    fn handle_data(&mut self, ctx: &Context, ch: &str, _: &mut Message, _: usize) -> HookResult<bool> {
        if ch == "data1" {
            self.d1 += 1;
            let mut ack = ctx.channel("ack", 0)?.new_message();
            ctx.send(&mut ack, "ack", 0).map_err(|_| "could not send an ack")?;
        } else {
            self.d2 += 1;
        }
        log::info!("Received {ch} ({} / {})", self.d1, self.d2);
        Ok(!(self.max > 0 && self.d1 >= self.max && self.d2 >= self.max))
    }
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = &args[1.min(args.len())..];
    let max = |o: &mut fairmq::options::OptionGroup| {
        o.add("max-iterations", Kind::U64, 0u64, "Maximum number of iterations (0 - infinite)");
    };
    let code = match args.first().map(String::as_str) {
        Some("sampler1") => Program::new(|_| Ok(Sampler1::default())).options(max).run_with_args(rest),
        Some("sampler2") => Program::new(|_| Ok(Sampler2::default())).options(max).run_with_args(rest),
        Some("sink") => Program::new(|_| Ok(Sink::default())).options(max).run_with_args(rest),
        _ => {
            eprintln!("usage: ex-multiple-transports sampler1|sampler2|sink <options>");
            1
        }
    };
    std::process::ExitCode::from(code as u8)
}
