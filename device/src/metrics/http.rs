//! A small, bounded HTTP/1.1 server for the metrics endpoint: one thread polls the listener and
//! every connection, `httparse` reads each request head, one answer per connection, then the
//! connection is shut down for writing and closed once the client closed its side (or after
//! [`LINGER`]). Bounded everywhere an outsider could push: a request head of at most
//! [`MAX_HEAD`] bytes (431 beyond), at most [`MAX_CONNECTIONS`] connections (beyond, the oldest
//! one that is not being answered goes), [`IDLE`] without progress and [`LIFETIME`] in all.
//! Idle or slow clients cost a descriptor and a buffer each, never a thread, and never hold up
//! another client's answer.
//!
//! (tiny_http, tried first, bounds none of these: a header line grows without limit, each
//! connection takes a thread, and its accept thread ends at the first accept error.)

use nix::poll::{PollFd, PollFlags, PollTimeout};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The largest request head that the server reads, request line and headers together.
pub(crate) const MAX_HEAD: usize = 16 << 10;
/// The most connections that the server keeps at once.
pub(crate) const MAX_CONNECTIONS: usize = 64;
/// How long a connection may make no progress.
pub(crate) const IDLE: Duration = Duration::from_secs(10);
/// How long a connection may last in all. A client that sends one byte every few seconds makes
/// progress, so `IDLE` alone would never end its connection.
pub(crate) const LIFETIME: Duration = Duration::from_secs(30);
/// How long an answered connection waits for its client to close. Closing a socket that still has
/// unread input would reset the connection, and the client could lose the answer.
const LINGER: Duration = Duration::from_secs(1);
/// The most connections accepted per round of the loop. The others wait in the listener's
/// backlog.
const ACCEPT_PER_ROUND: usize = 64;
/// How often, in milliseconds, the loop checks whether it should stop.
const TICK: u16 = 200;

/// The parts of a request that the answer depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub method: String,
    pub path: String,
    pub accept: String,
}

