//! The seed guide "Stop a topology without losing messages", statement by statement, for both
//! transports (ids of `seed-checklist.md` in the names), with exact counts.

mod common;
use common::guide::*;
use common::process::wait_until;
use common::*;
use fairmq::{Context, Device, HookResult, Message, Parts, State, TransferCode, Transition};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A hook closure of the test devices.
type Hook<T = ()> = Option<Box<dyn FnMut(&Context) -> HookResult<T> + Send>>;

#[test]
fn g17_g18_g40_end_message_carries_the_count_and_nothing_is_lost() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let a = s.ipc("a");
        let (k, seen) = sink(&s, tr, "sink", &a, 1);
        let src = source(&s, tr, "src", &[&a], 500, true);
        start_all(&[&k, &src]);
        wait_ready(&src);
        wait_ready(&k); // G25: the sink ends by itself after the end message
        assert_eq!(seen.data.load(Ordering::SeqCst), 500, "{tr}");
        assert_eq!(seen.announced.load(Ordering::SeqCst), 500, "{tr}: G40 the end message's count matches");
        assert_eq!(seen.gaps.load(Ordering::SeqCst), 0, "{tr}: G18 one connection keeps Send order");
        end_all(vec![src, k]);
    }
}

/// G40: a message lost on the way (here: never sent) shows in the end message's count and, by the
/// sequence numbers, which one it was.
#[test]
fn g40_the_end_messages_count_and_the_sequence_numbers_show_a_lost_message() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let a = s.ipc("a");
        let (k, seen) = sink(&s, tr, "sink", &a, 1);
        let src = spawn(
            Source { n: 50, sent: 0, end_on_every_sub_channel: true, skip: Some(17) },
            config(&args("src", tr, &s, &format!("name=data,type=push,method=connect,address={a}"))),
        );
        start_all(&[&k, &src]);
        wait_ready(&src);
        wait_ready(&k);
        let (data, announced) = (seen.data.load(Ordering::SeqCst), seen.announced.load(Ordering::SeqCst));
        assert_eq!((data, announced), (49, 50), "{tr}: the count shows one missing");
        assert_eq!(*seen.missing.lock(), [17], "{tr}: the sequence numbers show which");
        end_all(vec![src, k]);
    }
}

#[test]
fn g21_g45_one_end_message_per_sub_channel_stops_every_receiver() {
    for tr in TRANSPORTS {
        // G45's fix (its problem is in guide_problems.rs): one end message on each sub-channel.
        let s = Session::new();
        let (a, b) = (s.ipc("a"), s.ipc("b"));
        let (ka, sa) = sink(&s, tr, "sinka", &a, 1);
        let (kb, sb) = sink(&s, tr, "sinkb", &b, 1);
        let src = source(&s, tr, "src", &[&a, &b], 100, true);
        start_all(&[&ka, &kb, &src]);
        for d in [&src, &ka, &kb] {
            wait_ready(d);
        }
        assert_eq!(sa.data.load(Ordering::SeqCst) + sb.data.load(Ordering::SeqCst), 100, "{tr}");
        assert_eq!(sa.announced.load(Ordering::SeqCst), 100);
        end_all(vec![src, ka, kb]);
    }
}

#[test]
fn g22_g46_a_receiver_of_several_senders_waits_for_num_senders_end_messages() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let a = s.ipc("a");
        let (k, seen) = sink(&s, tr, "sink", &a, 3);
        let srcs: Vec<Running> = (0..3).map(|i| source(&s, tr, &format!("src{i}"), &[&a], 50, true)).collect();
        start_all(&[&k]);
        let refs: Vec<&Running> = srcs.iter().collect();
        start_all(&refs);
        wait_ready(&k);
        assert_eq!(seen.ends.load(Ordering::SeqCst), 3);
        assert_eq!(seen.data.load(Ordering::SeqCst), 150, "{tr}");
        end_all(srcs);
        end_all(vec![k]);
        // G46: one sender too many expected: the sink stays in RUNNING (bounded wait), then is stopped.
        let s = Session::new();
        let a = s.ipc("a");
        let (k, seen) = sink(&s, tr, "sink", &a, 2);
        let src = source(&s, tr, "src", &[&a], 10, true);
        start_all(&[&k, &src]);
        wait_ready(&src);
        assert!(
            !k.h.wait_for_state(State::Ready, Some(Duration::from_millis(500))).unwrap(),
            "{tr}: still waiting for the 2nd end message"
        );
        assert_eq!(seen.data.load(Ordering::SeqCst), 10);
        k.go(Transition::Stop, State::Ready);
        end_all(vec![src, k]);
    }
}

