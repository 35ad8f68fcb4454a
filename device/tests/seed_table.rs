//! The seed guide's first table, row by row, for both transports: what each transition does to
//! the messages (the ids of the seed checklist in each name).

mod common;
use common::process::wait_until;
use common::*;
use fairmq::{State, TransferCode, Transition};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn g05_g28_send_that_waits_in_post_run_is_interrupted_and_keeps_the_message() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let outcome = Arc::new(Mutex::new(None));
        let o = outcome.clone();
        let dev = Hooks {
            // RUNNING ends at once; PostRun runs with Stop pending, transports interrupted.
            post_run: Some(Box::new(move |ctx| {
                let mut msg = ctx.new_simple_message(b"kept")?;
                let r = ctx.send(&mut msg, "data", 0).map_err(|e| e.code());
                *o.lock() = Some((r, msg.data().to_vec()));
                Ok(())
            })),
            ..Hooks::default()
        };
        let d = spawn(
            dev,
            config(&args("pusher", tr, &s, &format!("name=data,type=push,method=bind,address={}", s.ipc("nobody")))),
        );
        d.to_ready();
        d.run_once();
        let (r, kept) = outcome.lock().clone().expect("post_run ran");
        assert_eq!(r, Err(TransferCode::Interrupted), "{tr}");
        assert_eq!(kept, b"kept", "{tr}: the MessagePtr keeps its message");
        d.ready_to_exit();
        assert!(d.join());
    }
}

/// A sink that counts what it receives; each run stops after `per_run` messages or when a receive
/// waits `idle_ms` in vain.
fn counting_sink(count: Arc<Mutex<usize>>, per_run: usize, idle_ms: i32) -> Hooks {
    Hooks {
        run: Some(Box::new(move |ctx| {
            let mut this_run = 0;
            while !ctx.new_state_pending() && this_run < per_run {
                let mut m = ctx.channel("data", 0)?.new_message();
                match ctx.receive_timeout(&mut m, "data", 0, idle_ms) {
                    Ok(_) => {
                        this_run += 1;
                        *count.lock() += 1;
                    }
                    Err(_) => break,
                }
            }
            Ok(())
        })),
        ..Hooks::default()
    }
}

/// A hook that tries to receive on `data` with `timeout` ms and logs the outcome as `"<hook> <result>"`;
/// `waiting` (if given) is set just before the receive starts.
fn probe(log: &Arc<Mutex<Vec<String>>>, hook: &'static str, timeout: i32, waiting: Option<Arc<AtomicBool>>) -> Probe {
    let log = log.clone();
    Some(Box::new(move |ctx| {
        let mut m = ctx.channel("data", 0)?.new_message();
        if let Some(w) = &waiting {
            w.store(true, Ordering::SeqCst);
        }
        let r = ctx.receive_timeout(&mut m, "data", 0, timeout).map_err(|e| e.code());
        log.lock().push(format!("{hook} {r:?}"));
        Ok(())
    }))
}

type Probe = Option<Box<dyn FnMut(&fairmq::Context) -> fairmq::HookResult + Send>>;

/// Waits (generous timeout) until `flag` is set.
fn wait_flag(flag: &AtomicBool) {
    wait_until("the hook to start waiting", || flag.load(Ordering::SeqCst));
}

/// Whether thread `tid` of this process is asleep (blocked in a wait), as /proc tells.
fn asleep(tid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).expect("the thread's stat");
    // "tid (name) S ...": the state follows the name, which may hold spaces and parentheses.
    stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('S'))
}

