//! The bare `zmq` crate over ipc: libzmq without the fairmq layer, the baseline of fairmq-zmq.

use super::super::options::RoleArgs;
use super::super::workload::{self, Latency, Tally};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Receives all frames of one message into `m`; returns the payload bytes of all frames.
fn receive_all(
    s: &zmq::Socket,
    m: &mut zmq::Message,
    mode: super::super::options::Mode,
    flags: i32,
) -> zmq::Result<usize> {
    s.recv(m, flags)?;
    let mut total = m.len();
    workload::read(mode, m);
    while m.get_more() {
        s.recv(m, 0)?;
        total += m.len();
        workload::read(mode, m);
    }
    Ok(total)
}

/// Receives messages (all frames of a multipart) until every sender ended.
pub(super) fn receiver(a: &RoleArgs) -> Res<Tally> {
    let ctx = zmq::Context::new();
    let s = ctx.socket(zmq::PULL)?;
    s.set_rcvhwm(workload::zmq_hwm(a.size, a.parts))?;
    s.bind(&a.address)?;
    workload::announce_ready();
    let mut m = zmq::Message::new();
    Ok(workload::receive_until_end(a.senders, a.warmup(), || receive_all(&s, &mut m, a.mode, 0).expect("receive")))
}

/// Sends fresh (zero-filled) messages or multiparts for `seconds`, then an empty message.
pub(super) fn sender(a: &RoleArgs) -> Res<()> {
    let ctx = zmq::Context::new();
    let s = ctx.socket(zmq::PUSH)?;
    s.set_linger(-1)?;
    s.set_sndhwm(workload::zmq_hwm(a.size, a.parts))?;
    s.connect(&a.address)?;
    let (mode, size, parts) = (a.mode, a.size, a.parts);
    workload::send_for(a.send_duration(), size * parts, |seq| {
        for i in 0..parts {
            let mut m = zmq::Message::with_size(size);
            workload::write(mode, &mut m, seq);
            let more = if i + 1 < parts { zmq::SNDMORE } else { 0 };
            s.send(m, more).expect("send");
        }
    });
    s.send(zmq::Message::new(), 0)?;
    workload::wait_for_stdin_close();
    Ok(())
}

fn pair(a: &RoleArgs, bind: bool) -> Res<(zmq::Context, zmq::Socket)> {
    let ctx = zmq::Context::new();
    let s = ctx.socket(zmq::PAIR)?;
    // The final empty message must reach the peer even though its sender exits right away.
    s.set_linger(-1)?;
    if bind {
        s.bind(&a.address)?;
    } else {
        s.connect(&a.address)?;
    }
    Ok((ctx, s))
}

/// Receives one message, polling without blocking (spin, then yield) with `--busy-poll`.
fn receive(s: &zmq::Socket, m: &mut zmq::Message, a: &RoleArgs) -> usize {
    if a.busy_poll {
        let mut spin = workload::Spin::default();
        loop {
            match receive_all(s, m, a.mode, zmq::DONTWAIT) {
                Ok(n) => return n,
                Err(zmq::Error::EAGAIN) => spin.wait(),
                Err(e) => panic!("receive: {e}"),
            }
        }
    }
    receive_all(s, m, a.mode, 0).expect("receive")
}

/// Answers each message with a fresh one of the same size until an empty message arrives.
pub(super) fn pong(a: &RoleArgs) -> Res<()> {
    let (_ctx, s) = pair(a, true)?;
    workload::announce_ready();
    let mut m = zmq::Message::new();
    let mut seq = 0;
    while receive(&s, &mut m, a) != 0 {
        let mut reply = zmq::Message::with_size(a.size);
        workload::write(a.mode, &mut reply, seq);
        s.send(reply, 0)?;
        seq += 1;
    }
    Ok(())
}

/// Times round trips: a fresh message out, the answer in.
pub(super) fn ping(a: &RoleArgs) -> Res<Latency> {
    let (_ctx, s) = pair(a, false)?;
    let mut r = zmq::Message::new();
    let lat = workload::ping_for(a.warmup(), a.duration(), |seq| {
        let mut m = zmq::Message::with_size(a.size);
        workload::write(a.mode, &mut m, seq);
        s.send(m, 0).expect("send");
        receive(&s, &mut r, a);
    });
    s.send(zmq::Message::new(), 0)?;
    Ok(lat)
}