/// Forwards data from all `in` sub-channels to `out[0]`; after the end messages of all inputs,
/// sends one end message on each `out` sub-channel and leaves RUNNING (G23).
struct Processor {
    inputs: u64,
    ended: u64,
    forwarded: u64,
}

impl Device for Processor {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        ctx.on_data("in");
        Ok(())
    }
    fn handle_data(&mut self, ctx: &Context, _: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        let (end, _) = eod::parse(m.data());
        if !end {
            ctx.send(m, "out", 0)?;
            self.forwarded += 1;
            return Ok(true);
        }
        self.ended += 1;
        if self.ended < self.inputs {
            return Ok(true);
        }
        for i in 0..ctx.num_sub_channels("out")? {
            let mut e = ctx.channel("out", i)?.new_simple_message(&eod::end(self.forwarded))?;
            ctx.send(&mut e, "out", i)?;
        }
        Ok(false)
    }
}

#[test]
fn g23_g25_a_processor_ends_after_all_inputs_and_the_topology_stops_in_order() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let (pin, kin, kin2) = (s.ipc("pin"), s.ipc("kin"), s.ipc("kin2"));
        let (k, seen) = sink(&s, tr, "sink", &kin, 1);
        // A second output sub-channel: its sink gets no data, only the end message.
        let (k2, seen2) = sink(&s, tr, "sink2", &kin2, 1);
        let p = spawn(
            Processor { inputs: 2, ended: 0, forwarded: 0 },
            config(&format!(
                "--id proc --severity warn --transport {tr} --session {} --shm-segment-size 20000000 --channel-config name=in,type=pull,method=bind,address={pin},rateLogging=0 name=out,type=push,method=connect,address={kin},address={kin2},rateLogging=0",
                s.name
            )),
        );
        let s1 = source(&s, tr, "s1", &[&pin], 100, true);
        let s2 = source(&s, tr, "s2", &[&pin], 60, true);
        start_all(&[&k, &k2, &p, &s1, &s2]);
        // Sources end first, then the processor, then the sinks, each by itself.
        for d in [&s1, &s2, &p, &k, &k2] {
            wait_ready(d);
        }
        assert_eq!(seen.data.load(Ordering::SeqCst), 160, "{tr}");
        assert_eq!(seen.announced.load(Ordering::SeqCst), 160);
        assert_eq!(seen.ends.load(Ordering::SeqCst), 1, "{tr}: one end message on each output");
        assert_eq!((seen2.data.load(Ordering::SeqCst), seen2.ends.load(Ordering::SeqCst)), (0, 1), "{tr}");
        // The controller resets only now that all sinks are in READY.
        end_all(vec![s1, s2, p, k, k2]);
    }
}

