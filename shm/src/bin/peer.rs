//! A peer process for cross-process tests of the shared-memory transport.
//!
//! ```text
//! fairmq-shm-peer send <session> <address> <bind|connect> <count> <sizes,...> <sender-id> [hold|retry] [pair|dealer|nolanes]
//! fairmq-shm-peer recv <session> <address> <bind|connect> <count> <senders> [gaps|any] [sub] [hold|deaf] [pause] [pair|dealer|nolanes]
//! fairmq-shm-peer allocloop <session> <iterations, 0 = forever>
//! fairmq-shm-peer holdlock <session>
//! fairmq-shm-peer regionsink <session> <address> <count> <plain|copy|parts> [sub] [hold]
//! fairmq-shm-peer regionsrc <session> <address> <count> <size> <wait|hold> [path]
//! fairmq-shm-peer regionevents <session> <region events to see>
//! fairmq-shm-peer attach <session> [shmid]
//! fairmq-shm-peer copies <session> <messages> <copies of each> <size>
//! ```
//! Region pieces carry `region_byte(offset + i)` at byte `i`; the sink checks every byte it gets
//! (`copy`: keeps a copy of each message, drops the original at once and the copies at the end;
//! `parts`: receives multiparts; `sub`: a SUB socket instead of PULL; `hold`: keeps every message
//! and copy, prints `holding <messages>` and sleeps until killed). The source makes a region, sends `count` pieces and then waits for
//! every acknowledgement (`wait`, prints `acked <n>`) or sleeps until killed (`hold`).
//! A sender with count 0 sends, once a peer took its first message, until a send would wait
//! 100 ms (its peers' queues are full); with `hold` it sleeps after its last message until killed,
//! with `retry` it tries to send one more every 100 ms until killed.
//! Every payload starts with its sequence number and sender id, followed by bytes derived from both;
//! the receiver checks all of them, prints `first` after the first and `received <messages> <bytes>`
//! at the end. Exit code 1 on any error.
//! A receiver with count 0 receives until nothing arrives for 2 s; with `gaps`, sequence numbers of a
//! sender must only increase (another receiver gets the rest), not follow each other; with `any`,
//! they only must not repeat (another receiver gets some, and what it did not take comes again
//! later); with `sub`,
//! the receiver is a subscriber (SUB) instead of a PULL socket; with `hold`, it keeps every message
//! it received and sleeps after its report until killed; with `deaf`, it never receives (it prints
//! `ready` and sleeps until killed). With `pair`, sender and receiver use PAIR
//! sockets without lanes (their records travel on the socket) instead of PUSH and PULL; with
//! `dealer`, DEALER sockets (the sender's ZeroMQ socket picks one of its peers); with `nolanes`,
//! PUSH and PULL without lanes.
//! `attach` joins (or creates) the session, under the explicit shmId (hex, as in object names) if
//! given, prints `attached` and sleeps until killed (another user's process in the hardening tests).
//! `copies` makes `messages` messages of `size` bytes and holds each with its copies (shared
//! references, all listed in its ledger), prints `holding <references>` and sleeps until killed.

use fairmq_shm::{ShmConfig, Transport};
use fairmq_zmq::{AttachOptions, Method, SocketOptions, SocketType};
use std::io::Write;
use std::process::ExitCode;

const SEGMENT_SIZE: u64 = 64 << 20;

fn config(id: &str, session: &str) -> ShmConfig {
    let mut c = ShmConfig::new(id, session);
    c.segment_size = SEGMENT_SIZE;
    c.bad_alloc = fairmq_shm::BadAllocPolicy::from_options(false, None, 10);
    c
}

fn transport(id: &str, session: &str) -> Result<Transport, Box<dyn std::error::Error>> {
    Ok(Transport::new(&config(id, session))?)
}

/// With `pair` among `flags`: a PAIR socket without lanes (records on the socket, with tickets),
/// else `otherwise`, with lanes where they apply unless `nolanes` is among them too.
fn socket_type(flags: &[String], otherwise: SocketType) -> (SocketType, bool) {
    let has = |f: &str| flags.iter().any(|x| x == f);
    if has("pair") {
        (SocketType::Pair, false)
    } else if has("dealer") {
        (SocketType::Dealer, false)
    } else {
        (otherwise, !has("nolanes"))
    }
}

