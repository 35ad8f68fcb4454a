//! The examples as end-to-end tests, ported from FairMQ's `test-ex-*.sh` scripts: real processes,
//! `--control static`, a unique session, ipc addresses in a temporary directory, both transports.

mod common;
use common::process::{start, Proc};
use common::*;
use nix::sys::signal::Signal;
use std::path::PathBuf;

/// An example binary: `cargo test` (the README's command) builds the examples next to the test
/// binaries; when only this test target is selected, run `cargo build --examples` first.
fn example(name: &str) -> String {
    let exe = std::env::current_exe().unwrap();
    let dir: PathBuf = exe.parent().unwrap().parent().unwrap().join("examples").join(name);
    assert!(dir.exists(), "example {name} not built at {}", dir.display());
    dir.display().to_string()
}

struct Topology<'a> {
    s: &'a Session,
    transport: &'a str,
}

impl Topology<'_> {
    /// Starts `exe role --id id` with the test scripts' common options plus `extra`.
    fn device(&self, exe: &str, role: Option<&str>, id: &str, extra: &[String]) -> Proc {
        let mut args: Vec<String> = role.into_iter().map(String::from).collect();
        for a in [
            "--id",
            id,
            "--control",
            "static",
            "--color",
            "false",
            "--severity",
            "info",
            "--transport",
            self.transport,
            "--session",
            &self.s.name,
            "--shm-segment-size",
            "100000000",
        ] {
            args.push(a.to_owned());
        }
        args.extend(extra.iter().cloned());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        start(exe, &refs, None)
    }

    /// `device` in `role` with one channel (`spec`) and `flags`.
    fn role(&self, exe: &str, role: &str, id: &str, spec: String, flags: &[&str]) -> Proc {
        self.device(exe, Some(role), id, &with(chan(spec), flags))
    }

    /// `role` with one channel named `data` of `kind` and `method` at `addr`, with `extra` channel
    /// properties (",rateLogging=0", ...), and `flags`.
    #[allow(clippy::too_many_arguments)]
    fn data(
        &self,
        exe: &str,
        role: &str,
        id: &str,
        (kind, method): (&str, &str),
        addr: &str,
        extra: &str,
        flags: &[&str],
    ) -> Proc {
        self.role(exe, role, id, format!("name=data,type={kind},method={method},address={addr}{extra}"), flags)
    }

    fn ipc(&self, chan: &str) -> String {
        self.s.ipc(&format!("{chan}_{}", self.transport))
    }
}

fn ok(p: &mut Proc) {
    let status = p.wait();
    assert_eq!(status.code(), Some(0), "{status:?}; output:\n{}", p.seen.join("\n"));
}

fn chan(spec: String) -> Vec<String> {
    vec!["--channel-config".to_owned(), spec]
}

fn with(mut a: Vec<String>, more: &[&str]) -> Vec<String> {
    a.extend(more.iter().map(|s| (*s).to_owned()));
    a
}

/// A program of several devices refuses a missing or unknown role with its usage (exit code 1).
#[test]
fn an_example_without_a_known_role_prints_its_usage() {
    let exe = example("ex-copypush");
    for args in [&[][..], &["nosuchrole", "--id", "x"][..]] {
        let out = std::process::Command::new(&exe).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("usage: ex-copypush sampler|sink <device options>"), "{args:?}: {err}");
    }
}

/// G42: the 1-1 test pattern (`--max-iterations 1 --control static`); a lost message would leave
/// the sink in RUNNING and the test would fail by its timeout.
#[test]
fn g42_example_1_1() {
    let exe = example("ex-1-1");
    for tr in TRANSPORTS {
        let s = Session::new();
        let t = Topology { s: &s, transport: tr };
        let addr = t.ipc("data");
        let mut sink =
            t.data(&exe, "sink", "sink1", ("pull", "connect"), &addr, ",rateLogging=0", &["--max-iterations", "1"]);
        let mut sampler = t.data(
            &exe,
            "sampler",
            "sampler1",
            ("push", "bind"),
            &addr,
            ",rateLogging=0",
            &["--max-iterations", "1", "--rate", "1"],
        );
        ok(&mut sampler);
        ok(&mut sink);
        assert!(sink.saw("Received: \"Hello\""), "{tr}");
    }
}

