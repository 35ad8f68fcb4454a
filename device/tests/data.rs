//! Data callbacks in RUNNING: single messages and multiparts, one or several input channels,
//! mixed transports, and how RUNNING ends.

mod common;
use common::*;
use fairmq::{Context, Device, HookResult, Message, Parts, State, Transition};
use parking_lot::Mutex;
use std::sync::Arc;

/// Receives on the registered inputs; records (channel, index, size); stops after `stop_after`.
struct Inputs {
    singles: Vec<&'static str>,
    multis: Vec<&'static str>,
    seen: Arc<Mutex<Vec<(String, usize, usize)>>>,
    stop_after: usize,
}

impl Inputs {
    fn record(&self, ch: &str, i: usize, n: usize) -> bool {
        let mut s = self.seen.lock();
        s.push((ch.to_owned(), i, n));
        s.len() < self.stop_after
    }
}

impl Device for Inputs {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.singles.iter().for_each(|c| ctx.on_data(c));
        self.multis.iter().for_each(|c| ctx.on_data_parts(c));
        Ok(())
    }
    fn handle_data(&mut self, _: &Context, ch: &str, m: &mut Message, i: usize) -> HookResult<bool> {
        Ok(self.record(ch, i, m.size()))
    }
    fn handle_parts(&mut self, _: &Context, ch: &str, p: &mut Parts, i: usize) -> HookResult<bool> {
        Ok(self.record(ch, i, p.len()))
    }
}

/// A device that sends `sizes` on `chan[index]` once RUNNING starts (multipart when `parts`).
fn sender(chan: &'static str, index: usize, sizes: Vec<usize>, parts: bool) -> Hooks {
    Hooks {
        run: Some(Box::new(move |ctx| {
            let ch = ctx.channel(chan, index)?;
            if parts {
                let mut p: Parts = sizes.iter().map(|&n| ch.new_message_with_size(n)).collect::<Result<_, _>>()?;
                ch.send_parts(&mut p)?;
            } else {
                for &n in &sizes {
                    ch.send(&mut ch.new_message_with_size(n)?)?;
                }
            }
            Ok(())
        })),
        ..Hooks::default()
    }
}

fn run_until_ready(devs: &[&Running]) {
    for d in devs {
        d.to_ready();
    }
    for d in devs {
        d.go(Transition::Run, State::Running);
    }
    for d in devs {
        assert!(d.h.wait_for_state(State::Ready, T).unwrap());
    }
}

#[test]
fn single_input_callback_returning_false_ends_running() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let addr = s.ipc("d");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let rx = spawn(
            Inputs { singles: vec!["data"], multis: vec![], seen: seen.clone(), stop_after: 3 },
            config(&args("rx", tr, &s, &format!("name=data,type=pull,method=bind,address={addr}"))),
        );
        let tx = spawn(
            sender("data", 0, vec![10, 20, 30, 40], false),
            config(&args("tx", tr, &s, &format!("name=data,type=push,method=connect,address={addr}"))),
        );
        run_until_ready(&[&rx, &tx]);
        assert_eq!(
            seen.lock().clone(),
            [("data".into(), 0, 10), ("data".into(), 0, 20), ("data".into(), 0, 30)],
            "{tr}: G04 no callback after false"
        );
        for d in [rx, tx] {
            d.ready_to_exit();
            assert!(d.join());
        }
    }
}

#[test]
fn multipart_callback_gets_all_parts() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let addr = s.ipc("m");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let rx = spawn(
            Inputs { singles: vec![], multis: vec!["data"], seen: seen.clone(), stop_after: 1 },
            config(&args("rx", tr, &s, &format!("name=data,type=pull,method=bind,address={addr}"))),
        );
        let tx = spawn(
            sender("data", 0, vec![4, 1000, 500, 600, 700, 0, 100], true),
            config(&args("tx", tr, &s, &format!("name=data,type=push,method=connect,address={addr}"))),
        );
        run_until_ready(&[&rx, &tx]);
        assert_eq!(seen.lock().clone(), [("data".into(), 0, 7)], "{tr}");
        for d in [rx, tx] {
            d.ready_to_exit();
            assert!(d.join());
        }
    }
}

#[test]
fn several_inputs_and_sub_channels_of_both_transports_are_polled() {
    let s = Session::new();
    let (a0, a1, b) = (s.ipc("a0"), s.ipc("a1"), s.ipc("b"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    // Channel "a" (zeromq) with two sub-channels, channel "b" (shmem).
    let rx_args = format!(
        "--id rx --severity warn --session {} --shm-segment-size 20000000 --channel-config \
         name=a,type=pull,method=bind,transport=zeromq,rateLogging=0,address={a0},address={a1} \
         name=b,type=pull,method=bind,transport=shmem,rateLogging=0,address={b}",
        s.name
    );
    let rx =
        spawn(Inputs { singles: vec!["a", "b"], multis: vec![], seen: seen.clone(), stop_after: 3 }, config(&rx_args));
    let t0 = spawn(
        sender("a", 0, vec![1], false),
        config(&args("t0", "zeromq", &s, &format!("name=a,type=push,method=connect,address={a0}"))),
    );
    let t1 = spawn(
        sender("a", 0, vec![2], false),
        config(&args("t1", "zeromq", &s, &format!("name=a,type=push,method=connect,address={a1}"))),
    );
    let t2 = spawn(
        sender("b", 0, vec![3], false),
        config(&args("t2", "shmem", &s, &format!("name=b,type=push,method=connect,address={b}"))),
    );
    run_until_ready(&[&rx, &t0, &t1, &t2]);
    let mut got = seen.lock().clone();
    got.sort();
    assert_eq!(got, [("a".into(), 0, 1), ("a".into(), 1, 2), ("b".into(), 0, 3)], "the index is the sub-channel's");
    for d in [rx, t0, t1, t2] {
        d.ready_to_exit();
        assert!(d.join());
    }
}

#[test]
fn a_receive_timeout_ends_running_in_the_single_input_path() {
    let s = Session::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let rx = spawn(
        Inputs { singles: vec!["data"], multis: vec![], seen: seen.clone(), stop_after: 100 },
        config(&format!(
            "{},rcvTimeoutMs=100",
            args("rx", "zeromq", &s, &format!("name=data,type=pull,method=bind,address={}", s.ipc("t")))
        )),
    );
    rx.to_ready();
    rx.go(Transition::Run, State::Running);
    assert!(rx.h.wait_for_state(State::Ready, T).unwrap(), "RUNNING ended at the first timeout");
    assert!(seen.lock().is_empty());
    rx.ready_to_exit();
    assert!(rx.join());
}

#[test]
fn an_unknown_input_channel_is_an_error() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let rx = spawn(
        Inputs { singles: vec!["missing"], multis: vec![], seen, stop_after: 1 },
        config("--id rx --severity fatal"),
    );
    rx.to_ready();
    assert!(rx.h.change_state(Transition::Run));
    assert!(rx.h.wait_for_state(State::Ready, T).is_err(), "ERROR");
    assert!(!rx.join());
}
