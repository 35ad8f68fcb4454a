//! FairMQ's routing devices: `fairmq-splitter` (round robin over the output sub-channels),
//! `fairmq-merger` (all input sub-channels into one output), `fairmq-multiplier` (a copy to every
//! output) and `fairmq-proxy` (one input to one output).

use crate::options::{Kind, OptionGroup};
use crate::{Channel, ChannelRegistry, Context, Device, HookResult, Message, Parts, Poller};

fn io_options(o: &mut OptionGroup) {
    o.add("in-channel", Kind::Str, "data-in", "Name of the input channel")
        .add("out-channel", Kind::Str, "data-out", "Name of the output channel")
        .add("multipart", Kind::Bool, true, "Handle payloads as multipart messages");
}

/// Registers the data callback for `input`. The callback receives whole multiparts if `multipart`
/// is true, and single messages otherwise.
fn on_input(ctx: &Context, input: &str, multipart: bool) {
    if multipart {
        ctx.on_data_parts(input);
    } else {
        ctx.on_data(input);
    }
}

/// Moves one message, or one multipart, from `input` to `out`, as FairMQ's merger and proxy do.
/// Returns false when the receive or the send did not complete, and logs this as FairMQ does.
fn relay(input: &Channel, out: &Channel, multipart: bool, parts: &mut Parts) -> bool {
    let ok = if multipart {
        // The caller's buffer is emptied and reused, so no vector is allocated per message.
        parts.clear();
        input.receive_parts(parts).is_ok() && out.send_parts(parts).is_ok()
    } else {
        let mut m = input.new_message();
        input.receive(&mut m).is_ok() && out.send(&mut m).is_ok()
    };
    if !ok {
        log::debug!("Transfer interrupted");
    }
    ok
}

/// Sends each input message to the next sub-channel of the output channel, round robin.
#[derive(Debug, Default)]
pub struct Splitter {
    out: String,
    multipart: bool,
    next: usize,
    outputs: usize,
}

impl Splitter {
    /// Adds the device's options to `o`, with FairMQ's defaults.
    pub fn options(o: &mut OptionGroup) {
        io_options(o);
    }

    fn advance(&mut self) -> usize {
        let i = self.next;
        self.next = (self.next + 1) % self.outputs.max(1);
        i
    }
}

impl Device for Splitter {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        let input: String = ctx.config().get("in-channel")?;
        self.out = ctx.config().get("out-channel")?;
        self.multipart = ctx.config().get("multipart")?;
        self.outputs = ctx.num_sub_channels(&self.out)?;
        self.next = 0;
        on_input(ctx, &input, self.multipart);
        Ok(())
    }
    fn handle_data(&mut self, ctx: &Context, _: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        let i = self.advance();
        let _ = ctx.send(m, &self.out, i);
        Ok(true)
    }
    fn handle_parts(&mut self, ctx: &Context, _: &str, p: &mut Parts, _: usize) -> HookResult<bool> {
        let i = self.advance();
        let _ = ctx.send_parts(p, &self.out, i);
        Ok(true)
    }
}

/// Forwards whatever arrives on any input sub-channel to the single output.
#[derive(Debug, Default)]
pub struct Merger {
    input: String,
    out: String,
    multipart: bool,
}

impl Merger {
    /// Adds the device's options to `o`, with FairMQ's defaults.
    pub fn options(o: &mut OptionGroup) {
        io_options(o);
    }
}