#[test]
fn example_1_n_1() {
    let exe = example("ex-1-n-1");
    for tr in TRANSPORTS {
        let s = Session::new();
        let t = Topology { s: &s, transport: tr };
        let (d1, d2) = (t.ipc("data1"), t.ipc("data2"));
        let mut sampler = t.role(
            &exe,
            "sampler",
            "sampler1",
            format!("name=data1,type=push,method=bind,address={d1},rateLogging=0"),
            &["--max-iterations", "2"],
        );
        let procs: Vec<Proc> = ["processor1", "processor2"]
            .iter()
            .map(|id| {
                t.device(
                    &exe,
                    Some("processor"),
                    id,
                    &[
                        "--channel-config".into(),
                        format!("name=data1,type=pull,method=connect,address={d1},rateLogging=0"),
                        format!("name=data2,type=push,method=connect,address={d2},rateLogging=0"),
                    ],
                )
            })
            .collect();
        let mut sink = t.role(
            &exe,
            "sink",
            "sink1",
            format!("name=data2,type=pull,method=bind,address={d2},rateLogging=0"),
            &["--max-iterations", "2"],
        );
        // Sources and sinks end by themselves; then the processors get SIGINT (G27's order).
        ok(&mut sampler);
        ok(&mut sink);
        for mut p in procs {
            p.signal(Signal::SIGINT as i32);
            ok(&mut p);
        }
        assert!(sink.saw("(modified by processor"), "{tr}");
    }
}

