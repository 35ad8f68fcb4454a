//! FairMQ's req-rep example: a client asks, a server answers. `ex-req-rep client|server <options>`.

use fairmq::options::Kind;
use fairmq::{Context, Device, HookResult, Iterations, Message, Program};
use std::time::Duration;

#[derive(Default)]
struct Client {
    text: String,
    iterations: Iterations,
}

impl Device for Client {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.text = ctx.config().get("text")?;
        self.iterations = Iterations::from_config(ctx)?;
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
                    if self.iterations.count() {
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
    iterations: Iterations,
}

impl Device for Server {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.iterations = Iterations::from_config(ctx)?;
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
        Ok(!self.iterations.count())
    }
}

fn main() -> std::process::ExitCode {
    let max = |o: &mut fairmq::options::OptionGroup| Iterations::add_option(o, 0);
    fairmq::run_role("ex-req-rep", &["client", "server"], |role, args| match role {
        "client" => Program::new(|_| Ok(Client::default()))
            .options(|o| {
                o.add("text", Kind::Str, "Hello", "Text to send out");
                max(o);
            })
            .run_with_args(args),
        _ => Program::new(|_| Ok(Server::default())).options(max).run_with_args(args),
    })
}