#[test]
fn g26_stopping_the_sink_first_loses_its_queue_stopping_the_source_first_loses_nothing() {
    for tr in TRANSPORTS {
        // Wrong order: the sink leaves RUNNING first; its queue fills, the source's sends time out;
        // when the sink resets, what was queued is lost.
        let s = Session::new();
        let a = s.ipc("a");
        let (k, seen) = sink(&s, tr, "sink", &a, 1);
        let sent = Arc::new(AtomicU64::new(0));
        let timed_out = Arc::new(AtomicU64::new(0));
        let src = spawn(
            endless_source_counting(sent.clone(), timed_out.clone()),
            config(&format!(
                "{},sndBufSize=10",
                args("src", tr, &s, &format!("name=data,type=push,method=connect,address={a}"))
            )),
        );
        start_all(&[&k, &src]);
        wait_until(&format!("{tr}: data reaching the sink"), || seen.data.load(Ordering::SeqCst) > 0);
        k.go(Transition::Stop, State::Ready);
        // The queues between them fill up, then the source's sends wait until their timeout.
        let before = timed_out.load(Ordering::SeqCst);
        wait_until(&format!("{tr}: a send of the source timing out"), || timed_out.load(Ordering::SeqCst) > before);
        let sent_when_full = sent.load(Ordering::SeqCst);
        src.go(Transition::Stop, State::Ready);
        assert!(sent.load(Ordering::SeqCst) - sent_when_full < 20, "{tr}: the full queues took (almost) nothing more");
        k.ready_to_exit();
        src.ready_to_exit();
        let (sent_n, got) = (sent.load(Ordering::SeqCst), seen.data.load(Ordering::SeqCst));
        assert!(got < sent_n, "{tr}: {sent_n} sent, {got} received: the sink's queue was lost");
        assert!(k.join() && src.join());

        // Right order: the source stops first and sends its end message; the sink drains and ends.
        let s = Session::new();
        let a = s.ipc("a");
        let (k, seen) = sink(&s, tr, "sink", &a, 1);
        let src = source(&s, tr, "src", &[&a], 2000, true);
        start_all(&[&k, &src]);
        wait_ready(&src);
        wait_ready(&k);
        assert_eq!(
            (seen.data.load(Ordering::SeqCst), seen.announced.load(Ordering::SeqCst)),
            (2000, 2000),
            "{tr}: none lost"
        );
        end_all(vec![src, k]);
    }
}

#[test]
fn g29_g47_a_source_stopped_by_a_controller_sends_its_end_message_in_reset_task() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let a = s.ipc("a");
        let (k, seen) = sink(&s, tr, "sink", &a, 1);
        let sent = Arc::new(AtomicU64::new(0));
        let post_run_result = Arc::new(Mutex::new(None));
        let (s1, s2, pr) = (sent.clone(), sent.clone(), post_run_result.clone());
        let timed_out = Arc::new(AtomicU64::new(0));
        let mut src = endless_source_counting(s1, timed_out.clone());
        // G47: in post_run the end message's Send must wait (the sink's queue is full): it returns -3 ...
        src.post_run = Some(Box::new(move |ctx| {
            let mut e = ctx.new_simple_message(eod::end(0))?;
            *pr.lock() = Some(ctx.send_timeout(&mut e, "data", 0, 1000).map_err(|e| e.code()));
            Ok(())
        }));
        // ... in reset_task (transports not interrupted) a Send with a timeout delivers it.
        let refused = Arc::new(Mutex::new(Vec::new()));
        let rf = refused.clone();
        src.reset_task = Some(Box::new(move |ctx| {
            // G29: in RESETTING TASK only Auto and ErrorFound are accepted.
            for t in
                [Transition::Stop, Transition::Run, Transition::ResetTask, Transition::ResetDevice, Transition::End]
            {
                rf.lock().push((t, ctx.change_state(t)));
            }
            let mut e = ctx.new_simple_message(eod::end(s2.load(Ordering::SeqCst)))?;
            ctx.send_timeout(&mut e, "data", 0, 5000)?;
            Ok(())
        }));
        let q = ",sndBufSize=1,rcvBufSize=1";
        let src = spawn(
            src,
            config(&format!("{}{q}", args("src", tr, &s, &format!("name=data,type=push,method=connect,address={a}")))),
        );
        start_all(&[&k, &src]);
        wait_until(&format!("{tr}: data reaching the sink"), || seen.data.load(Ordering::SeqCst) > 0);
        // The sink pauses: the queues fill up, full once a send of the source times out after the
        // sink stopped reading.
        k.go(Transition::Stop, State::Ready);
        let before = timed_out.load(Ordering::SeqCst);
        wait_until(&format!("{tr}: a send of the source timing out"), || timed_out.load(Ordering::SeqCst) > before);
        src.go(Transition::Stop, State::Ready);
        assert_eq!(*post_run_result.lock(), Some(Err(TransferCode::Interrupted)), "{tr}: G28/G47");
        k.go(Transition::Run, State::Running); // the sink reads again (its queue survived READY)
        src.go(Transition::ResetTask, State::DeviceReady);
        wait_ready(&k);
        assert!(refused.lock().iter().all(|&(_, accepted)| !accepted), "{tr}: {:?}", refused.lock());
        assert_eq!(refused.lock().len(), 5, "{tr}");
        assert_eq!(seen.data.load(Ordering::SeqCst), sent.load(Ordering::SeqCst), "{tr}: all arrived");
        assert_eq!(seen.announced.load(Ordering::SeqCst), sent.load(Ordering::SeqCst));
        src.go(Transition::ResetDevice, State::Idle);
        src.go(Transition::End, State::Exiting);
        k.ready_to_exit();
        assert!(src.join() && k.join());
    }
}

