//! A device for testing controllers and launch scripts: it runs until stopped (or `--runs N`
//! iterations) and can fail on purpose in a hook (`--fail-in <hook>` returns an error,
//! `--panic-in <hook>` panics), with hook names init, bind, connect, init_task, pre_run,
//! conditional_run, run, post_run, reset_task, reset; `--sleep-in <hook>` sleeps a minute there,
//! whatever happens (a device that hangs). Each hook logs `hook: <name>`.
use fairmq::options::Kind;
use fairmq::{Context, Device, HookResult, Program};
use std::time::Duration;

struct TestDevice {
    fail_in: String,
    panic_in: String,
    sleep_in: String,
    runs: u64,
    done: u64,
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
    fn init_task(&mut self, _: &Context) -> HookResult {
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
}

fn main() -> std::process::ExitCode {
    Program::new(|c| {
        Ok(TestDevice {
            fail_in: c.get("fail-in")?,
            panic_in: c.get("panic-in")?,
            sleep_in: c.get("sleep-in")?,
            runs: c.get("runs")?,
            done: 0,
        })
    })
    .options(|o| {
        o.add("fail-in", Kind::Str, "", "hook that returns an error")
            .add("panic-in", Kind::Str, "", "hook that panics")
            .add("sleep-in", Kind::Str, "", "hook that sleeps a minute")
            .add("runs", Kind::U64, 0u64, "conditional_run iterations before RUNNING ends (0: until stopped)");
    })
    .run()
}