#[test]
fn example_1_n_1_with_the_json_configuration() {
    let exe = example("ex-1-n-1");
    for tr in TRANSPORTS {
        let s = Session::new();
        // FairMQ's JSON as shipped, with the tcp ports moved out of the way of parallel tests.
        let json = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ex-1-n-1.json")).unwrap();
        let (p1, p2) = (free_port(), free_port());
        let json = json.replace("5555", &p1.to_string()).replace("5556", &p2.to_string());
        let path = s.dir.path().join("ex-1-n-1.json");
        std::fs::write(&path, json).unwrap();
        let t = Topology { s: &s, transport: tr };
        let cfg = ["--mq-config".to_owned(), path.display().to_string()];
        let mut sampler = t.device(&exe, Some("sampler"), "sampler1", &with(cfg.to_vec(), &["--max-iterations", "2"]));
        let mut proc1 =
            t.device(&exe, Some("processor"), "processor1", &with(cfg.to_vec(), &["--config-key", "processor"]));
        let mut sink = t.device(&exe, Some("sink"), "sink1", &with(cfg.to_vec(), &["--max-iterations", "2"]));
        ok(&mut sampler);
        ok(&mut sink);
        proc1.signal(Signal::SIGINT as i32);
        ok(&mut proc1);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn example_multipart_g19() {
    let exe = example("ex-multipart");
    for tr in TRANSPORTS {
        let s = Session::new();
        let t = Topology { s: &s, transport: tr };
        let addr = t.ipc("data");
        let mut sink =
            t.device(&exe, Some("sink"), "sink1", &chan(format!("name=data,type=pair,method=bind,address={addr}")));
        let mut sampler =
            t.data(&exe, "sampler", "sampler1", ("pair", "connect"), &addr, ",linger=1000", &["--max-iterations", "1"]);
        ok(&mut sampler);
        ok(&mut sink);
        assert!(sink.saw("stopFlag is 1, going IDLE"), "{tr}");
    }
}

#[test]
fn example_req_rep() {
    let exe = example("ex-req-rep");
    for tr in TRANSPORTS {
        let s = Session::new();
        let t = Topology { s: &s, transport: tr };
        let addr = t.ipc("data");
        let mut server = t.data(&exe, "server", "server", ("rep", "bind"), &addr, "", &["--max-iterations", "1"]);
        let mut client = t.data(&exe, "client", "client", ("req", "connect"), &addr, "", &["--max-iterations", "1"]);
        ok(&mut client);
        ok(&mut server);
        assert!(client.saw("Received reply from server: \"Thank you for the \"Hello\"!\""), "{tr}");
    }
}

#[test]
fn example_region() {
    let exe = example("ex-region");
    for tr in TRANSPORTS {
        let s = Session::new();
        let t = Topology { s: &s, transport: tr };
        let addr = t.ipc("data");
        let mut sampler = t.data(
            &exe,
            "sampler",
            "sampler1",
            ("push", "bind"),
            &addr,
            "",
            &["--max-iterations", "1", "--msg-size", "1000000", "--region-linger", "500"],
        );
        let mut sink = t.data(&exe, "sink", "sink1", ("pull", "connect"), &addr, "", &["--max-iterations", "1"]);
        ok(&mut sink);
        ok(&mut sampler);
        assert!(
            sink.saw("Received 1 messages, 64 parts, 64000000 bytes, every byte checked."),
            "{tr}: {:?}",
            sink.seen
        );
        assert!(sampler.saw("All acknowledgements received."), "{tr}: {:?}", sampler.seen);
        assert!(sampler.saw("Region event: managed: false, id: "), "{tr}: {:?}", sampler.seen);
        let left = s.objects();
        assert!(left.is_empty(), "{tr}: the region and the session are gone: {left:?}");
    }
}

#[test]
fn example_copypush() {
    let exe = example("ex-copypush");
    for tr in TRANSPORTS {
        let s = Session::new();
        let t = Topology { s: &s, transport: tr };
        let (a1, a2) = (t.ipc("data_1"), t.ipc("data_2"));
        let mut sampler = t.data(
            &exe,
            "sampler",
            "sampler1",
            ("push", "bind"),
            &a1,
            &format!(",address={a2}"),
            &["--max-iterations", "1"],
        );
        let mut sinks: Vec<Proc> = [("sink1", &a1), ("sink2", &a2)]
            .iter()
            .map(|(id, a)| t.data(&exe, "sink", id, ("pull", "connect"), a, "", &["--max-iterations", "1"]))
            .collect();
        ok(&mut sampler);
        for s in &mut sinks {
            ok(s);
            assert!(s.saw("Received message: \"0\""), "{tr}");
        }
    }
}

#[test]
fn bsampler_same_msg_and_memset_send_exact_counts_and_the_sink_writes_a_file() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let t = Topology { s: &s, transport: tr };
        let addr = t.ipc("data");
        let out = s.dir.path().join(format!("sink-{tr}.bin"));
        let out_s = out.display().to_string();
        let mut sink = t.device(
            env!("CARGO_BIN_EXE_fairmq-sink"),
            None,
            "sink1",
            &with(
                chan(format!("name=data,type=pull,method=bind,address={addr},rateLogging=0")),
                // FairMQ's counting: max-iterations 9 means 10 messages, on both sides.
                &["--max-iterations", "9", "--out-filename", &out_s, "--max-file-size", "0"],
            ),
        );
        let mut sampler = t.device(
            env!("CARGO_BIN_EXE_fairmq-bsampler"),
            None,
            "bsampler1",
            &with(
                chan(format!("name=data,type=push,method=connect,address={addr},rateLogging=0,linger=2000")),
                &["--max-iterations", "9", "--msg-size", "4096", "--same-msg", "true", "--memset", "true"],
            ),
        );
        ok(&mut sampler);
        ok(&mut sink);
        assert!(sampler.saw("Done 9 iterations"), "{tr}: {:?}", sampler.seen);
        // FairMQ's counts: 10 sent and received (the bytes say so), 9 reported by each.
        assert!(sink.saw("Received 9 messages") && sink.saw("Received 40960 bytes"), "{tr}: {:?}", sink.seen);
        let written = std::fs::read(&out).unwrap();
        assert_eq!(written.len(), 40960, "{tr}: every byte in the file");
        assert!(written.iter().all(|&b| b == 0), "{tr}: --memset zeroed them");
    }
}