#[test]
fn g31_g32_a_sink_drains_in_post_run_then_gets_the_rest_in_reset_task() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let a = s.ipc("a");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (l1, l2) = (log.clone(), log.clone());
        let sinkdev = Hooks {
            run: Some(Box::new(|ctx| {
                ctx.wait_for(Duration::from_secs(60)); // until a controller stops it
                Ok(())
            })),
            post_run: Some(Box::new(move |ctx| {
                // G31: what is queued comes out, then interrupted (at once for timeout 0 and -1).
                let mut n = 0;
                loop {
                    let mut m = ctx.channel("data", 0)?.new_message();
                    match ctx.receive_timeout(&mut m, "data", 0, 0) {
                        Ok(_) => n += 1,
                        Err(e) => {
                            l1.lock().push(format!("post_run {n} then {:?}", e.code()));
                            break;
                        }
                    }
                }
                let start = Instant::now();
                let mut m = ctx.channel("data", 0)?.new_message();
                let r = ctx.receive_timeout(&mut m, "data", 0, -1).map_err(|e| e.code());
                l1.lock().push(format!("post_run blocking {r:?} fast={}", start.elapsed() < Duration::from_secs(5)));
                // ... and one with a timeout does not wait for it.
                let start = Instant::now();
                let r = ctx.receive_timeout(&mut m, "data", 0, 3000).map_err(|e| e.code());
                l1.lock()
                    .push(format!("post_run 3000 ms {r:?} fast={}", start.elapsed() < Duration::from_millis(2500)));
                Ok(())
            })),
            reset_task: Some(Box::new(move |ctx| {
                // G32: with a timeout, reset_task waits for more; 1 s without any ends it.
                let mut n = 0;
                loop {
                    let mut m = ctx.channel("data", 0)?.new_message();
                    if ctx.receive_timeout(&mut m, "data", 0, 1000).is_err() {
                        break;
                    }
                    n += 1;
                }
                l2.lock().push(format!("reset_task {n}"));
                Ok(())
            })),
            ..Hooks::default()
        };
        let k = spawn(sinkdev, config(&args("sink", tr, &s, &format!("name=data,type=pull,method=bind,address={a}"))));
        let src = source(&s, tr, "src", &[&a], 20, true);
        k.to_ready();
        k.go(Transition::Run, State::Running);
        src.to_ready();
        src.go(Transition::Run, State::Running);
        // 21 messages (20 + end) sent to the sink's queue; time for the last of them to arrive
        // there: nothing reports a message queued for a receiver without taking it (post_run's
        // count is what is checked).
        wait_ready(&src);
        std::thread::sleep(Duration::from_millis(200));
        k.go(Transition::Stop, State::Ready);
        // More data after RUNNING ended (the source runs again: its end message once more):
        // reset_task gets it.
        src.go(Transition::Run, State::Running);
        wait_ready(&src);
        k.go(Transition::ResetTask, State::DeviceReady);
        let log = log.lock().clone();
        assert_eq!(log[0], format!("post_run 21 then {:?}", TransferCode::Interrupted), "{tr}");
        assert_eq!(log[1], format!("post_run blocking Err({:?}) fast=true", TransferCode::Interrupted), "{tr}");
        assert_eq!(log[2], format!("post_run 3000 ms Err({:?}) fast=true", TransferCode::Interrupted), "{tr}");
        assert_eq!(log[3], "reset_task 1", "{tr}");
        k.go(Transition::ResetDevice, State::Idle);
        k.go(Transition::End, State::Exiting);
        src.ready_to_exit();
        assert!(k.join() && src.join());
    }
}

