//! The metrics endpoint under bad input (issue 36): a malformed request, a huge header (refused
//! past 16 KiB), other methods and paths, 1000
//! idle connections and a slow client neither stop it nor touch the device's data path, and
//! leave no thread or descriptor behind; bad `--metrics-address` values are refused at start.

mod common;
use common::process::{wait_until, Proc};
use common::prometheus::{promtool_problems, scrape};
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn sink(s: &Session, extra: &[&str]) -> Proc {
    let chan = format!("name=data,type=pull,method=bind,address={},rateLogging=0", s.ipc("data"));
    let mut args = vec!["--channel-config", &chan];
    args.extend_from_slice(extra);
    launch_device(env!("CARGO_BIN_EXE_fairmq-sink"), "sink", s, "zeromq", "static", "20000000", &args)
}

/// Threads and open descriptors of process `pid`.
fn threads_and_fds(pid: u32) -> (usize, usize) {
    let count = |d: &str| std::fs::read_dir(format!("/proc/{pid}/{d}")).map(|r| r.count()).unwrap_or(0);
    (count("task"), count("fd"))
}

/// The sink's received count, as its endpoint says.
fn received(url: &str) -> u64 {
    let (_, text) = scrape(url, None);
    let line = text.lines().find(|l| l.starts_with("fairmq_channel_received_messages_total{")).expect("the family");
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn bad_addresses_are_refused_at_start() {
    let s = Session::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    for (given, says) in [
        ("nonsense", "expected HOST:PORT"),
        ("127.0.0.1:99999", "the port is not a number"),
        (taken.as_str(), "cannot serve metrics on"),
    ] {
        let mut p = sink(&s, &["--metrics-address", given]);
        assert_eq!(p.wait().code(), Some(1), "{given}: {:?}", p.seen);
        assert!(p.saw(says), "{given}: {:?}", p.seen);
        assert!(!p.saw("---> RUNNING"), "{given}: the device never ran");
    }
}

#[test]
fn garbage_floods_and_slow_clients_leave_the_endpoint_and_the_device_as_they_were() {
    let (_, hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, hard.min(1 << 16), hard).unwrap();
    let s = Session::new();
    let mut dev = sink(&s, &["--metrics-address", "127.0.0.1:0"]);
    dev.expect("metrics: serving http://");
    dev.expect("---> RUNNING");
    let line = dev.seen.iter().find(|l| l.contains("metrics: serving http://")).unwrap().clone();
    let addr = line.split("http://").nth(1).unwrap().trim_end_matches("/metrics").to_owned();
    let url = format!("http://{addr}/metrics");
    assert_eq!(received(&url), 0);
    // Settled: the pool of tiny_http's workers exists once a first request was served.
    std::thread::sleep(Duration::from_secs(1));
    let before = threads_and_fds(dev.pid());

    // A malformed request line, and a header of 1 MiB: answered with an error or closed.
    let junk = [
        ("GARBAGE\r\n\r\n".to_owned(), "HTTP/1.1 400 "),
        (format!("GET /metrics HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(1 << 20)), "HTTP/1.1 431 "),
        ("POST /metrics HTTP/1.1\r\n\r\n".to_owned(), "HTTP/1.1 405 "),
        ("GET /other HTTP/1.1\r\n\r\n".to_owned(), "HTTP/1.1 404 "),
    ];
    for (junk, status) in junk {
        let mut c = TcpStream::connect(&addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = c.write_all(junk.as_bytes());
        let mut answer = Vec::new();
        let _ = c.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with(status), "{status}: {}", &answer[..answer.len().min(200)]);
        assert!(!answer.contains("fairmq_device_state"), "no exposition for junk");
        assert_eq!(promtool_problems(&scrape(&url, None).1), None, "the next scrape is answered in full");
    }

    // 1000 idle connections and a client that sends its request a byte at a time, while the
    // device receives: scrapes are answered, every message arrives.
    let idle: Vec<TcpStream> = (0..1000).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    let mut slow = TcpStream::connect(&addr).unwrap();
    let t = session_transport(&s, fairmq::TransportKind::Zeromq, |_| {});
    let push = attached_socket(&t, fairmq::SocketType::Push, &s.ipc("data"), fairmq_zmq::Method::Connect);
    for (i, b) in b"GET /metrics HTTP/1.1\r\nHost: x\r\n".iter().enumerate() {
        slow.write_all(&[*b]).unwrap();
        let mut m = t.new_simple_message(&(i as u64).to_le_bytes()).unwrap();
        push.send(&mut m, 10_000, &t).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = b"GET /metrics HTTP/1.1\r\nHost: x\r\n".len() as u64;
    wait_until("the device received every message", || received(&url) == sent);
    slow.write_all(b"\r\n").unwrap();
    let mut answer = String::new();
    slow.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = [0u8; 65536];
    while !answer.contains("fairmq_channel_peers") {
        let n = slow.read(&mut buf).unwrap();
        assert!(n > 0, "the slow client got its answer: {answer}");
        answer.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop((idle, slow, push, t));

    // Everything the flood took is given back (tiny_http's idle workers end after a few seconds).
    let mut now = (0, 0);
    let deadline = std::time::Instant::now() + common::process::GENEROUS;
    while std::time::Instant::now() < deadline {
        now = threads_and_fds(dev.pid());
        if now.0 <= before.0 && now.1 <= before.1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(now.0 <= before.0 && now.1 <= before.1, "threads and descriptors {now:?}, before {before:?}");
    assert_eq!(received(&url), sent);
    dev.signal(nix::sys::signal::Signal::SIGINT as i32);
    assert_eq!(dev.wait().code(), Some(0), "{:?}", dev.seen);
}
