//! fairmq-shm: payloads in the session's segment, 16-byte handed records over ipc sockets and lanes.
//!
//! Every role attaches to the cell's own session with FairMQ's "retry forever" out-of-memory policy
//! (a 16 MiB sender waits for frees instead of failing), and removes the session if it panics.

use super::super::options::RoleArgs;
use super::super::workload::{self, Latency, Tally};
use crate::session::SessionGuard;
use fairmq_shm::{BadAllocPolicy, Message, ShmConfig, Transport};
use fairmq_zmq::{SocketOptions, SocketType};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn transport(a: &RoleArgs, id: &str) -> Res<Transport> {
    let mut c = ShmConfig::new(id, &a.session);
    c.bad_alloc = BadAllocPolicy::from_options(false, None, 50);
    c.segment_size = a.segment_size as u64;
    Ok(Transport::new(&c)?)
}

/// Receives multiparts (single messages when `parts` is 1) until every sender ended.
pub(super) fn receiver(a: &RoleArgs) -> Res<Tally> {
    let _guard = SessionGuard::on_panic(&a.session);
    let t = transport(a, "receiver")?;
    let s = t.socket(SocketType::Pull, "in")?;
    s.bind(&a.address)?;
    workload::announce_ready();
    let mode = a.mode;
    let tally = if a.parts == 1 {
        workload::receive_until_end(a.senders, a.warmup(), || {
            let mut m = t.new_message();
            let n = s.receive(&mut m, -1).expect("receive");
            workload::read(mode, m.data());
            n
        })
    } else {
        let mut parts: Vec<Message> = Vec::with_capacity(a.parts);
        workload::receive_until_end(a.senders, a.warmup(), || {
            parts.clear();
            let n = s.receive_parts(&mut parts, -1).expect("receive");
            for p in &parts {
                workload::read(mode, p.data());
            }
            n
        })
    };
    Ok(tally)
}

/// Sends fresh messages (or multiparts of fresh messages) for `seconds`, then an empty message.
pub(super) fn sender(a: &RoleArgs) -> Res<()> {
    let _guard = SessionGuard::on_panic(&a.session);
    let t = transport(a, "sender")?;
    let s = t.socket(SocketType::Push, "out")?;
    s.set_options(&SocketOptions { linger: -1, ..s.options()? })?;
    s.connect(&a.address)?;
    let (mode, size, parts) = (a.mode, a.size, a.parts);
    let fresh = |seq| {
        let mut m = t.new_message_with_size(size).expect("allocate");
        workload::write(mode, m.data_mut().expect("sole owner"), seq);
        m
    };
    let duration = a.send_duration();
    if parts == 1 {
        workload::send_for(duration, size * parts, |seq| {
            s.send(&mut fresh(seq), -1).expect("send");
        });
    } else {
        let mut msgs = Vec::with_capacity(parts);
        workload::send_for(duration, size * parts, |seq| {
            msgs.clear();
            msgs.extend((0..parts).map(|_| fresh(seq)));
            s.send_parts(&mut msgs, -1).expect("send");
        });
    }
    s.send(&mut t.new_message(), -1)?;
    workload::wait_for_stdin_close();
    Ok(())
}

/// The middle of a chain: receives at `--address`, sends on to `--forward-to`, as it came
/// (single messages or multiparts; the payloads stay where they are).
pub(super) fn forwarder(a: &RoleArgs) -> Res<()> {
    let _guard = SessionGuard::on_panic(&a.session);
    let t = transport(a, "forwarder")?;
    let input = t.socket(SocketType::Pull, "in")?;
    input.bind(&a.address)?;
    let output = t.socket(SocketType::Push, "out")?;
    output.set_options(&SocketOptions { linger: -1, ..output.options()? })?;
    output.connect(&a.forward_to)?;
    workload::announce_ready();
    if a.parts == 1 {
        workload::forward_until_end(a.senders, || {
            let mut m = t.new_message();
            let n = input.receive(&mut m, -1).expect("receive");
            output.send(&mut m, -1).expect("send");
            n
        });
    } else {
        let mut parts: Vec<Message> = Vec::with_capacity(a.parts);
        workload::forward_until_end(a.senders, || {
            parts.clear();
            let n = input.receive_parts(&mut parts, -1).expect("receive");
            output.send_parts(&mut parts, -1).expect("send");
            n
        });
    }
    Ok(())
}

fn pair(a: &RoleArgs, id: &str, bind: bool) -> Res<(Transport, fairmq_shm::Socket)> {
    let t = transport(a, id)?;
    let s = t.socket(SocketType::Pair, "rt")?;
    // The final empty message must reach the peer even though its sender exits right away.
    s.set_options(&SocketOptions { linger: -1, ..s.options()? })?;
    if bind {
        s.bind(&a.address)?;
    } else {
        s.connect(&a.address)?;
    }
    Ok((t, s))
}

/// Receives into `m`, polling without blocking (spin, then yield) with `--busy-poll`.
fn receive(s: &fairmq_shm::Socket, m: &mut Message, busy: bool) -> usize {
    if busy {
        let mut spin = workload::Spin::default();
        loop {
            match s.receive(m, 0) {
                Ok(n) => return n,
                Err(fairmq_zmq::TransferError::Timeout) => spin.wait(),
                Err(e) => panic!("receive: {e}"),
            }
        }
    }
    s.receive(m, -1).expect("receive")
}

/// Answers each message with a fresh one of the same size until an empty message arrives.
pub(super) fn pong(a: &RoleArgs) -> Res<()> {
    let _guard = SessionGuard::on_panic(&a.session);
    let (t, s) = pair(a, "pong", true)?;
    workload::announce_ready();
    let mut seq = 0;
    loop {
        let mut m = t.new_message();
        if receive(&s, &mut m, a.busy_poll) == 0 {
            return Ok(());
        }
        workload::read(a.mode, m.data());
        drop(m);
        let mut reply = t.new_message_with_size(a.size)?;
        workload::write(a.mode, reply.data_mut()?, seq);
        s.send(&mut reply, -1)?;
        seq += 1;
    }
}

/// Times round trips: a fresh message out, the answer in.
pub(super) fn ping(a: &RoleArgs) -> Res<Latency> {
    let _guard = SessionGuard::on_panic(&a.session);
    let (t, s) = pair(a, "ping", false)?;
    let lat = workload::ping_for(a.warmup(), a.duration(), |seq| {
        let mut m = t.new_message_with_size(a.size).expect("allocate");
        workload::write(a.mode, m.data_mut().expect("sole owner"), seq);
        s.send(&mut m, -1).expect("send");
        let mut r = t.new_message();
        receive(&s, &mut r, a.busy_poll);
        workload::read(a.mode, r.data());
    });
    s.send(&mut t.new_message(), -1)?;
    Ok(lat)
}