#[test]
fn g16_shmem_blocks_of_discarded_metadata_stay_until_the_session_is_removed() {
    let s = Session::new();
    let mut c = fairmq_shm::ShmConfig::new("observer", &s.name);
    c.segment_size = 20_000_000;
    let observer = fairmq_shm::Transport::new(&c).unwrap();
    observer.flush();
    let used0 = observer.segment_stats().used;
    let referenced = |t: &fairmq_shm::Transport| {
        fairmq_shm::testing::segment(t).used_blocks().unwrap().iter().filter(|&&(_, _, _, count)| count >= 1).count()
    };
    let referenced0 = referenced(&observer);
    let src = spawn(
        Source { n: 5, sent: 0, end_on_every_sub_channel: true, skip: None },
        config(&format!(
            "{},linger=0",
            args("src", "shmem", &s, &format!("name=data,type=push,method=connect,address={}", s.ipc("nobody")))
        )),
    );
    src.to_ready();
    src.go(Transition::Run, State::Running);
    wait_ready(&src);
    src.ready_to_exit();
    assert!(src.join());
    observer.flush();
    // The 6 sent messages (5 + end) are nobody's now: their blocks stay allocated, and so does
    // the lane (see `--shm-lanes`) their records went into, whose offer was discarded with them.
    assert!(observer.segment_stats().used > used0, "the blocks of the discarded metadata stay");
    assert_eq!(referenced(&observer) - referenced0, 6 + 1, "exactly the 6 blocks and the lane, still referenced");
    drop(observer);
    assert!(s.objects().is_empty(), "the last transport removed the session, and the blocks with it");
}

/// The guide's multi-sender Sink (G24): multipart with a 4-byte header (stopFlag), size check,
/// counting end messages up to num-senders; and a one-part end message (G30).
struct GuideSink {
    num_senders: i32,
    ended: i32,
    received: Arc<AtomicU64>,
    /// The PostRun log line.
    logged: Arc<Mutex<Option<String>>>,
}

impl Device for GuideSink {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        ctx.on_data_parts("data");
        Ok(())
    }
    fn handle_parts(&mut self, _: &Context, _: &str, parts: &mut Parts, _: usize) -> HookResult<bool> {
        if parts.is_empty() || parts[0].size() != 4 {
            return Err("unexpected message format".into());
        }
        if i32::from_le_bytes(parts[0].data().try_into()?) == 1 {
            self.ended += 1;
            return Ok(self.ended < self.num_senders);
        }
        self.received.fetch_add(1, Ordering::SeqCst);
        Ok(true)
    }
    fn post_run(&mut self, _: &Context) -> HookResult {
        let line = format!("Received {} messages!", self.received.load(Ordering::SeqCst));
        log::info!("{line}");
        *self.logged.lock() = Some(line);
        Ok(())
    }
}