#[test]
fn example_builtin_devices() {
    for (multipart, parts) in [("false", "1"), ("true", "2")] {
        for tr in TRANSPORTS {
            let s = Session::new();
            let t = Topology { s: &s, transport: tr };
            let bin = |n: &str| match n {
                "bsampler" => env!("CARGO_BIN_EXE_fairmq-bsampler"),
                "splitter" => env!("CARGO_BIN_EXE_fairmq-splitter"),
                "proxy" => env!("CARGO_BIN_EXE_fairmq-proxy"),
                "merger" => env!("CARGO_BIN_EXE_fairmq-merger"),
                "multiplier" => env!("CARGO_BIN_EXE_fairmq-multiplier"),
                _ => env!("CARGO_BIN_EXE_fairmq-sink"),
            };
            let q = ",sndBufSize=50,rcvBufSize=50,rateLogging=0";
            let a = |n: &str| t.ipc(n);
            let mp = ["--multipart", multipart];
            // A device between two channels: its input and output specs and their names.
            let relay = |kind: &str, id: &str, input: String, output: String, (i, o): (&str, &str)| {
                let flags = [mp[0], mp[1], "--in-channel", i, "--out-channel", o];
                t.device(bin(kind), None, id, &with(vec!["--channel-config".into(), input, output], &flags))
            };
            let mut sink = t.device(
                bin("sink"),
                None,
                "sink1",
                &with(
                    chan(format!("name=data5,type=pull,method=bind,address={}{q}", a("data5"))),
                    &[mp[0], mp[1], "--max-iterations", "2", "--in-channel", "data5"],
                ),
            );
            let mut others = vec![
                t.device(
                    bin("bsampler"),
                    None,
                    "bsampler1",
                    &with(
                        chan(format!("name=data1,type=push,method=bind,address={}{q}", a("data1"))),
                        &[
                            mp[0],
                            mp[1],
                            "--num-parts",
                            parts,
                            "--msg-size",
                            "100000",
                            "--msg-rate",
                            "1",
                            "--max-iterations",
                            "0",
                            "--out-channel",
                            "data1",
                        ],
                    ),
                ),
                relay(
                    "splitter",
                    "splitter",
                    format!("name=data1,type=pull,method=connect,address={}{q}", a("data1")),
                    format!("name=data2,type=push,method=bind,address={},address={}{q}", a("data2_1"), a("data2_2")),
                    ("data1", "data2"),
                ),
                relay(
                    "proxy",
                    "proxy1",
                    format!("name=data2,type=pull,method=connect,address={}{q}", a("data2_1")),
                    format!("name=data3,type=push,method=connect,address={}{q}", a("data3_1")),
                    ("data2", "data3"),
                ),
                relay(
                    "proxy",
                    "proxy2",
                    format!("name=data2,type=pull,method=connect,address={}{q}", a("data2_2")),
                    format!("name=data3,type=push,method=connect,address={}{q}", a("data3_2")),
                    ("data2", "data3"),
                ),
                relay(
                    "merger",
                    "merger",
                    format!("name=data3,type=pull,method=bind,address={},address={}{q}", a("data3_1"), a("data3_2")),
                    format!("name=data4,type=push,method=connect,address={}{q}", a("data4")),
                    ("data3", "data4"),
                ),
                relay(
                    "multiplier",
                    "multiplier",
                    format!("name=data4,type=pull,method=bind,address={}{q}", a("data4")),
                    format!("name=data5,type=push,method=connect,address={},address={}{q}", a("data5"), a("data5")),
                    ("data4", "data5"),
                ),
            ];
            ok(&mut sink);
            assert!(
                sink.saw("Received 2 messages"),
                "{tr} multipart={multipart}: FairMQ's count (3 received, 2 reported)"
            );
            for p in &mut others {
                p.signal(Signal::SIGINT as i32);
                ok(p);
            }
        }
    }
}

#[test]
fn example_multiple_channels() {
    let exe = example("ex-multiple-channels");
    for tr in TRANSPORTS {
        let s = Session::new();
        let t = Topology { s: &s, transport: tr };
        let (data, bcast) = (t.ipc("data"), t.ipc("broadcast"));
        let mut sink = t.device(
            &exe,
            Some("sink"),
            "sink1",
            &with(
                vec![
                    "--channel-config".into(),
                    format!("name=data,type=pull,method=connect,address={data},rateLogging=0"),
                    format!("name=broadcast,type=sub,method=connect,address={bcast},rateLogging=0"),
                ],
                &["--max-iterations", "1"],
            ),
        );
        let mut sampler = t.device(
            &exe,
            Some("sampler"),
            "sampler1",
            &with(
                vec![
                    "--channel-config".into(),
                    format!("name=data,type=push,method=bind,address={data},rateLogging=0"),
                    format!("name=broadcast,type=sub,method=connect,address={bcast},rateLogging=0"),
                ],
                &["--max-iterations", "1"],
            ),
        );
        let mut broadcaster = t.device(
            &exe,
            Some("broadcaster"),
            "broadcaster",
            &chan(format!("name=broadcast,type=pub,method=bind,address={bcast},rateLogging=0")),
        );
        ok(&mut sampler);
        ok(&mut sink);
        broadcaster.signal(Signal::SIGINT as i32);
        ok(&mut broadcaster);
    }
}

