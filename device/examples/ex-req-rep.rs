//! FairMQ's req-rep example: a client asks, a server answers. `ex-req-rep client|server <options>`.

use fairmq::options::Kind;
use fairmq::{Context, Device, HookResult, Message, Program};
use std::time::Duration;

#[derive(Default)]
struct Client {
    text: String,
    max: u64,
    n: u64,
}

impl Device for Client {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.text = ctx.config().get("text")?;
        self.max = ctx.config().get("max-iterations")?;
        Ok(())
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        let ch = ctx.channel("data", 0)?;
        let mut req = ch.new_simple_message(self.text.as_bytes())?;
        log::info!("Sending \"{}\" to server.", self.text);
        match ch.send(&mut req) {
            Ok(n) if n > 0 => {
                let mut reply = ch.new_message();
                if ch.receive(&mut reply).is_ok() {
                    log::info!("Received reply from server: \"{}\"", String::from_utf8_lossy(reply.data()));
                    self.n += 1;
                    if self.max > 0 && self.n >= self.max {
                        log::info!("Configured maximum number of iterations reached. Leaving RUNNING state.");
                        return Ok(false);
                    }
                    ctx.wait_for(Duration::from_secs(1));
                    return Ok(true);
                }
                Ok(false)
            }
            _ => Ok(false),
        }
    }
}

#[derive(Default)]
struct Server {
    max: u64,
    n: u64,
}

impl Device for Server {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.max = ctx.config().get("max-iterations")?;
        ctx.on_data("data");
        Ok(())
    }
    fn handle_data(&mut self, ctx: &Context, _: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        let req = String::from_utf8_lossy(m.data()).into_owned();
        log::info!("Received request from client: \"{req}\"");
        let mut reply =
            ctx.channel("data", 0)?.new_simple_message(format!("Thank you for the \"{req}\"!").as_bytes())?;
        log::info!("Sending reply to client.");
        if !matches!(ctx.send(&mut reply, "data", 0), Ok(n) if n > 0) {
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

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = &args[1.min(args.len())..];
    let max = |o: &mut fairmq::options::OptionGroup| {
        o.add("max-iterations", Kind::U64, 0u64, "Maximum number of iterations (0 - infinite)");
    };
    let code = match args.first().map(String::as_str) {
        Some("client") => Program::new(|_| Ok(Client::default()))
            .options(|o| {
                o.add("text", Kind::Str, "Hello", "Text to send out");
                max(o);
            })
            .run_with_args(rest),
        Some("server") => Program::new(|_| Ok(Server::default())).options(max).run_with_args(rest),
        _ => {
            eprintln!("usage: ex-req-rep client|server <options>");
            1
        }
    };
    std::process::ExitCode::from(code as u8)
}