#[test]
fn g24_g30_the_guides_sink_counts_end_messages_and_accepts_a_one_part_end() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let a = s.ipc("a");
        let received = Arc::new(AtomicU64::new(0));
        let logged = Arc::new(Mutex::new(None));
        let k = spawn(
            GuideSink { num_senders: 2, ended: 0, received: received.clone(), logged: logged.clone() },
            config(&args("sink", tr, &s, &format!("name=data,type=pull,method=bind,address={a}"))),
        );
        let sender = |id: &str, n: u32| {
            let mut left = n;
            spawn(
                Hooks {
                    conditional_run: Some(Box::new(move |ctx| {
                        let ch = ctx.channel("data", 0)?;
                        if left == 0 {
                            // G30: the end message is a one-part multipart (header only).
                            let mut end = vec![ch.new_simple_message(&1i32.to_le_bytes())?];
                            ch.send_parts(&mut end)?;
                            return Ok(false);
                        }
                        let mut p = vec![ch.new_simple_message(&0i32.to_le_bytes())?, ch.new_message_with_size(1000)?];
                        ch.send_parts(&mut p)?;
                        left -= 1;
                        Ok(true)
                    })),
                    ..Hooks::default()
                },
                config(&args(id, tr, &s, &format!("name=data,type=push,method=connect,address={a}"))),
            )
        };
        let (x, y) = (sender("x", 30), sender("y", 12));
        start_all(&[&k, &x, &y]);
        wait_ready(&k);
        assert_eq!(received.load(Ordering::SeqCst), 42, "{tr}");
        assert_eq!(logged.lock().as_deref(), Some("Received 42 messages!"), "{tr}: the PostRun count log");
        end_all(vec![x, y, k]);

        // The size check: a first part that is no 4-byte header takes the sink to ERROR.
        let s = Session::new();
        let a = s.ipc("a");
        let k = spawn(
            GuideSink { num_senders: 1, ended: 0, received: Arc::new(AtomicU64::new(0)), logged: Default::default() },
            config(&args("sink", tr, &s, &format!("name=data,type=pull,method=bind,address={a}"))),
        );
        let bad = spawn(
            Hooks {
                conditional_run: Some(Box::new(|ctx| {
                    let ch = ctx.channel("data", 0)?;
                    ch.send_parts(&mut vec![ch.new_simple_message(b"abc")?])?;
                    Ok(false)
                })),
                ..Hooks::default()
            },
            config(&args("bad", tr, &s, &format!("name=data,type=push,method=connect,address={a}"))),
        );
        start_all(&[&k, &bad]);
        assert!(k.h.wait_for_state(State::Ready, T).is_err(), "{tr}: the sink went to ERROR");
        assert!(!k.join(), "{tr}: its state loop ended in ERROR, not EXITING");
        end_all(vec![bad]);
    }
}

