//! Channel configuration: FairMQ-format JSON and `--channel-config`, bind/connect order,
//! auto-bind write-back, and invalid configurations leading to ERROR.

mod common;
use common::*;
use fairmq::{State, Transition};
use parking_lot::Mutex;
use std::sync::Arc;

fn json_1_n_1(s: &Session) -> String {
    // The structure of FairMQ's examples/1-n-1/ex-1-n-1.json, with ipc addresses.
    let (a, b) = (s.ipc("data1"), s.ipc("data2"));
    let sock = |ty: &str, method: &str, addr: &str| {
        format!(
            r#"{{ "type": "{ty}", "method": "{method}", "address": "{addr}", "sndBufSize": 1000, "rcvBufSize": 1000, "rateLogging": 0 }}"#
        )
    };
    format!(
        r#"{{ "fairMQOptions": {{ "devices": [
            {{ "id": "sampler1", "channels": [ {{ "name": "data1", "sockets": [ {} ] }} ] }},
            {{ "key": "processor", "channels": [ {{ "name": "data1", "sockets": [ {} ] }}, {{ "name": "data2", "sockets": [ {} ] }} ] }},
            {{ "id": "sink1", "channels": [ {{ "name": "data2", "sockets": [ {} ] }} ] }}
        ] }} }}"#,
        sock("push", "bind", &a),
        sock("pull", "connect", &a),
        sock("push", "connect", &b),
        sock("pull", "bind", &b)
    )
}

fn forwarder() -> Hooks {
    Hooks {
        run: Some(Box::new(|ctx| {
            let mut m = ctx.channel("data1", 0)?.new_message();
            if ctx.receive(&mut m, "data1", 0).is_ok() {
                ctx.send(&mut m, "data2", 0)?;
            }
            Ok(())
        })),
        ..Hooks::default()
    }
}

#[test]
fn fairmq_json_topology_loads_and_runs() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let path = s.dir.path().join("ex-1-n-1.json");
        std::fs::write(&path, json_1_n_1(&s)).unwrap();
        let base = format!(
            "--severity warn --transport {tr} --session {} --shm-segment-size 20000000 --mq-config {}",
            s.name,
            path.display()
        );
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = got.clone();
        let sink = spawn(
            Hooks {
                run: Some(Box::new(move |ctx| {
                    let mut m = ctx.channel("data2", 0)?.new_message();
                    ctx.receive(&mut m, "data2", 0)?;
                    g.lock().push(m.data().to_vec());
                    Ok(())
                })),
                ..Hooks::default()
            },
            config(&format!("--id sink1 {base}")),
        );
        let proc1 = spawn(forwarder(), config(&format!("--id processor1 --config-key processor {base}")));
        let sampler = spawn(
            Hooks {
                run: Some(Box::new(|ctx| {
                    ctx.send(&mut ctx.new_simple_message(b"Hello")?, "data1", 0)?;
                    Ok(())
                })),
                ..Hooks::default()
            },
            config(&format!("--id sampler1 {base}")),
        );
        for d in [&sink, &proc1, &sampler] {
            d.to_ready();
        }
        for d in [&sink, &proc1, &sampler] {
            d.go(Transition::Run, State::Running);
        }
        for d in [&sampler, &proc1, &sink] {
            assert!(d.h.wait_for_state(State::Ready, T).unwrap());
        }
        assert_eq!(got.lock().clone(), [b"Hello".to_vec()], "{tr}");
        for d in [sampler, proc1, sink] {
            d.ready_to_exit();
            assert!(d.join());
        }
    }
}

/// Runs a device with `args` up to READY (or ERROR); returns (reached READY, its config).
fn try_init(args: &str) -> (bool, Arc<fairmq::Properties>) {
    let cfg = config(args);
    let d = spawn(Hooks::default(), cfg.clone());
    let steps = [
        (Transition::InitDevice, State::InitializingDevice),
        (Transition::CompleteInit, State::Initialized),
        (Transition::Bind, State::Bound),
        (Transition::Connect, State::DeviceReady),
        (Transition::InitTask, State::Ready),
    ];
    for (t, s) in steps {
        if !d.h.change_state(t) || d.h.wait_for_state(s, T).is_err() {
            assert_eq!(d.h.current_state(), State::Error);
            assert!(!d.join());
            return (false, cfg);
        }
    }
    d.ready_to_exit();
    assert!(d.join());
    (true, cfg)
}

