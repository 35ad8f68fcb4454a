//! FairMQ's multiple-transports example: sampler1 sends 1 MB over shmem and listens for acks over
//! zeromq, sampler2 sends over zeromq, the sink reads both inputs (two transports in one device)
//! and acks sampler1. `ex-multiple-transports sampler1|sampler2|sink <options>`.

use fairmq::{Context, Device, HookResult, Iterations, Message, Program};

#[derive(Default)]
struct Sampler1 {
    iterations: Iterations,
    acks: u64,
}

impl Device for Sampler1 {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.iterations = Iterations::from_config(ctx)?;
        Ok(())
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        let mut m = ctx.new_message_for("data1", 0, 1_000_000)?;
        if ctx.send(&mut m, "data1", 0).is_err() {
            return Ok(false);
        }
        let done = self.iterations.count();
        self.count_acks(ctx)?;
        Ok(!done)
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
    iterations: Iterations,
}

impl Device for Sampler2 {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.iterations = Iterations::from_config(ctx)?;
        Ok(())
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        let mut m = ctx.new_message_with_size(1000)?;
        if ctx.send(&mut m, "data2", 0).is_err() {
            return Ok(false);
        }
        Ok(!self.iterations.count())
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
        self.max = ctx.config().get(fairmq::iterations::OPTION)?;
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
    let max = |o: &mut fairmq::options::OptionGroup| Iterations::add_option(o, 0);
    fairmq::run_role("ex-multiple-transports", &["sampler1", "sampler2", "sink"], |role, args| match role {
        "sampler1" => Program::new(|_| Ok(Sampler1::default())).options(max).run_with_args(args),
        "sampler2" => Program::new(|_| Ok(Sampler2::default())).options(max).run_with_args(args),
        _ => Program::new(|_| Ok(Sink::default())).options(max).run_with_args(args),
    })
}