#[test]
fn g01_every_transition_interrupts_and_the_state_it_enters_resumes() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let waiting = Arc::new(AtomicBool::new(false));
        // In every state a transition enters, a receive with a timeout times out (resumed); in
        // RUNNING a receive without one waits until the controller's Stop interrupts it.
        let dev = Hooks {
            init_task: probe(&log, "init_task", 200, None),
            pre_run: probe(&log, "pre_run", 200, None),
            run: probe(&log, "run", -1, Some(waiting.clone())),
            reset_task: probe(&log, "reset_task", 200, None),
            reset: probe(&log, "reset", 200, None),
            ..Hooks::default()
        };
        let chan = format!("name=data,type=pull,method=bind,address={}", s.ipc("g01all"));
        let d = spawn(dev, config(&args("g01all", tr, &s, &chan)));
        d.to_ready();
        for _ in 0..2 {
            waiting.store(false, Ordering::SeqCst);
            d.go(Transition::Run, State::Running);
            wait_flag(&waiting);
            d.go(Transition::Stop, State::Ready);
        }
        d.ready_to_exit();
        assert!(d.join());
        let (timeout, interrupted) = (TransferCode::Timeout, TransferCode::Interrupted);
        let want: Vec<String> = [
            ("init_task", timeout),
            ("pre_run", timeout),
            ("run", interrupted),
            ("pre_run", timeout),
            ("run", interrupted),
            ("reset_task", timeout),
            ("reset", timeout),
        ]
        .iter()
        .map(|(h, c)| format!("{h} Err({c:?})"))
        .collect();
        assert_eq!(*log.lock(), want, "{tr}");
    }
}

/// G05: a Send already waiting in RUNNING (no peer to take it) when the controller's Stop comes
/// returns interrupted; the caller still owns the message, and a peer that connects afterwards
/// receives nothing.
#[test]
fn g05_a_send_waiting_in_run_when_stop_comes_is_interrupted_and_keeps_the_message() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let addr = s.ipc("late");
        let outcome = Arc::new(Mutex::new(None));
        let waiting = Arc::new(AtomicBool::new(false));
        let tid = Arc::new(AtomicI32::new(0));
        let (o, w, t) = (outcome.clone(), waiting.clone(), tid.clone());
        let dev = Hooks {
            run: Some(Box::new(move |ctx| {
                let mut msg = ctx.new_simple_message(b"kept")?;
                t.store(nix::unistd::gettid().as_raw(), Ordering::SeqCst);
                w.store(true, Ordering::SeqCst);
                let r = ctx.send_timeout(&mut msg, "data", 0, -1).map_err(|e| e.code());
                *o.lock() = Some((r, msg.data().to_vec()));
                Ok(())
            })),
            ..Hooks::default()
        };
        let d = spawn(dev, config(&args("pusher", tr, &s, &format!("name=data,type=push,method=bind,address={addr}"))));
        d.to_ready();
        d.go(Transition::Run, State::Running);
        wait_flag(&waiting);
        // Past the flag the hook's thread does nothing but the send: asleep, it waits in it.
        let tid = tid.load(Ordering::SeqCst);
        wait_until(&format!("{tr}: the send to wait"), || asleep(tid));
        d.go(Transition::Stop, State::Ready);
        let (r, kept) = outcome.lock().clone().expect("run's send returned");
        assert_eq!(r, Err(TransferCode::Interrupted), "{tr}");
        assert_eq!(kept, b"kept", "{tr}: the caller still owns the message");
        let count = Arc::new(Mutex::new(0));
        let sink = on_data(counting_sink(count.clone(), 1, 1000), "sink", tr, &s, "pull", "connect", &addr);
        sink.to_ready();
        sink.run_once();
        assert_eq!(*count.lock(), 0, "{tr}: the interrupted message was not sent");
        sink.ready_to_exit();
        d.ready_to_exit();
        assert!(sink.join() && d.join());
    }
}

/// G06: when RUNNING ends, what is still queued stays: a sink that takes 2 messages per run finds
/// the rest of the 5 queued ones in its next runs.
#[test]
fn g06_messages_queued_when_running_ends_stay_for_the_next_run() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let addr = s.ipc("q6");
        let count = Arc::new(Mutex::new(0));
        let sink = on_data(counting_sink(count.clone(), 2, 10_000), "sink", tr, &s, "pull", "bind", &addr);
        sink.to_ready();
        let src = on_data(sender(5), "src", tr, &s, "push", "connect", &addr);
        src.to_ready();
        src.run_once();
        let mut after = Vec::new();
        for _ in 0..2 {
            sink.run_once();
            after.push(*count.lock());
        }
        assert_eq!(after, [2, 4], "{tr}: each run found what the one before left queued");
        sink.ready_to_exit();
        src.ready_to_exit();
        assert!(sink.join() && src.join());
    }
}