/// G41: the channel counters count successful transfers only (a multipart as one message), from
/// the socket's creation across runs, and are readable until RESETTING DEVICE.
#[test]
fn g41_channel_counters_count_successful_transfers_across_runs() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let a = s.ipc("a");
        let counts = Arc::new(Mutex::new(Vec::new()));
        let (c1, c2) = (counts.clone(), counts.clone());
        let left = Arc::new(AtomicU64::new(0));
        let (l1, l2) = (left.clone(), left.clone());
        let pre_run: Hook = Some(Box::new(move |ctx| {
            l1.store(25, Ordering::SeqCst);
            // A transfer that fails (nobody takes it) counts nothing.
            let mut m = ctx.new_simple_message(b"never sent")?;
            assert_eq!(ctx.send_timeout(&mut m, "nobody", 0, 0).map_err(|e| e.code()), Err(TransferCode::Timeout));
            Ok(())
        }));
        let conditional_run: Hook<bool> = Some(Box::new(move |ctx| {
            let ch = ctx.channel("data", 0)?;
            let n = l2.fetch_sub(1, Ordering::SeqCst);
            if n % 5 == 0 {
                let mut p = vec![ch.new_message_with_size(10)?, ch.new_message_with_size(20)?];
                ch.send_parts(&mut p)?;
            } else {
                ch.send(&mut ch.new_message_with_size(100)?)?;
            }
            Ok(n > 1)
        }));
        let reset_task: Hook = Some(Box::new(move |ctx| {
            for name in ["data", "nobody"] {
                let c = ctx.channel(name, 0)?.counters();
                c1.lock().push((name, c.messages_tx, c.bytes_tx));
            }
            Ok(())
        }));
        let src = Hooks { pre_run, conditional_run, reset_task, ..Hooks::default() };
        let run: Hook = Some(Box::new(move |ctx| {
            let ch = ctx.channel("data", 0)?;
            for _ in 0..25 {
                let mut p = Vec::new();
                ch.receive_parts(&mut p)?;
            }
            Ok(())
        }));
        let sink_reset_task: Hook = Some(Box::new(move |ctx| {
            let c = ctx.channel("data", 0)?.counters();
            c2.lock().push(("rx", c.messages_rx, c.bytes_rx));
            Ok(())
        }));
        let snk = Hooks { run, reset_task: sink_reset_task, ..Hooks::default() };
        let k = spawn(snk, config(&args("sink", tr, &s, &format!("name=data,type=pull,method=bind,address={a}"))));
        let chans = format!(
            "name=data,type=push,method=connect,address={a} name=nobody,type=push,method=bind,address={}",
            s.ipc("nobody")
        );
        let src = spawn(src, config(&args("src", tr, &s, &chans)));
        start_all(&[&k, &src]);
        for run in 0..2 {
            if run > 0 {
                k.go(Transition::Run, State::Running);
                src.go(Transition::Run, State::Running);
            }
            wait_ready(&src);
            wait_ready(&k);
        }
        src.go(Transition::ResetTask, State::DeviceReady);
        k.go(Transition::ResetTask, State::DeviceReady);
        let c = counts.lock().clone();
        // Per run 20 single messages of 100 B and 5 multiparts of 30 B: 25 messages, 2150 bytes.
        assert_eq!(c, [("data", 50, 4300), ("nobody", 0, 0), ("rx", 50, 4300)], "{tr}");
        for d in [src, k] {
            d.go(Transition::ResetDevice, State::Idle);
            d.go(Transition::End, State::Exiting);
            assert!(d.join());
        }
    }
}

#[test]
fn g10_g15_linger_defaults_to_500_and_is_set_from_channel_config_and_json() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let json = format!(
            r#"{{ "fairMQOptions": {{ "devices": [ {{ "id": "j", "channels": [ {{ "name": "data", "type": "push", "method": "bind", "address": "{}", "linger": 2000 }} ] }} ] }} }}"#,
            s.ipc("j")
        );
        let path = s.dir.path().join("l.json");
        std::fs::write(&path, json).unwrap();
        let lingers = Arc::new(Mutex::new(Vec::new()));
        for extra in [
            format!("--channel-config name=data,type=push,method=bind,address={}", s.ipc("d")),
            format!("--channel-config name=data,type=push,method=bind,address={},linger=1000", s.ipc("c")),
            format!("--mq-config {}", path.display()),
        ] {
            let l = lingers.clone();
            let d = spawn(
                Hooks {
                    init_task: Some(Box::new(move |ctx| {
                        // For shmem this is the metadata socket's option.
                        l.lock().push(ctx.channel("data", 0)?.socket().options()?.linger);
                        Ok(())
                    })),
                    ..Hooks::default()
                },
                config(&format!(
                    "--id j --severity warn --transport {tr} --session {} --shm-segment-size 20000000 {extra}",
                    s.name
                )),
            );
            d.to_ready();
            d.ready_to_exit();
            assert!(d.join());
        }
        assert_eq!(lingers.lock().clone(), [500, 1000, 2000], "{tr}");
    }
}