#[test]
fn example_multiple_transports() {
    let exe = example("ex-multiple-transports");
    let s = Session::new();
    let t = Topology { s: &s, transport: "shmem" };
    let (d1, d2, ack) = (t.ipc("data1"), t.ipc("data2"), t.ipc("ack"));
    let mut sampler1 = t.device(
        &exe,
        Some("sampler1"),
        "sampler1",
        &with(
            vec![
                "--channel-config".into(),
                format!("name=data1,type=push,method=bind,address={d1},rateLogging=0"),
                format!("name=ack,type=sub,method=bind,address={ack},transport=zeromq,rateLogging=0"),
            ],
            &["--max-iterations", "1"],
        ),
    );
    let z = Topology { s: &s, transport: "zeromq" };
    let mut sampler2 = z.device(
        &exe,
        Some("sampler2"),
        "sampler2",
        &with(chan(format!("name=data2,type=push,method=bind,address={d2},rateLogging=0")), &["--max-iterations", "1"]),
    );
    let mut sink = t.device(
        &exe,
        Some("sink"),
        "sink1",
        &with(
            vec![
                "--channel-config".into(),
                format!("name=data1,type=pull,method=connect,address={d1},rateLogging=0"),
                format!("name=data2,type=pull,method=connect,address={d2},transport=zeromq,rateLogging=0"),
                format!("name=ack,type=pub,method=connect,address={ack},transport=zeromq,rateLogging=0"),
            ],
            &["--max-iterations", "1"],
        ),
    );
    ok(&mut sink);
    ok(&mut sampler2);
    ok(&mut sampler1);
    assert!(sampler1.saw("Acknowledged"));
}

#[test]
fn example_custom_controller() {
    let mut d = start(&example("ex-custom-controller"), &["--color", "false"], None);
    ok(&mut d);
    assert!(d.saw("READY ---> RUNNING") && d.saw("IDLE ---> EXITING"));
}

#[test]
fn example_n_m() {
    let exe = example("ex-n-m");
    for tr in TRANSPORTS {
        let s = Session::new();
        let t = Topology { s: &s, transport: tr };
        let (sync, r0, r1) = (t.ipc("sync"), t.ipc("r0"), t.ipc("r1"));
        let mut receivers: Vec<Proc> = [("receiver0", &r0), ("receiver1", &r1)]
            .iter()
            .map(|(id, a)| {
                t.data(
                    &exe,
                    "receiver",
                    id,
                    ("pull", "bind"),
                    a,
                    ",rateLogging=0",
                    &["--num-senders", "2", "--max-timeframes", "5"],
                )
            })
            .collect();
        let mut senders: Vec<Proc> = (0..2)
            .map(|i| {
                t.device(
                    &exe,
                    Some("sender"),
                    &format!("sender{i}"),
                    &with(
                        vec![
                            "--channel-config".into(),
                            format!("name=sync,type=sub,method=connect,address={sync},rateLogging=0"),
                            format!("name=data,type=push,method=connect,address={r0},address={r1},rateLogging=0"),
                        ],
                        &["--sender-index", &i.to_string(), "--num-receivers", "2"],
                    ),
                )
            })
            .collect();
        let mut synchronizer = t.role(
            &exe,
            "synchronizer",
            "sync",
            format!("name=sync,type=pub,method=bind,address={sync},rateLogging=0"),
            &["--rate", "100"],
        );
        for r in &mut receivers {
            ok(r);
            assert!(r.saw("Reached configured maximum number of timeframes (5)"), "{tr}");
        }
        synchronizer.signal(Signal::SIGINT as i32);
        ok(&mut synchronizer);
        for p in &mut senders {
            p.signal(Signal::SIGINT as i32);
            ok(p);
        }
    }
}

/// G30: a one-part message (here the 1-1 sampler's) makes the multipart example's sink, which
/// expects seven parts, fail with an error and exit code 1, not hang.
#[test]
fn g30_the_multipart_sink_fails_on_a_one_part_message() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let t = Topology { s: &s, transport: tr };
        let addr = t.ipc("data");
        let mut sink = t.device(
            &example("ex-multipart"),
            Some("sink"),
            "sink1",
            &chan(format!("name=data,type=pull,method=bind,address={addr},rateLogging=0")),
        );
        let mut sampler = t.data(
            &example("ex-1-1"),
            "sampler",
            "sampler1",
            ("push", "connect"),
            &addr,
            ",rateLogging=0,linger=2000",
            &["--max-iterations", "1"],
        );
        ok(&mut sampler);
        assert_eq!(sink.wait().code(), Some(1), "{tr}: {:?}", sink.seen);
        assert!(sink.saw("Number of received parts != 7") && sink.saw("---> ERROR"), "{tr}: {:?}", sink.seen);
    }
}