/// A device of `hooks` with one channel `name=data,type=<kind>,method=<method>,address=<addr>`.
fn on_data(hooks: Hooks, id: &str, tr: &str, s: &Session, kind: &str, method: &str, addr: &str) -> Running {
    spawn(hooks, config(&args(id, tr, s, &format!("name=data,type={kind},method={method},address={addr}"))))
}

fn sender(n: usize) -> Hooks {
    let mut sent = 0;
    Hooks {
        conditional_run: Some(Box::new(move |ctx| {
            let mut m = ctx.new_simple_message([sent as u8; 100])?;
            if ctx.send(&mut m, "data", 0).is_err() {
                return Ok(false);
            }
            sent += 1;
            Ok(sent < n)
        })),
        ..Hooks::default()
    }
}

#[test]
fn g07_queued_messages_wait_in_ready_and_arrive_in_the_next_run() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let addr = s.ipc("q");
        let count = Arc::new(Mutex::new(0));
        let sink = on_data(counting_sink(count.clone(), 5, 10_000), "sink", tr, &s, "pull", "bind", &addr);
        sink.to_ready(); // the sink is bound but not running: messages queue up
        let src = on_data(sender(5), "src", tr, &s, "push", "connect", &addr);
        src.to_ready();
        src.run_once();
        // G07: through RESETTING TASK and DEVICE READY and back, the channels and queues stay.
        sink.go(Transition::ResetTask, State::DeviceReady);
        sink.go(Transition::InitTask, State::Ready);
        sink.run_once();
        assert_eq!(*count.lock(), 5, "{tr}: the queued messages arrived");
        sink.ready_to_exit();
        src.ready_to_exit();
        assert!(sink.join() && src.join());
    }
}

/// G08, G12: RESETTING DEVICE calls reset() and destroys the channels: the sink's receive queue is
/// lost even with a long linger on its socket; the channel made again receives what comes next.
#[test]
fn g08_g12_resetting_device_calls_reset_and_loses_the_receive_queue() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let addr = s.ipc("r");
        let count = Arc::new(Mutex::new(0));
        let resets = Arc::new(Mutex::new(0));
        let r = resets.clone();
        let mut sinkdev = counting_sink(count.clone(), 10, 2000);
        sinkdev.reset = Some(Box::new(move |_| {
            *r.lock() += 1;
            Ok(())
        }));
        let sink = spawn(
            sinkdev,
            config(&args("sink", tr, &s, &format!("name=data,type=pull,method=bind,address={addr},linger=5000"))),
        );
        sink.to_ready();
        let src = on_data(sender(5), "src", tr, &s, "push", "connect", &addr);
        src.to_ready();
        src.run_once();
        // The source ends: its linger flushes its queue to the sink, so all 5 now wait on the
        // sink's side, and nothing is left that a reconnect could deliver again.
        src.ready_to_exit();
        assert!(src.join());
        // The sink resets instead of running: its sockets close, the queue is gone.
        sink.ready_to_idle();
        assert_eq!(*resets.lock(), 1, "{tr}: reset() was called");
        sink.to_ready();
        let fresh = on_data(sender(1), "fresh", tr, &s, "push", "connect", &addr);
        fresh.to_ready();
        fresh.run_once();
        sink.run_once();
        assert_eq!(*count.lock(), 1, "{tr}: only the fresh message; nothing survived RESETTING DEVICE");
        sink.ready_to_exit();
        fresh.ready_to_exit();
        assert!(sink.join() && fresh.join());
    }
}

