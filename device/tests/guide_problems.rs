//! The seed guide's remaining statements and "Problems that can occur", each reproduced and then
//! fixed, on both transports with exact counts (ids of `seed-checklist.md` in the names).

mod common;
use common::guide::*;
use common::process::wait_until;
use common::*;
use fairmq::{State, TransferCode, Transition};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Long enough for a bug to show, not a timing assumption of the behaviour under test.
const SETTLE: Duration = Duration::from_millis(300);

/// Checks `holds` again and again for `SETTLE`, failing as soon as it does not: for something that
/// must not happen, whose absence nothing reports.
fn holds_throughout(what: &str, mut holds: impl FnMut() -> bool) {
    let end = Instant::now() + SETTLE;
    loop {
        assert!(holds(), "{what}");
        if Instant::now() >= end {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn g04_after_stop_neither_conditional_run_nor_a_data_callback_is_called_again() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let a = s.ipc("a");
        let (runs, sent) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let mut src = endless_source(sent.clone());
        let (r, mut inner) = (runs.clone(), src.conditional_run.take().unwrap());
        src.conditional_run = Some(Box::new(move |ctx| {
            r.fetch_add(1, Ordering::SeqCst);
            inner(ctx)
        }));
        let src = spawn(src, config(&args("src", tr, &s, &format!("name=data,type=push,method=connect,address={a}"))));
        let (k, seen) = sink(&s, tr, "sink", &a, 1);
        start_all(&[&k, &src]);
        wait_until(&format!("{tr}: 10 messages at the sink"), || seen.data.load(Ordering::SeqCst) >= 10);
        // The sink stops while the source goes on sending: messages wait in its queue (the source
        // may already be held by the high-water mark, so count what was sent, not what is still
        // being sent), but its data callback is not called any more.
        k.go(Transition::Stop, State::Ready);
        let callbacks = seen.data.load(Ordering::SeqCst);
        wait_until(&format!("{tr}: messages waiting for the stopped sink"), || sent.load(Ordering::SeqCst) > callbacks);
        holds_throughout(&format!("{tr}: no data callback after Stop"), || {
            seen.data.load(Ordering::SeqCst) == callbacks
        });
        src.go(Transition::Stop, State::Ready);
        let runs_at_stop = runs.load(Ordering::SeqCst);
        holds_throughout(&format!("{tr}: no conditional_run after Stop"), || {
            runs.load(Ordering::SeqCst) == runs_at_stop
        });
        end_all(vec![src, k]);
    }
}

/// A source whose end message cannot leave: the sink paused (in READY) with full queues, the end
/// message sent in post_run (where the transports are interrupted). `checked`: the source looks at
/// the result and fails; otherwise it ignores it.
fn g20_run(tr: &str, checked: bool) -> (u64, u64, bool) {
    let s = Session::new();
    let a = s.ipc("a");
    let (k, seen) = sink(&s, tr, "sink", &a, 1);
    let (sent, timed_out) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut src = endless_source_counting(sent.clone(), timed_out.clone());
    let result = Arc::new(Mutex::new(None));
    let r = result.clone();
    src.post_run = Some(Box::new(move |ctx| {
        let mut e = ctx.new_simple_message(eod::end(0))?;
        let sent = ctx.send_timeout(&mut e, "data", 0, 1000);
        *r.lock() = Some(sent.as_ref().map(|_| ()).map_err(|e| e.code()));
        if checked {
            sent.map_err(|e| format!("the end message was not sent: {e}"))?;
        }
        Ok(())
    }));
    let q = ",sndBufSize=1,rcvBufSize=1";
    let spec = format!("name=data,type=push,method=connect,address={a}");
    let src = spawn(src, config(&format!("{}{q}", args("src", tr, &s, &spec))));
    start_all(&[&k, &src]);
    wait_until(&format!("{tr}: 10 messages at the sink"), || seen.data.load(Ordering::SeqCst) >= 10);
    // The sink pauses: the queues fill up, full once a send of the source times out after the
    // sink stopped reading.
    k.go(Transition::Stop, State::Ready);
    let before = timed_out.load(Ordering::SeqCst);
    wait_until(&format!("{tr}: a send of the source timing out"), || timed_out.load(Ordering::SeqCst) > before);
    assert!(src.h.change_state(Transition::Stop));
    // The source's state is checked here: a checked failure takes it to ERROR, otherwise READY.
    if checked {
        assert!(src.h.wait_for_state(State::Error, T).is_err(), "{tr}: a checked failure is an error");
    } else {
        wait_ready(&src);
    }
    assert_eq!(*result.lock(), Some(Err(TransferCode::Interrupted)), "{tr}");
    // The sink reads again: it gets every data message, but no end message, so it never stops.
    k.go(Transition::Run, State::Running);
    let stopped = k.h.wait_for_state(State::Ready, Some(Duration::from_millis(1500))).unwrap();
    let (data, ends) = (seen.data.load(Ordering::SeqCst), seen.ends.load(Ordering::SeqCst));
    assert_eq!(data, sent.load(Ordering::SeqCst), "{tr}: all data arrived");
    k.go(Transition::Stop, State::Ready);
    if checked {
        drop(src);
    } else {
        src.ready_to_exit();
        assert!(src.join());
    }
    k.ready_to_exit();
    assert!(k.join());
    (data, ends, stopped)
}

#[test]
fn g20_an_unsent_end_message_leaves_the_receiver_running_and_only_a_checked_send_reveals_it() {
    for tr in TRANSPORTS {
        // Unchecked: the source believes it is done, the receiver waits forever.
        let (data, ends, stopped) = g20_run(tr, false);
        assert_eq!((ends, stopped), (0, false), "{tr}: {data} data messages");
        // Checked: the failed Send is an error the device reports (ERROR, exit code 1).
        let (_, ends, stopped) = g20_run(tr, true);
        assert_eq!((ends, stopped), (0, false), "{tr}");
    }
}

#[test]
fn g11_g13_g44_linger_minus_one_holds_resetting_device_a_finite_linger_bounds_it() {
    for tr in TRANSPORTS {
        // No peer ever appears: the three messages can never leave.
        for (linger, stuck) in [("-1", true), ("300", false)] {
            let s = Session::new();
            let a = s.ipc("nobody");
            let spec = format!("name=data,type=push,method=connect,address={a},linger={linger}");
            let src = spawn(
                Source { n: 3, sent: 0, end_on_every_sub_channel: true, skip: None },
                config(&args("src", tr, &s, &spec)),
            );
            src.to_ready();
            assert!(src.h.change_state(Transition::Run));
            // The end message's Send waits for a peer; the controller stops the source. The pause
            // lets it get that far (the source reports no count).
            std::thread::sleep(SETTLE);
            src.h.change_state(Transition::Stop);
            assert!(src.h.wait_for_state(State::Ready, T).unwrap(), "{tr}: back in READY");
            src.go(Transition::ResetTask, State::DeviceReady);
            let start = Instant::now();
            assert!(src.h.change_state(Transition::ResetDevice));
            if stuck {
                assert!(
                    !src.h.wait_for_state(State::Idle, Some(Duration::from_millis(1500))).unwrap(),
                    "{tr}: linger -1 keeps the device in RESETTING DEVICE"
                );
                assert_eq!(src.h.current_state(), State::ResettingDevice);
                // Ended by a peer that takes the messages (what else could end it).
                let (k, seen) = sink(&s, tr, "sink", &a, 1);
                k.to_ready();
                k.go(Transition::Run, State::Running);
                assert!(src.h.wait_for_state(State::Idle, T).unwrap());
                wait_ready(&k); // the queued data and end message arrived
                assert_eq!(seen.data.load(Ordering::SeqCst), 3);
                k.ready_to_exit();
                assert!(k.join());
            } else {
                // G11: the device waits for its send queue about linger ms, then gives up.
                assert!(src.h.wait_for_state(State::Idle, T).unwrap(), "{tr}: a finite linger ends RESETTING DEVICE");
                let spent = start.elapsed();
                assert!(spent >= Duration::from_millis(250), "{tr}: it did wait for the queue ({spent:?})");
                assert!(spent < Duration::from_secs(15), "{tr}: bounded by the linger ({spent:?})");
            }
            src.go(Transition::End, State::Exiting);
            assert!(src.join());
        }
    }
}

#[test]
fn g21_g45_one_end_message_on_a_shared_push_socket_stops_only_one_sink() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let a = s.ipc("shared");
        // One push socket (bound), two sinks connected to it: messages go round-robin.
        let pull = format!("name=data,type=pull,method=connect,address={a}");
        let (ka, sa) = sink_on(&s, tr, "sinka", &pull, 1);
        let (kb, sb) = sink_on(&s, tr, "sinkb", &pull, 1);
        let push = format!("name=data,type=push,method=bind,address={a}");
        let src = spawn(
            Source { n: 100, sent: 0, end_on_every_sub_channel: true, skip: None },
            config(&args("src", tr, &s, &push)),
        );
        src.to_ready();
        ka.to_ready();
        kb.to_ready();
        for d in [&ka, &kb] {
            d.go(Transition::Run, State::Running);
        }
        src.go(Transition::Run, State::Running);
        wait_ready(&src);
        let ready = |k: &Running| k.h.wait_for_state(State::Ready, Some(Duration::from_millis(1500))).unwrap();
        let (ra, rb) = (ready(&ka), ready(&kb));
        assert!(ra != rb, "{tr}: exactly one sink got the one end message ({ra}, {rb})");
        assert_eq!(sa.ends.load(Ordering::SeqCst) + sb.ends.load(Ordering::SeqCst), 1);
        assert_eq!(sa.data.load(Ordering::SeqCst) + sb.data.load(Ordering::SeqCst), 100, "{tr}: data all arrived");
        for k in [&ka, &kb] {
            if k.h.current_state() == State::Running {
                k.go(Transition::Stop, State::Ready);
            }
        }
        end_all(vec![src, ka, kb]);
        // The fix, one sub-channel per sink with an end message on each, is
        // `guide::g21_g45_one_end_message_per_sub_channel_stops_every_receiver`.
    }
}

