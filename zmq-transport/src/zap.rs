//! Who may connect: a ZAP [`Handler`] for the PLAIN mechanism, which accepts the one password
//! that a transport was given. ZAP is ZeroMQ's authentication protocol (RFC 27).
//!
//! A transport serves a password after `LayeredTransport::serve_password`. Its handler then
//! answers, in a thread of its own, the requests that libzmq makes when a peer connects to one of
//! the transport's sockets that asks for PLAIN credentials (see
//! `LayeredSocket::require_password`). The handler lets the peer in when it presents this crate's
//! user name and the password, and refuses it otherwise. A refused peer never sends or receives a
//! single frame. The handler compares the password in constant time, so a peer that times its
//! attempts learns nothing.
//!
//! Without a handler, libzmq refuses every PLAIN peer. So the thread retries after any error, and
//! runs until the transport is dropped.

use crate::vocabulary::error::SocketError;
use std::thread::JoinHandle;

/// The endpoint RFC 27 reserves for the handler.
const ZAP_ENDPOINT: &str = "inproc://zeromq.zap.01";
/// The user name that the transport's sockets present. The handler checks it together with the
/// password.
pub(crate) const USER: &str = "fairmq-rs";

/// A running ZAP handler. Dropping the `Handler` stops its thread and joins it, before the
/// context can end.
pub(crate) struct Handler {
    /// The socket that wakes the thread to stop. Only the dropping thread uses it, behind the
    /// mutex.
    stop: std::sync::Mutex<zmq::Socket>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZapHandler").finish()
    }
}

impl Handler {
    /// Starts the handler of `ctx` for `password`.
    pub(crate) fn start(ctx: &zmq::Context, password: String) -> Result<Handler, SocketError> {
        let create = |source| SocketError::Create { what: "ZAP handler", source };
        let rep = ctx.socket(zmq::REP).map_err(create)?;
        rep.bind(ZAP_ENDPOINT).map_err(create)?;
        // A fixed name works because a context has only one handler, and inproc names are local
        // to their context.
        let name = "inproc://fairmq-rs-zap-stop";
        let stop_rx = ctx.socket(zmq::PAIR).map_err(create)?;
        stop_rx.bind(name).map_err(create)?;
        let stop = ctx.socket(zmq::PAIR).map_err(create)?;
        stop.connect(name).map_err(create)?;
        let thread = std::thread::Builder::new()
            .name("fmq-zap".into())
            .spawn(move || serve(&rep, &stop_rx, &password))
            .map_err(|e| create(zmq::Error::from_raw(e.raw_os_error().unwrap_or(libc::EAGAIN))))?;
        Ok(Handler { stop: std::sync::Mutex::new(stop), thread: Some(thread) })
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        if let Ok(stop) = self.stop.lock() {
            // This send never blocks. If the thread has already ended, no peer is left to take
            // the message, and the send just fails.
            let _ = stop.send("", zmq::DONTWAIT);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answers requests until it is told to stop or the context ends. Any other error, such as a
/// signal that interrupts a call, is retried, because without the handler every peer would be
/// refused.
fn serve(rep: &zmq::Socket, stop: &zmq::Socket, password: &str) {
    loop {
        let mut items = [rep.as_poll_item(zmq::POLLIN), stop.as_poll_item(zmq::POLLIN)];
        match zmq::poll(&mut items, -1) {
            Err(zmq::Error::ETERM) => return,
            Err(_) => continue,
            Ok(_) => {}
        }
        if items[1].is_readable() {
            return;
        }
        if !items[0].is_readable() {
            continue;
        }
        let request = match rep.recv_multipart(zmq::DONTWAIT) {
            Ok(r) => r,
            Err(zmq::Error::ETERM) => return,
            Err(_) => continue,
        };
        let (status, text) = verdict(&request, password);
        let request_id = request.get(1).cloned().unwrap_or_default();
        let reply: [&[u8]; 6] = [b"1.0", &request_id, status.as_bytes(), text.as_bytes(), b"", b""];
        // A reply over inproc does not wait. A failed reply only refuses that one peer.
        if let Err(zmq::Error::ETERM) = rep.send_multipart(reply, 0) {
            return;
        }
    }
}

/// RFC 27's status code and status text for a request. The request's frames are the version,
/// request id, domain, address, identity, mechanism, and the mechanism's credentials (for PLAIN:
/// user name and password).
fn verdict(request: &[Vec<u8>], password: &str) -> (&'static str, &'static str) {
    match request {
        [version, _, _, _, _, mechanism, user, given] if version.as_slice() == b"1.0" => {
            if mechanism.as_slice() != b"PLAIN" {
                ("400", "only PLAIN credentials are accepted")
            } else if user.as_slice() == USER.as_bytes() && constant_time_eq(given, password.as_bytes()) {
                ("200", "OK")
            } else {
                ("400", "not a peer of this session")
            }
        }
        [version, ..] if version.as_slice() != b"1.0" => ("500", "unsupported ZAP version"),
        _ => ("400", "malformed ZAP request"),
    }
}

/// Compares `a` and `b` without stopping at the first difference, so that a peer that times its
/// attempts learns nothing.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(mechanism: &str, user: &str, password: &str) -> Vec<Vec<u8>> {
        ["1.0", "7", "", "127.0.0.1", "", mechanism, user, password].iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn only_the_password_of_the_transport_gets_in() {
        assert_eq!(verdict(&request("PLAIN", USER, "secret"), "secret").0, "200");
        assert_eq!(verdict(&request("PLAIN", USER, "secreT"), "secret").0, "400");
        assert_eq!(verdict(&request("PLAIN", USER, "secret2"), "secret").0, "400");
        assert_eq!(verdict(&request("PLAIN", "someone", "secret"), "secret").0, "400");
        assert_eq!(verdict(&request("CURVE", USER, "secret"), "secret").0, "400");
        assert_eq!(verdict(&request("PLAIN", USER, "secret")[..7], "secret").0, "400");
        let mut old = request("PLAIN", USER, "secret");
        old[0] = b"0.9".to_vec();
        assert_eq!(verdict(&old, "secret").0, "500");
    }
}