#[test]
fn g43_g15_a_static_source_that_resets_at_once_delivers_with_enough_linger() {
    for tr in TRANSPORTS {
        for (linger, expected) in [(0, 0u64), (3000, 3)] {
            let s = Session::new();
            let a = s.ipc("late");
            let src = spawn(
                Source { n: 3, sent: 0, end_on_every_sub_channel: true, skip: None },
                config(&format!(
                    "{},linger={linger}",
                    args("src", tr, &s, &format!("name=data,type=push,method=connect,address={a}"))
                )),
            );
            src.to_ready();
            src.go(Transition::Run, State::Running);
            wait_ready(&src);
            // As --control static does: reset at once, while the sink is not there yet.
            src.go(Transition::ResetTask, State::DeviceReady);
            assert!(src.h.change_state(Transition::ResetDevice));
            if linger == 0 {
                // Without linger the reset ends at once, before the sink exists.
                assert!(src.h.wait_for_state(State::Idle, T).unwrap());
            } else {
                // The sink appears while the reset lingers with the messages queued.
                wait_until(&format!("{tr}: RESETTING DEVICE"), || src.h.current_state() == State::ResettingDevice);
            }
            let (k, seen) = sink(&s, tr, "sink", &a, 1);
            k.to_ready();
            k.go(Transition::Run, State::Running);
            if linger > 0 {
                assert!(src.h.wait_for_state(State::Idle, T).unwrap());
            }
            if expected > 0 {
                wait_ready(&k);
            } else {
                // Nothing arrives within 500 ms: delivered, the end message would end the sink's run.
                assert!(
                    !k.h.wait_for_state(State::Ready, Some(Duration::from_millis(500))).unwrap(),
                    "{tr} linger 0: the sink got the end message"
                );
                k.go(Transition::Stop, State::Ready);
            }
            assert_eq!(
                seen.data.load(Ordering::SeqCst),
                expected,
                "{tr} linger {linger}: G43 fewer messages without linger"
            );
            src.go(Transition::End, State::Exiting);
            k.ready_to_exit();
            assert!(src.join() && k.join());
        }
    }
}

#[test]
fn g33_g49_reset_task_receive_without_timeout_blocks_with_a_timeout_it_ends() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let a = s.ipc("rt");
        for timeout in [-1, 300] {
            let got = Arc::new(Mutex::new(Vec::new()));
            let g = got.clone();
            let d = spawn(
                Hooks {
                    reset_task: Some(Box::new(move |ctx| {
                        let mut p = Vec::new();
                        let r = ctx.channel("data", 0)?.receive_parts_timeout(&mut p, timeout);
                        g.lock().push((r.is_ok(), p.len()));
                        Ok(())
                    })),
                    ..Hooks::default()
                },
                config(&args("rt", tr, &s, &format!("name=data,type=pull,method=bind,address={a}"))),
            );
            d.to_ready();
            assert!(d.h.change_state(Transition::ResetTask));
            let left = d.h.wait_for_state(State::DeviceReady, Some(Duration::from_millis(1500))).unwrap();
            if timeout < 0 {
                assert!(!left, "{tr}: G49 stuck in RESETTING TASK");
                // A multipart sender's message ends the wait, received into Parts (G33).
                let helper = spawn(
                    Hooks {
                        run: Some(Box::new(|ctx| {
                            let ch = ctx.channel("data", 0)?;
                            let mut p = vec![ch.new_message_with_size(1)?, ch.new_message_with_size(2)?];
                            ch.send_parts(&mut p)?;
                            Ok(())
                        })),
                        ..Hooks::default()
                    },
                    config(&args("helper", tr, &s, &format!("name=data,type=push,method=connect,address={a}"))),
                );
                helper.to_ready();
                helper.go(Transition::Run, State::Running);
                assert!(d.h.wait_for_state(State::DeviceReady, T).unwrap());
                helper.ready_to_exit();
                assert!(helper.join());
                assert_eq!(got.lock().clone(), [(true, 2)], "{tr}");
            } else {
                assert!(left, "{tr}: with a timeout RESETTING TASK ends by itself");
                assert_eq!(got.lock().clone(), [(false, 0)]);
            }
            d.go(Transition::ResetDevice, State::Idle);
            d.go(Transition::End, State::Exiting);
            assert!(d.join());
        }
    }
}