impl Device for Merger {
    fn register_channel_endpoints(&self, r: &mut ChannelRegistry) {
        r.register("data-in", 1, 10000);
        r.register("data-out", 1, 1);
    }
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.input = ctx.config().get("in-channel")?;
        self.out = ctx.config().get("out-channel")?;
        self.multipart = ctx.config().get("multipart")?;
        Ok(())
    }
    fn run(&mut self, ctx: &Context) -> HookResult {
        let inputs = ctx.channels().get(&self.input).ok_or_else(|| crate::Error::NoChannel(self.input.clone()))?;
        let sockets: Vec<_> = inputs.iter().map(|c| c.socket()).collect();
        let mut poller = Poller::new(&sockets);
        let out = ctx.channel(&self.out, 0)?;
        let mut parts = Parts::new();
        while !ctx.new_state_pending() {
            if poller.poll(100).is_err() {
                continue;
            }
            for (i, ch) in inputs.iter().enumerate() {
                if !poller.check_input(i) {
                    continue;
                }
                if !relay(ch, out, self.multipart, &mut parts) {
                    break;
                }
            }
        }
        Ok(())
    }
}

/// Sends each input message to every sub-channel of every output channel. The copies share the
/// payload where the transport allows it.
#[derive(Debug, Default)]
pub struct Multiplier {
    outs: Vec<String>,
    multipart: bool,
}

impl Multiplier {
    /// Adds the device's options to `o`. As in FairMQ, `--out-channel` takes several names and has
    /// no default.
    pub fn options(o: &mut OptionGroup) {
        o.add("in-channel", Kind::Str, "data-in", "Name of the input channel")
            .add_optional("out-channel", Kind::Strings, "Names of the output channels")
            .add("multipart", Kind::Bool, true, "Handle payloads as multipart messages");
    }

    fn targets(&self, ctx: &Context) -> HookResult<Vec<(String, usize)>> {
        let mut t = Vec::new();
        for name in &self.outs {
            for i in 0..ctx.num_sub_channels(name)? {
                t.push((name.clone(), i));
            }
        }
        Ok(t)
    }
}

impl Device for Multiplier {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        let input: String = ctx.config().get("in-channel")?;
        self.outs = ctx.config().get("out-channel")?;
        self.multipart = ctx.config().get("multipart")?;
        on_input(ctx, &input, self.multipart);
        Ok(())
    }
    fn handle_data(&mut self, ctx: &Context, _: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        let targets = self.targets(ctx)?;
        for (k, (name, i)) in targets.iter().enumerate() {
            if k + 1 == targets.len() {
                let _ = ctx.send(m, name, *i);
            } else {
                let mut copy = ctx.channel(name, *i)?.new_message();
                copy.copy_from(m)?;
                let _ = ctx.send(&mut copy, name, *i);
            }
        }
        Ok(true)
    }
    fn handle_parts(&mut self, ctx: &Context, _: &str, p: &mut Parts, _: usize) -> HookResult<bool> {
        let targets = self.targets(ctx)?;
        for (k, (name, i)) in targets.iter().enumerate() {
            if k + 1 == targets.len() {
                let _ = ctx.send_parts(p, name, *i);
            } else {
                let ch = ctx.channel(name, *i)?;
                let mut copy = Parts::with_capacity(p.len());
                for part in p.iter() {
                    let mut c = ch.new_message();
                    c.copy_from(part)?;
                    copy.push(c);
                }
                let _ = ctx.send_parts(&mut copy, name, *i);
            }
        }
        Ok(true)
    }
}

/// Receives from the input and sends to the output, one message at a time.
#[derive(Debug, Default)]
pub struct Proxy {
    input: String,
    out: String,
    multipart: bool,
}

impl Proxy {
    /// Adds the device's options to `o`, with FairMQ's defaults.
    pub fn options(o: &mut OptionGroup) {
        io_options(o);
    }
}

impl Device for Proxy {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.input = ctx.config().get("in-channel")?;
        self.out = ctx.config().get("out-channel")?;
        self.multipart = ctx.config().get("multipart")?;
        Ok(())
    }
    fn run(&mut self, ctx: &Context) -> HookResult {
        let (input, out) = (ctx.channel(&self.input, 0)?, ctx.channel(&self.out, 0)?);
        let mut parts = Parts::new();
        while !ctx.new_state_pending() {
            if !relay(input, out, self.multipart, &mut parts) {
                break;
            }
        }
        Ok(())
    }
}