#[test]
fn each_validation_rule_of_the_channel_config() {
    let s = Session::new();
    let ok = format!("name=data,type=pull,method=bind,address={}", s.ipc("v"));
    assert!(try_init(&format!("--id v --severity fatal --channel-config {ok}")).0);
    for bad in [
        "name=data,type=bogus,method=bind,address=tcp://127.0.0.1:*",
        "name=data,type=pull,method=bind,address=tcp://127.0.0.1:*,sndBufSize=-1",
        "name=data,type=pull,method=bind,address=tcp://127.0.0.1:*,rcvBufSize=-1",
        "name=data,type=pull,method=bind,address=tcp://127.0.0.1:*,sndKernelSize=-1",
        "name=data,type=pull,method=bind,address=tcp://127.0.0.1:*,rcvKernelSize=-1",
        "name=data,type=pull,method=bind,address=tcp://127.0.0.1:*,rateLogging=-1",
        "name=data,type=pull,method=bind,address=tcp://127.0.0.1:*,transport=ofi",
        "name=data,type=pull,address=tcp://127.0.0.1:5555",
        "name=data,type=pull,method=sideways,address=tcp://127.0.0.1:5555",
        "name=data,type=pull,method=bind,address=ipc://",
        "name=data,type=pull,method=bind,address=tcp://localhost",
        "name=data,type=pull,method=bind,address=bla",
        "name=da%ta,type=pull,method=bind,address=tcp://127.0.0.1:*",
    ] {
        assert!(!try_init(&format!("--id v --severity fatal --channel-config {bad}")).0, "{bad} must lead to ERROR");
    }
    // An unconnectable channel: the device retries for --init-timeout, then goes to ERROR.
    assert!(
        !try_init("--id v --severity fatal --init-timeout 1 --channel-config name=data,type=push,method=connect").0
    );
    // A malformed --channel-config (no name) fails INITIALIZING DEVICE, as every bad channel
    // configuration does since issue 17 item 14 (FairMQ logged it and went on without it).
    let (ready, cfg) = try_init("--id v --severity fatal --channel-config type=push,method=bind");
    assert!(!ready);
    assert!(cfg.channel_info().is_empty());
}

#[test]
fn auto_bind_writes_the_bound_address_back_to_the_config() {
    let t = fairmq_zmq::Transport::new("occupier").unwrap();
    let taken = t.socket(fairmq_zmq::SocketType::Pull, "x").unwrap();
    let occupied =
        taken.attach("tcp://127.0.0.1:*", &fairmq_zmq::AttachOptions::new(Some(fairmq_zmq::Method::Bind))).unwrap();
    let cfg = config(&format!("--id ab --severity fatal --channel-config name=data,type=pull,method=bind,address={occupied},portRangeMin=30000,portRangeMax=30999"));
    let changes = Arc::new(Mutex::new(Vec::new()));
    let c2 = changes.clone();
    cfg.subscribe("test", move |k, v| {
        if k == "chans.data.0.address" {
            c2.lock().push(v.to_string());
        }
    });
    let d = spawn(Hooks::default(), cfg.clone());
    d.to_ready();
    let bound: String = cfg.get("chans.data.0.address").unwrap();
    assert_ne!(bound, occupied);
    let port: u16 = bound.rsplit(':').next().unwrap().parse().unwrap();
    assert!((30000..=30999).contains(&port), "{bound}");
    assert!(changes.lock().contains(&bound), "subscribers learn the bound port");
    d.ready_to_exit();
    assert!(d.join());
}

#[test]
fn a_controller_can_fill_in_the_address_while_connecting() {
    let s = Session::new();
    let addr = s.ipc("late");
    let binder = fairmq_zmq::Transport::new("binder").unwrap();
    let pull = binder.socket(fairmq_zmq::SocketType::Pull, "in").unwrap();
    pull.bind(&addr).unwrap();
    let cfg = config("--id late --severity fatal --channel-config name=data,type=push,method=connect");
    let d = spawn(Hooks::default(), cfg.clone());
    d.go(Transition::InitDevice, State::InitializingDevice);
    d.go(Transition::CompleteInit, State::Initialized);
    d.go(Transition::Bind, State::Bound);
    assert!(d.h.change_state(Transition::Connect));
    assert!(d.h.wait_for_state(State::Connecting, T).unwrap());
    // The address comes late: the device waits in CONNECTING for it meanwhile.
    std::thread::sleep(std::time::Duration::from_millis(200));
    cfg.set("chans.data.0.address", addr.clone());
    assert!(d.h.wait_for_state(State::DeviceReady, T).unwrap());
    d.go(Transition::ResetDevice, State::Idle);
    d.go(Transition::End, State::Exiting);
    assert!(d.join());
}

#[test]
fn mq_config_wins_over_channel_config_and_num_sockets_makes_sub_channels() {
    let s = Session::new();
    let json = r#"{ "fairMQOptions": { "devices": [ { "id": "d", "channels": [ { "name": "fromjson", "type": "pull", "method": "bind", "numSockets": 2 } ] } ] } }"#;
    let path = s.dir.path().join("c.json");
    std::fs::write(&path, json).unwrap();
    let cfg =
        config(&format!("--id d --mq-config {} --channel-config name=fromcli,type=pull,method=bind", path.display()));
    let d = spawn(Hooks::default(), cfg.clone());
    d.go(Transition::InitDevice, State::InitializingDevice);
    d.go(Transition::CompleteInit, State::Initialized);
    let info = cfg.channel_info();
    assert_eq!(info.get("fromjson"), Some(&2));
    assert!(!info.contains_key("fromcli"));
    d.go(Transition::ResetDevice, State::Idle);
    d.go(Transition::End, State::Exiting);
    assert!(d.join());
}