#[test]
fn g46_a_missing_end_message_keeps_the_sink_running_and_the_senders_counts_show_it() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let a = s.ipc("a");
        let (k, seen) = sink(&s, tr, "sink", &a, 1);
        let sent = Arc::new(AtomicU64::new(0));
        let n = sent.clone();
        // A sender that forgets its end message; its own count (G39) is the evidence.
        let forgetful = Hooks {
            conditional_run: Some(Box::new(move |ctx| {
                let mut m = ctx.new_simple_message(eod::data(n.load(Ordering::SeqCst)))?;
                ctx.send(&mut m, "data", 0)?;
                Ok(n.fetch_add(1, Ordering::SeqCst) + 1 < 25)
            })),
            ..Hooks::default()
        };
        let src =
            spawn(forgetful, config(&args("src", tr, &s, &format!("name=data,type=push,method=connect,address={a}"))));
        start_all(&[&k, &src]);
        wait_ready(&src);
        assert!(
            !k.h.wait_for_state(State::Ready, Some(Duration::from_millis(1500))).unwrap(),
            "{tr}: without an end message the sink never leaves RUNNING"
        );
        assert_eq!(
            (sent.load(Ordering::SeqCst), seen.data.load(Ordering::SeqCst), seen.ends.load(Ordering::SeqCst)),
            (25, 25, 0)
        );
        k.go(Transition::Stop, State::Ready);
        end_all(vec![src, k]);
    }
}
