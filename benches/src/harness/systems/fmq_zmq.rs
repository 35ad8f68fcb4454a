//! fairmq-zmq over ipc: the payload travels inside ZeroMQ frames (copied through the socket).

use super::super::options::RoleArgs;
use super::super::workload::{self, Latency, Tally};
use fairmq_zmq::{Message, Socket, SocketType, TransferError, Transport};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Receives multiparts (single messages when `parts` is 1) until every sender ended.
pub(super) fn receiver(a: &RoleArgs) -> Res<Tally> {
    let t = Transport::new("receiver")?;
    let s = t.socket(SocketType::Pull, "in")?;
    s.set_rcv_buf_size(workload::zmq_hwm(a.size, a.parts))?;
    s.bind(&a.address)?;
    workload::announce_ready();
    let mode = a.mode;
    let tally = if a.parts == 1 {
        workload::receive_until_end(a.senders, a.warmup(), || {
            let mut m = Message::new();
            let n = s.receive(&mut m, -1).expect("receive");
            workload::read(mode, m.data());
            n
        })
    } else {
        let mut parts = Vec::with_capacity(a.parts);
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

/// Sends fresh (zero-filled) messages or multiparts for `seconds`, then an empty message.
pub(super) fn sender(a: &RoleArgs) -> Res<()> {
    let t = Transport::new("sender")?;
    let s = t.socket(SocketType::Push, "out")?;
    s.set_linger(-1)?;
    s.set_snd_buf_size(workload::zmq_hwm(a.size, a.parts))?;
    s.connect(&a.address)?;
    let (mode, size, parts) = (a.mode, a.size, a.parts);
    let fresh = |seq| {
        let mut m = Message::with_size(size);
        workload::write(mode, m.data_mut(), seq);
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
    s.send(&mut Message::new(), -1)?;
    workload::wait_for_stdin_close();
    Ok(())
}

/// The middle of a chain: receives at `--address`, sends on to `--forward-to`, as it came.
pub(super) fn forwarder(a: &RoleArgs) -> Res<()> {
    let t = Transport::new("forwarder")?;
    let input = t.socket(SocketType::Pull, "in")?;
    input.set_rcv_buf_size(workload::zmq_hwm(a.size, a.parts))?;
    input.bind(&a.address)?;
    let output = t.socket(SocketType::Push, "out")?;
    output.set_linger(-1)?;
    output.set_snd_buf_size(workload::zmq_hwm(a.size, a.parts))?;
    output.connect(&a.forward_to)?;
    workload::announce_ready();
    if a.parts == 1 {
        workload::forward_until_end(a.senders, || {
            let mut m = Message::new();
            let n = input.receive(&mut m, -1).expect("receive");
            output.send(&mut m, -1).expect("send");
            n
        });
    } else {
        let mut parts = Vec::with_capacity(a.parts);
        workload::forward_until_end(a.senders, || {
            parts.clear();
            let n = input.receive_parts(&mut parts, -1).expect("receive");
            output.send_parts(&mut parts, -1).expect("send");
            n
        });
    }
    Ok(())
}

fn pair(a: &RoleArgs, bind: bool) -> Res<(Transport, Socket)> {
    let t = Transport::new(if bind { "pong" } else { "ping" })?;
    let s = t.socket(SocketType::Pair, "rt")?;
    // The final empty message must reach the peer even though its sender exits right away.
    s.set_linger(-1)?;
    if bind {
        s.bind(&a.address)?;
    } else {
        s.connect(&a.address)?;
    }
    Ok((t, s))
}

/// Receives into `m`, polling without blocking (spin, then yield) with `--busy-poll`.
fn receive(s: &Socket, m: &mut Message, busy: bool) -> usize {
    if busy {
        let mut spin = workload::Spin::default();
        loop {
            match s.receive(m, 0) {
                Ok(n) => return n,
                Err(TransferError::Timeout) => spin.wait(),
                Err(e) => panic!("receive: {e}"),
            }
        }
    }
    s.receive(m, -1).expect("receive")
}

/// Answers each message with a fresh one of the same size until an empty message arrives.
pub(super) fn pong(a: &RoleArgs) -> Res<()> {
    let (_t, s) = pair(a, true)?;
    workload::announce_ready();
    let mut seq = 0;
    loop {
        let mut m = Message::new();
        if receive(&s, &mut m, a.busy_poll) == 0 {
            return Ok(());
        }
        workload::read(a.mode, m.data());
        let mut reply = Message::with_size(a.size);
        workload::write(a.mode, reply.data_mut(), seq);
        s.send(&mut reply, -1)?;
        seq += 1;
    }
}

/// Times round trips: a fresh message out, the answer in.
pub(super) fn ping(a: &RoleArgs) -> Res<Latency> {
    let (_t, s) = pair(a, false)?;
    let lat = workload::ping_for(a.warmup(), a.duration(), |seq| {
        let mut m = Message::with_size(a.size);
        workload::write(a.mode, m.data_mut(), seq);
        s.send(&mut m, -1).expect("send");
        let mut r = Message::new();
        receive(&s, &mut r, a.busy_poll);
        workload::read(a.mode, r.data());
    });
    s.send(&mut Message::new(), -1)?;
    Ok(lat)
}