/// An answer: status, content type, body.
pub(crate) type Answer = (u16, &'static str, String);

/// The phase that a connection is in.
enum Phase {
    /// Reading the request head.
    Reading(Vec<u8>),
    /// Writing the answer. Holds the answer's bytes and how many of them were written.
    Writing(Vec<u8>, usize),
    /// Answered. The server waits for the client to close, and discards any input.
    Closing,
}

struct Connection {
    stream: TcpStream,
    phase: Phase,
    accepted: Instant,
    since: Instant,
}

impl Connection {
    fn expired(&self, now: Instant) -> bool {
        let idle = if matches!(self.phase, Phase::Closing) { LINGER } else { IDLE };
        now.duration_since(self.since) > idle || now.duration_since(self.accepted) > LIFETIME
    }
}

/// Serves `listener` until `stop` is set, and answers each request with `answer`.
pub(crate) fn serve(listener: TcpListener, stop: &AtomicBool, answer: impl Fn(&Request) -> Answer) {
    if let Err(e) = listener.set_nonblocking(true) {
        log::error!("metrics: cannot serve: {e}");
        return;
    }
    let mut conns: Vec<Connection> = Vec::new();
    // After a failed accept (for example, when the process is out of descriptors), the loop leaves
    // the listener alone for a moment. The pending connection keeps the listener readable, so
    // polling it would spin.
    let mut accept_after = Instant::now();
    let mut accept_failing = false;
    while !stop.load(Ordering::Relaxed) {
        let (listener_ready, ready) = {
            let listen = if Instant::now() >= accept_after { PollFlags::POLLIN } else { PollFlags::empty() };
            let mut fds = vec![PollFd::new(listener.as_fd(), listen)];
            fds.extend(conns.iter().map(|c| {
                let want = if matches!(c.phase, Phase::Writing(..)) { PollFlags::POLLOUT } else { PollFlags::POLLIN };
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
        let now = Instant::now();
        let keep: Vec<bool> = ready
            .iter()
            .zip(conns.iter_mut())
            .map(|(&r, c)| if r { progress(c, &answer) } else { !c.expired(now) })
            .collect();
        let mut i = 0;
        conns.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        if listener_ready {
            match accept_some(&listener, &mut conns) {
                Ok(()) => accept_failing = false,
                Err(e) => {
                    // Log the failure once per episode of failures, not five times a second.
                    if !std::mem::replace(&mut accept_failing, true) {
                        log::warn!("metrics: cannot accept connections: {e}");
                    }
                    accept_after = Instant::now() + Duration::from_millis(u64::from(TICK));
                }
            }
        }
    }
}

/// Accepts up to [`ACCEPT_PER_ROUND`] pending connections. Beyond [`MAX_CONNECTIONS`], the oldest
/// connection that is not being answered is closed to make room. If every connection is being
/// answered, the new connection is closed instead.
fn accept_some(listener: &TcpListener, conns: &mut Vec<Connection>) -> io::Result<()> {
    for _ in 0..ACCEPT_PER_ROUND {
        match listener.accept() {
            Ok((stream, _)) => {
                if stream.set_nonblocking(true).is_err() {
                    continue;
                }
                let _ = stream.set_nodelay(true);
                if conns.len() >= MAX_CONNECTIONS {
                    match conns.iter().position(|c| !matches!(c.phase, Phase::Writing(..))) {
                        Some(oldest) => drop(conns.remove(oldest)),
                        None => continue,
                    }
                }
                let now = Instant::now();
                conns.push(Connection { stream, phase: Phase::Reading(Vec::new()), accepted: now, since: now });
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads or writes what `c` is ready for. Returns false when the connection is finished: answered
/// and closed by its client, gone, or expired.
fn progress(c: &mut Connection, answer: &impl Fn(&Request) -> Answer) -> bool {
    let now = Instant::now();
    if c.expired(now) {
        return false;
    }
    match &mut c.phase {
        Phase::Writing(out, written) => match c.stream.write(&out[*written..]) {
            Ok(n) => {
                *written += n;
                c.since = now;
                if *written == out.len() {
                    let _ = c.stream.shutdown(Shutdown::Write);
                    c.phase = Phase::Closing;
                }
                true
            }
            Err(e) => e.kind() == io::ErrorKind::WouldBlock,
        },
        Phase::Closing => {
            let mut sink = [0u8; 4096];
            match c.stream.read(&mut sink) {
                Ok(0) => false,
                Ok(_) => true,
                Err(e) => e.kind() == io::ErrorKind::WouldBlock,
            }
        }
        Phase::Reading(input) => {
            let mut buf = [0u8; 4096];
            match c.stream.read(&mut buf) {
                Ok(0) => return false,
                Ok(n) => {
                    input.extend_from_slice(&buf[..n.min(MAX_HEAD + 1 - input.len().min(MAX_HEAD))]);
                    c.since = now;
                }
                Err(e) => return e.kind() == io::ErrorKind::WouldBlock,
            }
            if let Some(out) = respond(input, answer) {
                c.phase = Phase::Writing(out, 0);
            }
            true
        }
    }
}

/// Returns the response to the request head read so far, or `None` while the head is
/// incomplete.
pub(crate) fn respond(input: &[u8], answer: &impl Fn(&Request) -> Answer) -> Option<Vec<u8>> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let (status, content_type, body, head_only) = match req.parse(input) {
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
            // A collector that panics loses only this answer. The endpoint keeps running.
            let (status, ct, body) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| answer(&r)))
                .unwrap_or_else(|_| {
                    log::error!("metrics: answering {} {} panicked", r.method, r.path);
                    (500, TEXT, "Could not encode the metrics\n".to_owned())
                });
            (status, ct, body, r.method == "HEAD")
        }
        Ok(httparse::Status::Partial) if input.len() <= MAX_HEAD => return None,
        Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
            (431, TEXT, "Request header fields too large\n".to_owned(), false)
        }
        Err(_) => (400, TEXT, "Bad request\n".to_owned(), false),
    };
    Some(response(status, content_type, &body, head_only))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A server on a free loopback port that answers `hello` to every request. Dropping a
    /// `Running` stops the server.
    struct Running {
        addr: std::net::SocketAddr,
        stop: Arc<AtomicBool>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl Running {
        fn start() -> Running {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let stopped = stop.clone();
            let thread = std::thread::spawn(move || serve(listener, &stopped, |_| (200, TEXT, "hello".to_owned())));
            Running { addr, stop, thread: Some(thread) }
        }

        fn ask(&self, request: &[u8]) -> String {
            let mut c = TcpStream::connect(self.addr).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            c.write_all(request).unwrap();
            let mut answer = Vec::new();
            let _ = c.read_to_end(&mut answer);
            String::from_utf8_lossy(&answer).into_owned()
        }
    }

    impl Drop for Running {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            let _ = self.thread.take().map(std::thread::JoinHandle::join);
        }
    }

    #[test]
    fn answers_and_refusals_are_whole_http_responses() {
        let s = Running::start();
        let get = s.ask(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(get.starts_with("HTTP/1.1 200 OK\r\n"), "{get}");
        assert!(get.contains("Content-Length: 5\r\n") && get.contains("Connection: close\r\n"), "{get}");
        assert!(get.ends_with("\r\n\r\nhello"), "{get}");
        let head = s.ask(b"HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(head.contains("Content-Length: 5\r\n") && head.ends_with("\r\n\r\n"), "no body: {head}");
        assert!(s.ask(b"\x00\x01garbage\r\n\r\n").starts_with("HTTP/1.1 400 "));
        let big = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert!(s.ask(big.as_bytes()).starts_with("HTTP/1.1 431 "), "a head past the limit");
        let many: String = (0..100).map(|i| format!("X-{i}: y\r\n")).collect();
        assert!(s.ask(format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes()).starts_with("HTTP/1.1 431 "));
    }

    #[test]
    fn the_oldest_connections_make_room_and_the_newest_is_answered() {
        let s = Running::start();
        let mut idle: Vec<TcpStream> = (0..MAX_CONNECTIONS + 44).map(|_| TcpStream::connect(s.addr).unwrap()).collect();
        assert!(s.ask(b"GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200 "), "answered beside the idle ones");
        // The first idle connections were closed to make room.
        let first = &mut idle[0];
        first.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut b = [0u8; 1];
        assert_eq!(first.read(&mut b).unwrap_or(0), 0, "closed by the server");
    }
}
