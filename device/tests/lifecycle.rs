//! The state machine of a real device: every transition, hooks in order, and errors or panics in
//! every hook leading to ERROR (no reset hooks afterwards).

mod common;
use common::*;
use fairmq::{State, Transition};

#[test]
fn full_cycle_calls_hooks_in_order_and_refuses_illegal_transitions() {
    let rec = Recorder::default();
    let log = rec.log.clone();
    let d = spawn(rec, config("--id rec"));
    assert!(!d.h.change_state(Transition::Connect), "no CONNECT from IDLE");
    assert!(!d.h.change_state(Transition::Run));
    d.to_ready();
    assert!(!d.h.change_state(Transition::ResetDevice), "no RESET DEVICE from READY");
    d.go(Transition::Run, State::Running);
    // conditional_run returns false on its 3rd call: the device stops itself.
    assert!(d.h.wait_for_state(State::Ready, T).unwrap());
    // A second run cycle: READY -> RUNNING again works.
    d.go(Transition::Run, State::Running);
    assert!(d.h.wait_for_state(State::Ready, T).unwrap());
    d.ready_to_exit();
    assert!(d.join(), "EXITING");
    let log = log.lock().clone();
    assert_eq!(
        log,
        [
            "init",
            "bind",
            "connect",
            "init_task",
            "pre_run",
            "conditional_run",
            "conditional_run",
            "conditional_run",
            "run",
            "post_run",
            "pre_run",
            "conditional_run",
            "run",
            "post_run",
            "reset_task",
            "reset"
        ]
    );
}

#[test]
fn reset_device_from_initialized_and_bound_and_a_second_init_cycle() {
    let d = spawn(Recorder::default(), config("--id rec"));
    d.go(Transition::InitDevice, State::InitializingDevice);
    d.go(Transition::CompleteInit, State::Initialized);
    d.go(Transition::ResetDevice, State::Idle);
    d.go(Transition::InitDevice, State::InitializingDevice);
    d.go(Transition::CompleteInit, State::Initialized);
    d.go(Transition::Bind, State::Bound);
    d.go(Transition::ResetDevice, State::Idle);
    d.to_ready();
    d.ready_to_exit();
    assert!(d.join());
}

#[test]
fn an_external_stop_ends_running() {
    struct Forever;
    impl fairmq::Device for Forever {
        fn conditional_run(&mut self, ctx: &fairmq::Context) -> fairmq::HookResult<bool> {
            ctx.wait_for(std::time::Duration::from_millis(10));
            Ok(true)
        }
    }
    let d = spawn(Forever, config("--id forever"));
    d.to_ready();
    d.go(Transition::Run, State::Running);
    d.go(Transition::Stop, State::Ready);
    d.ready_to_exit();
    assert!(d.join());
}

const HOOKS: [&str; 10] =
    ["init", "bind", "connect", "init_task", "pre_run", "conditional_run", "run", "post_run", "reset_task", "reset"];

fn drive_until_error(d: &Running) {
    // Walk the whole cycle; stop at the first refused request (the device went to ERROR).
    let steps = [
        (Transition::InitDevice, State::InitializingDevice),
        (Transition::CompleteInit, State::Initialized),
        (Transition::Bind, State::Bound),
        (Transition::Connect, State::DeviceReady),
        (Transition::InitTask, State::Ready),
        (Transition::Run, State::Running),
        (Transition::Stop, State::Ready),
        (Transition::ResetTask, State::DeviceReady),
        (Transition::ResetDevice, State::Idle),
    ];
    for (t, s) in steps {
        if t == Transition::Stop {
            // RUNNING ends by itself; wait for READY (or ERROR).
            if d.h.wait_for_state(State::Ready, T).is_err() {
                return;
            }
            continue;
        }
        if !d.h.change_state(t) {
            return;
        }
        if d.h.wait_for_state(s, T).is_err() {
            return;
        }
    }
}

#[test]
fn error_or_panic_in_every_hook_leads_to_error_and_skips_reset() {
    for hook in HOOKS {
        for how in [Failure::Error, Failure::Panic, Failure::ErrorFound] {
            let rec = Recorder { fail_in: Some((hook, how)), ..Recorder::default() };
            let log = rec.log.clone();
            let d = spawn(rec, config("--id failing"));
            drive_until_error(&d);
            assert!(d.h.wait_for_state(State::Exiting, T).is_err(), "{hook} {how:?}: ERROR reported to the controller");
            assert_eq!(d.h.current_state(), State::Error, "{hook} {how:?}");
            assert!(!d.join(), "{hook} {how:?}: the state loop ends in ERROR");
            let log = log.lock().clone();
            let at = log.iter().position(|h| *h == hook).expect("the failing hook ran");
            if !matches!(hook, "reset_task" | "reset") {
                assert!(
                    !log.contains(&"reset_task") && !log.contains(&"reset"),
                    "{hook} {how:?}: ERROR skips resets: {log:?}"
                );
            }
            if how != Failure::ErrorFound || hook != "pre_run" {
                assert!(
                    log[at + 1..].iter().all(|h| *h == "post_run" || *h == "run") || at + 1 == log.len(),
                    "{hook} {how:?}: nothing after the failure but RUNNING's end: {log:?}"
                );
            }
        }
    }
}
