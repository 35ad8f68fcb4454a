//! A small, bounded HTTP/1.1 server for the metrics endpoint: one thread polls the listener and
//! every connection, `httparse` reads each request head, one answer per connection, then it is
//! closed. Bounded everywhere an outsider could push: a request head of at most
//! [`MAX_HEAD`] bytes (431 beyond), at most [`MAX_CONNECTIONS`] connections (the oldest goes
//! first), [`IDLE`] seconds without progress (closed). Idle or slow clients cost a descriptor
//! and a buffer each, never a thread, and never hold up another client's answer.
//!
//! (tiny_http, tried first, bounds none of these: a header line grows without limit, each
//! connection takes a thread, and its accept thread ends at the first accept error.)

use nix::poll::{PollFd, PollFlags, PollTimeout};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Largest request head read (request line and headers).
pub(crate) const MAX_HEAD: usize = 16 << 10;
/// Connections kept at once.
pub(crate) const MAX_CONNECTIONS: usize = 256;
/// How long a connection may make no progress.
pub(crate) const IDLE: Duration = Duration::from_secs(10);
/// How often the loop looks whether it is to stop.
const TICK: u16 = 200;

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub method: String,
    pub path: String,
    pub accept: String,
}

/// An answer: status, content type, body.
pub(crate) type Answer = (u16, &'static str, String);

struct Connection {
    stream: TcpStream,
    input: Vec<u8>,
    output: Vec<u8>,
    written: usize,
    since: Instant,
}

/// Serves `listener` until `stop`, answering each request with `answer`.
pub(crate) fn serve(listener: TcpListener, stop: &AtomicBool, answer: impl Fn(&Request) -> Answer) {
    if let Err(e) = listener.set_nonblocking(true) {
        log::error!("metrics: cannot serve: {e}");
        return;
    }
    let mut conns: Vec<Connection> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let (listener_ready, ready) = {
            let mut fds = vec![PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
            fds.extend(conns.iter().map(|c| {
                let want = if c.output.is_empty() { PollFlags::POLLIN } else { PollFlags::POLLOUT };
                PollFd::new(c.stream.as_fd(), want)
            }));
            match nix::poll::poll(&mut fds, PollTimeout::from(TICK)) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    log::error!("metrics: poll failed: {e}");
                    std::thread::sleep(Duration::from_millis(u64::from(TICK)));
                    continue;
                }
            }
            let ready = |f: &PollFd<'_>| f.revents().is_some_and(|r| !r.is_empty());
            (ready(&fds[0]), fds[1..].iter().map(ready).collect::<Vec<bool>>())
        };
        let mut closed = vec![false; conns.len()];
        for (i, c) in conns.iter_mut().enumerate() {
            if ready[i] {
                closed[i] = !progress(c, &answer);
            } else if c.since.elapsed() > IDLE {
                closed[i] = true;
            }
        }
        let mut i = 0;
        conns.retain(|_| {
            i += 1;
            !closed[i - 1]
        });
        if listener_ready {
            accept_all(&listener, &mut conns);
        }
    }
}

/// Takes every pending connection; the oldest connections make room beyond the limit.
fn accept_all(listener: &TcpListener, conns: &mut Vec<Connection>) {
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                if stream.set_nonblocking(true).is_err() {
                    continue;
                }
                let _ = stream.set_nodelay(true);
                if conns.len() >= MAX_CONNECTIONS {
                    conns.remove(0);
                }
                conns.push(Connection {
                    stream,
                    input: Vec::new(),
                    output: Vec::new(),
                    written: 0,
                    since: Instant::now(),
                });
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                // Out of descriptors, say: the next tick tries again (no spinning: poll waits).
                log::warn!("metrics: cannot accept a connection: {e}");
                return;
            }
        }
    }
}

/// Reads or writes what `c` is ready for; false when it is done with (answered, gone, refused).
fn progress(c: &mut Connection, answer: &impl Fn(&Request) -> Answer) -> bool {
    if !c.output.is_empty() {
        return match c.stream.write(&c.output[c.written..]) {
            Ok(n) => {
                c.written += n;
                c.since = Instant::now();
                c.written < c.output.len()
            }
            Err(e) => e.kind() == io::ErrorKind::WouldBlock,
        };
    }
    let mut buf = [0u8; 4096];
    match c.stream.read(&mut buf) {
        Ok(0) => return false,
        Ok(n) => {
            c.input.extend_from_slice(&buf[..n.min(MAX_HEAD + 1 - c.input.len().min(MAX_HEAD))]);
            c.since = Instant::now();
        }
        Err(e) => return e.kind() == io::ErrorKind::WouldBlock,
    }
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let (status, content_type, body, head_only) = match req.parse(&c.input) {
        Ok(httparse::Status::Complete(_)) => {
            let accept = req
                .headers
                .iter()
                .filter(|h| h.name.eq_ignore_ascii_case("accept"))
                .filter_map(|h| std::str::from_utf8(h.value).ok())
                .collect::<Vec<_>>()
                .join(",");
            let r = Request {
                method: req.method.unwrap_or_default().to_owned(),
                path: req.path.unwrap_or_default().to_owned(),
                accept,
            };
            let (status, ct, body) = answer(&r);
            (status, ct, body, r.method == "HEAD")
        }
        Ok(httparse::Status::Partial) if c.input.len() <= MAX_HEAD => return true,
        Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
            (431, TEXT, "Request header fields too large\n".to_owned(), false)
        }
        Err(_) => (400, TEXT, "Bad request\n".to_owned(), false),
    };
    c.output = response(status, content_type, &body, head_only);
    c.written = 0;
    true
}

pub(crate) const TEXT: &str = "text/plain; charset=utf-8";

fn response(status: u16, content_type: &str, body: &str, head_only: bool) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Internal Server Error",
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(body.as_bytes());
    }
    out
}