/// The quickstart's devices as separate processes, each counting what it moved (G39). A Ctrl-C in
/// every terminal at once (G27, G48) loses the messages in flight; signalling the source first,
/// so the others end after its end message, loses none.
#[test]
fn g27_g39_g48_signalling_every_device_at_once_loses_messages_the_source_first_loses_none() {
    let exe = example("quickstart");
    for tr in TRANSPORTS {
        for all_at_once in [true, false] {
            let s = Session::new();
            let (a, b) = (s.ipc("data1"), s.ipc("data2"));
            let dev = |role: &str, id: &str, chans: &[String]| {
                let mut args: Vec<String> = ["--role", role, "--id", id, "--control", "static", "--color", "false"]
                    .iter()
                    .map(|x| (*x).to_owned())
                    .collect();
                for x in ["--severity", "warn", "--transport", tr, "--session", &s.name, "--messages", "0"] {
                    args.push(x.to_owned());
                }
                args.extend(["--msg-size".into(), "256".into(), "--shm-segment-size".into(), "100000000".into()]);
                args.push("--channel-config".into());
                args.extend(chans.iter().cloned());
                let refs: Vec<&str> = args.iter().map(String::as_str).collect();
                start(&exe, &refs, None)
            };
            let mut sink =
                dev("sink", "sink1", &[format!("name=data2,type=pull,method=bind,address={b},rateLogging=0")]);
            let mut processor = dev(
                "processor",
                "processor1",
                &[
                    format!("name=data1,type=pull,method=bind,address={a},rateLogging=0"),
                    format!("name=data2,type=push,method=connect,address={b},rateLogging=0"),
                ],
            );
            let mut sampler =
                dev("sampler", "sampler1", &[format!("name=data1,type=push,method=connect,address={a},rateLogging=0")]);
            sink.expect("sink: data flows");
            // Deliberate: the queues between them fill, so that messages are in flight when signalled.
            std::thread::sleep(std::time::Duration::from_millis(300));
            if all_at_once {
                // Ctrl-C everywhere reaches the devices in no particular order; the sink handling it
                // first is the case that always shows the loss, so it is made certain here.
                sink.signal(Signal::SIGINT as i32);
                sink.expect("sink: received ");
                for p in [&processor, &sampler] {
                    p.signal(Signal::SIGINT as i32);
                }
            } else {
                sampler.signal(Signal::SIGINT as i32);
            }
            for p in [&mut sampler, &mut processor, &mut sink] {
                p.wait();
            }
            let count = |p: &Proc, prefix: &str| -> u64 {
                let line = p
                    .seen
                    .iter()
                    .filter(|l| l.ends_with(" data messages"))
                    .find_map(|l| l.split(prefix).nth(1))
                    .unwrap_or_else(|| panic!("no '{prefix}' in {:?}", p.seen));
                line.split_whitespace().next().unwrap().parse().unwrap()
            };
            let (sent, received) = (count(&sampler, "sampler: sent "), count(&sink, "sink: received "));
            if all_at_once {
                assert!(received < sent, "{tr}: {sent} sent, {received} received: the messages in flight are lost");
                assert!(!sink.saw("0 lost"), "{tr}");
            } else {
                assert_eq!(received, sent, "{tr}: none lost");
                assert!(sink.saw(&format!("received all {sent} messages")) && sink.saw("0 lost"), "{tr}");
                for p in [&mut sampler, &mut processor, &mut sink] {
                    assert_eq!(p.wait().code(), Some(0), "{tr}: {:?}", p.seen);
                }
            }
        }
    }
}

#[test]
fn example_n_m_requires_its_options() {
    let mut d = start(&example("ex-n-m"), &["receiver", "--id", "r", "--color", "false"], None);
    assert_eq!(d.wait().code(), Some(1), "--num-senders is required");
}

#[test]
fn quickstart_runs_and_ctrl_c_stops_it_in_order_losing_nothing() {
    for tr in TRANSPORTS {
        let mut q = start(&example("quickstart"), &["2000", "256", tr], None);
        ok(&mut q);
        assert!(q.saw("received all 2000 messages") && q.saw("0 lost"), "{tr}");
    }
    let mut q = start(&example("quickstart"), &["0", "256", "shmem"], None);
    // Messages are in flight once the sink reports data (the orchestrator handles Ctrl-C by then:
    // it does so right after starting the devices).
    q.expect("sink: data flows");
    q.signal(Signal::SIGINT as i32);
    ok(&mut q);
    assert!(q.saw("stopping the sampler first") && q.saw("0 lost"));
}
