//! A device for testing controllers and launch scripts: it runs until stopped (or `--runs N`
//! iterations) and can fail on purpose in a hook (`--fail-in <hook>` returns an error,
//! `--panic-in <hook>` panics), with hook names init, bind, connect, init_task, pre_run,
//! conditional_run, run, post_run, reset_task, reset, and handle_data (with `--in-channel <name>`
//! the device takes its input there through the data callback instead of conditional_run);
//! `--sleep-in <hook>` sleeps a minute there, whatever happens (a device that hangs). Each hook logs
//! `hook: <name>`. Code outside the hooks can panic too: `--panic-in factory` (building the
//! device) and `--panic-in state:<STATE>` (a plugin's state-change callback, entering `<STATE>`).
use fairmq::options::Kind;
use fairmq::{Context, Device, HookResult, Message, Plugin, PluginServices, Program};
use std::time::Duration;

struct TestDevice {
    fail_in: String,
    panic_in: String,
    sleep_in: String,
    runs: u64,
    done: u64,
    in_channel: String,
}

impl TestDevice {
    fn hook(&self, name: &str) -> HookResult {
        log::info!("hook: {name}");
        if self.fail_in == name {
            return Err(format!("failure requested in {name}").into());
        }
        if self.panic_in == name {
            panic!("panic requested in {name}");
        }
        if self.sleep_in == name {
            std::thread::sleep(Duration::from_secs(60));
        }
        Ok(())
    }
}

impl Device for TestDevice {
    fn init(&mut self, _: &Context) -> HookResult {
        self.hook("init")
    }
    fn bind(&mut self, _: &Context) -> HookResult {
        self.hook("bind")
    }
    fn connect(&mut self, _: &Context) -> HookResult {
        self.hook("connect")
    }
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        if !self.in_channel.is_empty() {
            ctx.on_data(&self.in_channel);
        }
        self.hook("init_task")
    }
    fn pre_run(&mut self, _: &Context) -> HookResult {
        self.hook("pre_run")
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        if self.done == 0 {
            self.hook("conditional_run")?;
        }
        self.done += 1;
        ctx.wait_for(Duration::from_millis(20));
        Ok(self.runs == 0 || self.done < self.runs)
    }
    fn run(&mut self, _: &Context) -> HookResult {
        self.hook("run")
    }
    fn post_run(&mut self, _: &Context) -> HookResult {
        self.hook("post_run")
    }
    fn reset_task(&mut self, _: &Context) -> HookResult {
        self.hook("reset_task")
    }
    fn reset(&mut self, _: &Context) -> HookResult {
        self.hook("reset")
    }
    fn handle_data(&mut self, _: &Context, _: &str, _: &mut Message, _: usize) -> HookResult<bool> {
        self.hook("handle_data")?;
        Ok(true)
    }
}

/// A plugin that panics in its state-change callback when the device enters the state named by
/// `--panic-in state:<STATE>`. A plugin's callback runs outside every hook, so this plugin makes
/// code outside the hooks panic.
struct StatePanicker;

impl Plugin for StatePanicker {
    fn name(&self) -> &str {
        "state-panicker"
    }
    fn start(&mut self, services: PluginServices) -> HookResult {
        let wanted = services.config().get_or::<String>("panic-in", String::new()).unwrap_or_default();
        let Some(state) = wanted.strip_prefix("state:").map(str::to_owned) else { return Ok(()) };
        services.subscribe_to_state_change(move |s| {
            if s.to_string() == state {
                panic!("panic requested entering {state}");
            }
        });
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    Program::new(|c| {
        if c.get::<String>("panic-in")? == "factory" {
            panic!("panic requested in factory");
        }
        Ok(TestDevice {
            fail_in: c.get("fail-in")?,
            panic_in: c.get("panic-in")?,
            sleep_in: c.get("sleep-in")?,
            runs: c.get("runs")?,
            done: 0,
            in_channel: c.get("in-channel")?,
        })
    })
    .plugin(StatePanicker)
    .options(|o| {
        o.add("fail-in", Kind::Str, "", "hook that returns an error")
            .add("panic-in", Kind::Str, "", "hook that panics")
            .add("sleep-in", Kind::Str, "", "hook that sleeps a minute")
            .add("runs", Kind::U64, 0u64, "conditional_run iterations before RUNNING ends (0: until stopped)")
            .add("in-channel", Kind::Str, "", "channel whose messages go to the data callback (handle_data)");
    })
    .run()
}