#[test]
fn g11_g14_linger_bounds_the_time_in_resetting_device() {
    for tr in TRANSPORTS {
        let mut took = Vec::new();
        for linger in [3000, 0] {
            let s = Session::new();
            let chan = format!("name=data,type=push,method=connect,address={},linger={linger}", s.ipc("absent"));
            let src = spawn(sender(3), config(&args("src", tr, &s, &chan)));
            src.to_ready();
            src.run_once();
            src.go(Transition::ResetTask, State::DeviceReady);
            let start = Instant::now();
            src.go(Transition::ResetDevice, State::Idle);
            took.push(start.elapsed());
            src.go(Transition::End, State::Exiting);
            assert!(src.join());
        }
        // G11: about linger ms (bounded, not forever); G14: linger 0 discards at once, measured
        // side by side with the 3 s linger of the same run.
        assert!(took[0] >= Duration::from_millis(2900), "{tr}: linger 3000 waited {:?}", took[0]);
        assert!(took[0] < Duration::from_secs(10), "{tr}: bounded: {:?}", took[0]);
        assert!(took[1] * 2 < took[0], "{tr}: linger 0 took {:?}, linger 3000 {:?}", took[1], took[0]);
    }
}

#[test]
fn g01_g02_g03_the_devices_own_stop_interrupts_and_the_next_state_resumes() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let addr = s.ipc("g01");
        let results = Arc::new(Mutex::new(Vec::new()));
        let (r1, r2) = (results.clone(), results.clone());
        let dev = Hooks {
            // conditional_run unset: RUNNING ends at once and the device requests Stop itself.
            post_run: Some(Box::new(move |ctx| {
                // G02: a receive that would wait returns interrupted at once, even with timeout -1.
                let start = Instant::now();
                let mut m = ctx.channel("data", 0)?.new_message();
                let r = ctx.receive_timeout(&mut m, "data", 0, -1).map_err(|e| e.code());
                r1.lock().push(format!("post_run receive {r:?} quickly={}", start.elapsed() < Duration::from_secs(5)));
                // G03: a send that can complete at once still completes while interrupted.
                let mut out = ctx.new_simple_message(b"x")?;
                let r = ctx.send_timeout(&mut out, "out", 0, -1).map_err(|e| e.code());
                r1.lock().push(format!("post_run send {r:?}"));
                Ok(())
            })),
            reset_task: Some(Box::new(move |ctx| {
                // G01: RESETTING TASK resumed the transports: a receive with a timeout times out.
                let mut m = ctx.channel("data", 0)?.new_message();
                let r = ctx.receive_timeout(&mut m, "data", 0, 200).map_err(|e| e.code());
                r2.lock().push(format!("reset_task receive {r:?}"));
                Ok(())
            })),
            ..Hooks::default()
        };
        // No peer is needed for G03: a connecting push socket queues at once (its pipe exists from
        // the connect on), so the send can complete without waiting, on either transport.
        let out_addr = s.ipc("g01out");
        let cfg = format!(
            "--id g01 --severity warn --transport {tr} --session {} --shm-segment-size 20000000 --channel-config \
             name=data,type=pull,method=bind,address={addr},rateLogging=0 name=out,type=push,method=connect,address={out_addr},rateLogging=0",
            s.name
        );
        let d = spawn(dev, config(&cfg));
        d.to_ready();
        d.run_once();
        d.ready_to_exit();
        assert!(d.join());
        assert_eq!(
            results.lock().clone(),
            [
                format!("post_run receive Err({:?}) quickly=true", TransferCode::Interrupted),
                "post_run send Ok(1)".to_owned(),
                format!("reset_task receive Err({:?})", TransferCode::Timeout),
            ],
            "{tr}"
        );
    }
}

#[test]
fn rate_limits_conditional_run() {
    let count = Arc::new(Mutex::new(0u32));
    let c = count.clone();
    let dev = Hooks {
        conditional_run: Some(Box::new(move |_| {
            *c.lock() += 1;
            Ok(true)
        })),
        ..Hooks::default()
    };
    let d = spawn(dev, config("--id rated --severity warn --rate 20"));
    d.to_ready();
    d.go(Transition::Run, State::Running);
    // Runs for a while: the rate is what is measured.
    std::thread::sleep(Duration::from_millis(500));
    d.go(Transition::Stop, State::Ready);
    let n = *count.lock();
    // 20 Hz for 0.5 s is about 10 calls; without the limit it would be millions.
    assert!((1..=60).contains(&n), "{n} calls");
    d.ready_to_exit();
    assert!(d.join());
}