fn transport_with(id: &str, session: &str, lanes: bool) -> Result<Transport, Box<dyn std::error::Error>> {
    let mut c = config(id, session);
    c.lanes = lanes;
    Ok(Transport::new(&c)?)
}

fn method(s: &str) -> Result<Method, Box<dyn std::error::Error>> {
    Ok(s.parse::<Method>()?)
}

fn fill_byte(seq: u64, sender: u64, i: usize) -> u8 {
    (seq.wrapping_mul(31).wrapping_add(sender * 7).wrapping_add(i as u64)) as u8
}

fn send(a: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let (session, address, m, count) = (&a[0], &a[1], method(&a[2])?, a[3].parse::<u64>()?);
    let sizes: Vec<usize> = a[4].split(',').map(str::parse).collect::<Result<_, _>>()?;
    let sender: u64 = a[5].parse()?;
    let (ty, lanes) = socket_type(&a[6..], SocketType::Push);
    let t = transport_with(&format!("sender{sender}"), session, lanes)?;
    let s = t.socket(ty, "data")?;
    s.set_options(&SocketOptions { linger: -1, ..s.options()? })?;
    s.attach(address, &AttachOptions::new(Some(m)))?;
    // Count 0: until a send would wait (its peers' queues are full).
    let (count, timeout) = if count == 0 { (u64::MAX, 100) } else { (count, -1) };
    let mut sent = 0;
    for seq in 0..count {
        let size = sizes[seq as usize % sizes.len()].max(16);
        let mut msg = t.new_message_with_size(size)?;
        let d = msg.data_mut()?;
        d[..8].copy_from_slice(&seq.to_le_bytes());
        d[8..16].copy_from_slice(&sender.to_le_bytes());
        for (i, b) in d.iter_mut().enumerate().skip(16) {
            *b = fill_byte(seq, sender, i);
        }
        // The first send waits for a peer.
        match s.send(&mut msg, if sent == 0 { -1 } else { timeout }) {
            Ok(_) => sent += 1,
            Err(fairmq_zmq::TransferError::Timeout) if timeout > 0 => break,
            Err(e) => return Err(e.into()),
        }
    }
    println!("sent {sent}");
    if a[6..].iter().any(|h| h == "retry") {
        std::io::stdout().flush()?;
        loop {
            let mut msg = t.new_message_with_size(16)?;
            msg.data_mut()?.fill(0);
            match s.send(&mut msg, 100) {
                Ok(_) => return Err("a send went out after the queues were full".into()),
                Err(fairmq_zmq::TransferError::Timeout) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    if a[6..].iter().any(|h| h == "hold") {
        std::io::stdout().flush()?;
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    Ok(())
}

fn recv(a: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let (session, address, m, count, senders) =
        (&a[0], &a[1], method(&a[2])?, a[3].parse::<u64>()?, a[4].parse::<usize>()?);
    let flag = |f: &str| a[5..].iter().any(|g| g == f);
    let (gaps, any, hold) = (flag("gaps"), flag("any"), flag("hold"));
    let mut seen = std::collections::HashSet::new();
    let (ty, lanes) = socket_type(&a[5..], SocketType::Pull);
    let ty = if flag("sub") { SocketType::Sub } else { ty };
    let mut held = Vec::new();
    let t = transport_with("receiver", session, lanes)?;
    let s = t.socket(ty, "data")?;
    s.attach(address, &AttachOptions::new(Some(m)))?;
    println!("ready");
    std::io::stdout().flush()?;
    if flag("deaf") {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    let mut next = vec![0u64; senders];
    let (mut n, mut bytes) = (0u64, 0u64);
    while count == 0 || n < count {
        let mut msg = t.new_message();
        match s.receive(&mut msg, if count == 0 { 2000 } else { 60_000 }) {
            Ok(_) => {}
            Err(fairmq_zmq::TransferError::Timeout) if count == 0 => break,
            Err(e) => return Err(e.into()),
        }
        let d = msg.data();
        let seq = u64::from_le_bytes(d[..8].try_into()?);
        let sender = u64::from_le_bytes(d[8..16].try_into()?);
        let expected = next.get_mut(sender as usize).ok_or(format!("unknown sender {sender}"))?;
        if any {
            if !seen.insert((sender, seq)) {
                return Err(format!("sender {sender}: message {seq} came twice").into());
            }
        } else if seq != *expected && !(gaps && seq > *expected) {
            return Err(format!("sender {sender}: expected message {expected}, got {seq}").into());
        }
        *expected = seq + 1;
        if let Some(i) = d.iter().enumerate().skip(16).position(|(i, &b)| b != fill_byte(seq, sender, i)) {
            return Err(format!("sender {sender} message {seq}: byte {} differs", i + 16).into());
        }
        bytes += d.len() as u64;
        n += 1;
        if n == 1 {
            println!("first");
            std::io::stdout().flush()?;
            if flag("pause") {
                // Stopped here, holding no lock (a stop from outside could catch the receiver
                // inside the segment's lock, and every other process would wait for it).
                std::process::Command::new("kill").args(["-STOP", &std::process::id().to_string()]).status()?;
            }
        }
        if hold {
            held.push(msg);
        }
    }
    println!("received {n} {bytes}");
    let c = s.counters();
    println!("counters {} {}", c.messages_rx, c.bytes_rx);
    if hold {
        std::io::stdout().flush()?;
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    Ok(())
}

/// Allocates and frees as fast as it can, keeping a few blocks alive, each filled with a stamp of
/// this process; a stamp changed by someone else means a block was handed out twice.
fn allocloop(a: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let (session, iterations) = (&a[0], a[1].parse::<u64>()?);
    let t = transport("allocloop", session)?;
    let stamp = std::process::id() as u8 | 1;
    let mut live: Vec<fairmq_shm::Message> = Vec::new();
    let mut n = 0u64;
    println!("running");
    std::io::stdout().flush()?;
    while iterations == 0 || n < iterations {
        let size = 16 + (n.wrapping_mul(2654435761) % 70_000) as usize;
        let mut m = t.new_message_with_size(size)?;
        m.data_mut()?.fill(stamp);
        live.push(m);
        if live.len() > 8 {
            let m = live.swap_remove((n % 8) as usize);
            if m.data().iter().any(|&b| b != stamp) {
                return Err("a block was handed out twice: its bytes changed under us".into());
            }
        }
        n += 1;
    }
    println!("done {n}");
    Ok(())
}

fn holdlock(a: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let t = transport("holdlock", &a[0])?;
    fairmq_shm::testing::segment(&t).while_locked(|| {
        println!("locked");
        let _ = std::io::stdout().flush();
        std::thread::sleep(std::time::Duration::from_secs(3600));
    })?;
    Ok(())
}

/// The byte a test region holds at `offset`.
pub fn region_byte(offset: u64) -> u8 {
    (offset.wrapping_mul(7) ^ (offset >> 8)) as u8
}

fn regionsink(a: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let (session, address, count, mode) = (&a[0], &a[1], a[2].parse::<u64>()?, a[3].as_str());
    let flag = |f: &str| a[4..].iter().any(|g| g == f);
    let t = transport("regionsink", session)?;
    let s = t.socket(if flag("sub") { SocketType::Sub } else { SocketType::Pull }, "data")?;
    s.connect(address)?;
    println!("ready");
    std::io::stdout().flush()?;
    let (mut n, mut bytes, mut copies) = (0u64, 0u64, Vec::new());
    while n < count {
        let mut got = Vec::new();
        if mode == "parts" {
            s.receive_parts(&mut got, 60_000)?;
        } else {
            let mut m = t.new_message();
            s.receive(&mut m, 60_000)?;
            got.push(m);
        }
        for m in got {
            let (_, offset) = m.region_piece().ok_or("not a region message")?;
            if let Some(i) = m.data().iter().enumerate().position(|(i, &b)| b != region_byte(offset + i as u64)) {
                return Err(format!("piece at {offset}: byte {i} differs").into());
            }
            if mode == "copy" {
                let mut c = t.new_message();
                c.copy_from(&m)?;
                if c.refcount() != 2 {
                    return Err(format!("a copy should share the piece: count {}", c.refcount()).into());
                }
                copies.push(c);
            }
            bytes += m.size() as u64;
            n += 1;
            if flag("hold") {
                copies.push(m);
            }
        }
    }
    if flag("hold") {
        println!("holding {n}");
        std::io::stdout().flush()?;
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    drop(copies);
    println!("received {n} {bytes}");
    Ok(())
}

fn regionsrc(a: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let (session, address, count, size, mode) = (&a[0], &a[1], a[2].parse::<u64>()?, a[3].parse::<usize>()?, &a[4]);
    let t = transport("regionsrc", session)?;
    let acked = Arc::new(AtomicU64::new(0));
    let counter = acked.clone();
    let cfg = fairmq_shm::RegionConfig { path: a.get(5).cloned().unwrap_or_default(), ..Default::default() };
    let cb = fairmq_shm::RegionCallback::Bulk(Box::new(move |b| {
        counter.fetch_add(b.len() as u64, Ordering::Relaxed);
    }));
    let region = t.create_region(size * 16, cb, &cfg)?;
    for off in 0..region.size() {
        region.write(off, &[region_byte(off as u64)])?;
    }
    let s = t.socket(SocketType::Push, "data")?;
    s.set_options(&SocketOptions { linger: -1, ..s.options()? })?;
    s.bind(address)?;
    println!("region {}", region.id());
    std::io::stdout().flush()?;
    for i in 0..count {
        let mut m = t.new_message_from_region(&region, (i as usize % 16) * size, size, i)?;
        s.send(&mut m, -1)?;
    }
    println!("sent {count}");
    std::io::stdout().flush()?;
    if mode == "hold" {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while acked.load(Ordering::Relaxed) < count && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    println!("acked {}", acked.load(Ordering::Relaxed));
    Ok(())
}

fn regionevents(a: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let (session, want) = (&a[0], a[1].parse::<usize>()?);
    let t = transport("regionevents", session)?;
    let (tx, rx) = std::sync::mpsc::channel();
    t.subscribe_to_region_events(move |info| {
        let _ = tx.send(info);
    })?;
    println!("subscribed");
    std::io::stdout().flush()?;
    let mut seen = 0;
    while seen < want {
        let info = rx.recv_timeout(std::time::Duration::from_secs(60))?;
        println!("event {} {} {} {} {}", info.managed, info.id, info.size, info.flags, info.event);
        std::io::stdout().flush()?;
        if !info.managed {
            seen += 1;
        }
    }
    t.unsubscribe_from_region_events();
    Ok(())
}

fn attach(a: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let mut c = config("attach", &a[0]);
    if let Some(id) = a.get(1) {
        c.shm_id = Some(fairmq_shm::shm_id_number(id).ok_or(format!("shmid '{id}' is not hex"))?);
    }
    let _t = Transport::new(&c)?;
    println!("attached");
    std::io::stdout().flush()?;
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

fn copies(a: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let (session, messages, each, size) = (&a[0], a[1].parse::<usize>()?, a[2].parse::<usize>()?, a[3].parse()?);
    let t = transport("copies", session)?;
    let mut held = Vec::with_capacity(messages * (each + 1));
    for _ in 0..messages {
        let m = t.new_message_with_size(size)?;
        for _ in 0..each {
            let mut c = t.new_message();
            c.copy_from(&m)?;
            held.push(c);
        }
        held.push(m);
    }
    println!("holding {}", held.len());
    std::io::stdout().flush()?;
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let need = |n: usize| args.len() > n;
    let r = match args.first().map(String::as_str) {
        Some("send") if need(6) => send(&args[1..]),
        Some("recv") if need(5) => recv(&args[1..]),
        Some("allocloop") if need(2) => allocloop(&args[1..]),
        Some("holdlock") if need(1) => holdlock(&args[1..]),
        Some("regionsink") if need(4) => regionsink(&args[1..]),
        Some("regionsrc") if need(5) => regionsrc(&args[1..]),
        Some("regionevents") if need(2) => regionevents(&args[1..]),
        Some("attach") if need(1) => attach(&args[1..]),
        Some("copies") if need(4) => copies(&args[1..]),
        _ => {
            Err("usage: see the file's documentation (send|recv|allocloop|holdlock|region...|attach|copies ...)".into())
        }
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fairmq-shm-peer: {e}");
            ExitCode::FAILURE
        }
    }
}
