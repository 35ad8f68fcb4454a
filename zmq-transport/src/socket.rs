//! Sockets of the zeromq transport: [`Socket`].
//!
//! A [`Socket`] wraps one libzmq socket, made by `Transport::socket`. Its id,
//! `<transport id>.<channel name>.<type>`, is also its ZeroMQ identity. A new socket gets FairMQ's
//! creation defaults: a linger of 1000 ms, and a SUB socket subscribes to everything.
//! [`Socket::set_options`] then applies a channel's own options.
//!
//! # Attaching
//!
//! [`Socket::bind`] and [`Socket::connect`] take one endpoint as given. [`Socket::attach`] takes a
//! channel address, as FairMQ does:
//!
//! - It validates every endpoint before it attaches any, so a bad list leaves the socket untouched.
//! - It binds or connects each endpoint by its modifier (`@`, `+`, `>`), or else by the channel's
//!   method.
//! - It resolves a tcp host to its first IPv4 address.
//! - When a tcp bind fails because the port is taken, it retries random ports of the channel's
//!   range (auto-bind).
//! - It returns the address as attached, in FairMQ's form. So the caller can write the bound port
//!   back to its configuration.
//!
//! # Transfers
//!
//! [`Socket::send`] and [`Socket::receive`] move one frame. [`Socket::send_parts`] and
//! [`Socket::receive_parts`] move one multipart.
//!
//! - A transfer uses libzmq's own blocking call, bounded by the socket's send or receive timeout.
//!   The vendored libzmq also ends that wait when the transport's interrupt descriptor becomes
//!   readable (`ZMQ_FAIRMQ_WAKE_FD`). So a blocked call waits in one poll, as libzmq's does, and
//!   still returns at once on an interrupt.
//! - libzmq times out by a coarse clock. A wait that ends before the deadline goes on for the time
//!   that is left, so no transfer gives up early. A signal that ends a wait does the same.
//! - While the transport is interrupted, a transfer makes one attempt that does not wait.
//! - A failed send leaves the message with the caller. A failed receive leaves the message as it
//!   was, because the receive goes into a fresh frame first.
//! - A multipart leaves whole: the send waits, or fails, only before the first frame. When the
//!   peer goes away in the middle, the rest of the message is lost, and the socket logs a warning.
//!
//! # Counting
//!
//! - Each successful transfer adds to the socket's counters ([`Socket::counters`]). A multipart
//!   counts once.
//! - [`Socket::number_of_connected_peers`] gets the socket's peer count from the transport's
//!   monitor thread ([`Monitors`]).
//!
//! The socket also implements [`Uncounted`] and [`LayeredSocket`], for a transport layered on it.

use crate::layered::{sealed::Sealed, LayeredSocket, Uncounted};
use crate::message::Message;
use crate::monitor::{Monitors, PeerCount};
use crate::part::{Held, Part};
use crate::sys::{self, RawMsg, SockPtr};
use crate::vocabulary::counters::{CounterSnapshot, Counters};
use crate::vocabulary::endpoint::{resolve_tcp, split_endpoints, with_port, Method, Protocol};
use crate::vocabulary::error::{SocketError, TransferError, TransferResult};
use crate::vocabulary::interrupt::{ms_until, Interrupter};
use crate::vocabulary::options::{AttachOptions, SocketOptions};
use crate::vocabulary::socket_type::SocketType;
use crate::vocabulary::timeout::Timeout;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The routing id prefix a router gives the peers of its connects, and the ids given so far.
type ConnectNames = (Vec<u8>, Vec<Vec<u8>>);

/// A socket of the zeromq transport.
///
/// Not `Sync`: like a ZeroMQ socket it is used by one thread at a time (it may move between threads).
/// [`counters`](Socket::counters) can be read from other threads through
/// [`shared_counters`](Socket::shared_counters).
///
/// # Examples
///
/// A request and its reply between REQ and REP sockets, and a send that gives up after its
/// timeout (a PUSH nobody receives from).
///
/// ```
/// use fairmq_zmq::{Message, SocketType, TransferError, Transport};
///
/// let t = Transport::new("doc")?;
/// let rep = t.socket(SocketType::Rep, "server")?;
/// let req = t.socket(SocketType::Req, "client")?;
/// rep.bind("inproc://doc-req-rep")?;
/// req.connect("inproc://doc-req-rep")?;
///
/// req.send(&mut Message::from_slice(b"ping"), 1000)?;
/// let mut request = Message::new();
/// rep.receive(&mut request, 1000)?;
/// assert_eq!(request.data(), b"ping");
/// rep.send(&mut Message::from_slice(b"pong"), 1000)?;
/// let mut reply = Message::new();
/// assert_eq!(req.receive(&mut reply, 1000)?, 4, "bytes received");
/// assert_eq!(reply.data(), b"pong");
///
/// let lonely = t.socket(SocketType::Push, "nobody")?;
/// lonely.bind("inproc://doc-nobody")?;
/// assert!(matches!(lonely.send(&mut Message::from_slice(b"x"), 10), Err(TransferError::Timeout)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Socket {
    zsock: zmq::Socket,
    ptr: SockPtr,
    /// The send and receive timeouts last set on the libzmq socket (ms, -1: none).
    timeouts: std::cell::Cell<(i32, i32)>,
    /// Endpoints bound and connected so far.
    endpoints: std::cell::Cell<(u32, u32)>,
    /// A router that names its connected peers: the prefix, and the ids given so far.
    connect_names: std::cell::RefCell<Option<ConnectNames>>,
    /// `ZMQ_SNDHWM` as last set (only [`Socket::set_snd_buf_size`] sets it): the shm transport
    /// asks for it on every send.
    snd_hwm: std::cell::Cell<i32>,
    /// The password endpoints bound from now on ask of peers, and endpoints connected present.
    password: std::cell::RefCell<Option<String>>,
    id: String,
    ty: SocketType,
    interrupter: Arc<Interrupter>,
    counters: Arc<Counters>,
    /// Its count of connected peers, kept by the transport's monitor thread (and its watch id).
    peers: (Arc<Monitors>, u64, PeerCount),
}

impl Drop for Socket {
    fn drop(&mut self) {
        // Monitoring stops before the reader goes: libzmq's I/O thread sends monitor events with a
        // blocking send, and an event for a reader that is gone (the socket's closing
        // disconnections) stalled the I/O thread, and with it every socket of the transport.
        sys::stop_monitor(self.ptr);
        self.peers.0.forget(self.peers.1);
    }
}

impl std::fmt::Debug for Socket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Socket").field("id", &self.id).field("type", &self.ty).finish()
    }
}

/// Which way a transfer goes (for its timeout option).
#[derive(Clone, Copy)]
enum Dir {
    Send,
    Receive,
}

/// What became of a frame after the first of a multipart.
enum Rest {
    /// Queued for the peer.
    Sent,
    /// The peer went away mid-message: libzmq took the frame and dropped it.
    Dropped,
    /// The peer went away mid-message and nothing can be sent any more.
    NoPeer,
}

fn opt<T>(option: &'static str, r: zmq::Result<T>) -> Result<T, SocketError> {
    r.map_err(|source| SocketError::Option { option, source })
}

impl Socket {
    pub(crate) fn new(
        ctx: &zmq::Context,
        interrupter: Arc<Interrupter>,
        monitors: &Arc<Monitors>,
        ty: SocketType,
        id: String,
    ) -> Result<Socket, SocketError> {
        let mut zsock = ctx.socket(ty.to_zmq()).map_err(|source| SocketError::Create { what: "socket", source })?;
        // FairMQ's creation defaults; a channel then applies its own options (`set_options`).
        opt("ZMQ_IDENTITY", zsock.set_identity(id.as_bytes()))?;
        opt("ZMQ_LINGER", zsock.set_linger(1000))?;
        if ty == SocketType::Sub {
            opt("ZMQ_SUBSCRIBE", zsock.set_subscribe(b""))?;
        }
        let ptr = SockPtr::of(&mut zsock);
        // Blocking calls on this socket end when the transport is interrupted (vendored libzmq).
        sys::set_wake_fd(ptr, interrupter.raw_fd())
            .map_err(|source| SocketError::Option { option: "ZMQ_FAIRMQ_WAKE_FD", source })?;
        log::debug!("Created socket {id}");
        let snd_hwm = std::cell::Cell::new(opt("ZMQ_SNDHWM", zsock.get_sndhwm())?);
        let (watch, count) = monitors.watch(ctx, &zsock)?;
        Ok(Socket {
            zsock,
            snd_hwm,
            ptr,
            timeouts: std::cell::Cell::new((-1, -1)),
            endpoints: std::cell::Cell::new((0, 0)),
            connect_names: std::cell::RefCell::new(None),
            password: std::cell::RefCell::new(None),
            id,
            ty,
            interrupter,
            counters: Arc::default(),
            peers: (monitors.clone(), watch, count),
        })
    }

    /// How many peers are connected now (FairMQ's `GetNumberOfConnectedPeers`): connections made
    /// and accepted, less those that ended, as ZeroMQ's monitor reported them by the time of the
    /// call (a peer whose message was received is counted; one that left a moment ago may still be).
    pub fn number_of_connected_peers(&self) -> u64 {
        self.peers.0.sync();
        self.peers.2.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `<transport id>.<channel name>.<type>`, also the ZeroMQ identity.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The socket pattern.
    pub fn socket_type(&self) -> SocketType {
        self.ty
    }

    /// Applies a channel's options: linger and queue sizes always, kernel sizes only when non-zero.
    pub fn set_options(&self, o: &SocketOptions) -> Result<(), SocketError> {
        self.set_linger(o.linger)?;
        self.set_snd_buf_size(o.snd_buf_size)?;
        self.set_rcv_buf_size(o.rcv_buf_size)?;
        if o.snd_kernel_size != 0 {
            self.set_snd_kernel_size(o.snd_kernel_size)?;
        }
        if o.rcv_kernel_size != 0 {
            self.set_rcv_kernel_size(o.rcv_kernel_size)?;
        }
        Ok(())
    }

    /// The options [`set_options`](Socket::set_options) applies, as the socket has them now.
    pub fn options(&self) -> Result<SocketOptions, SocketError> {
        Ok(SocketOptions {
            linger: self.linger()?,
            snd_buf_size: self.snd_buf_size()?,
            rcv_buf_size: self.rcv_buf_size()?,
            snd_kernel_size: self.snd_kernel_size()?,
            rcv_kernel_size: self.rcv_kernel_size()?,
        })
    }

    /// `ZMQ_LINGER`, ms.
    pub fn set_linger(&self, ms: i32) -> Result<(), SocketError> {
        opt("ZMQ_LINGER", self.zsock.set_linger(ms))
    }
    /// `ZMQ_LINGER`, ms.
    pub fn linger(&self) -> Result<i32, SocketError> {
        opt("ZMQ_LINGER", self.zsock.get_linger())
    }
    /// `ZMQ_SNDHWM`, messages.
    pub fn set_snd_buf_size(&self, n: i32) -> Result<(), SocketError> {
        opt("ZMQ_SNDHWM", self.zsock.set_sndhwm(n))?;
        self.snd_hwm.set(n);
        Ok(())
    }
    /// `ZMQ_SNDHWM`, messages.
    pub fn snd_buf_size(&self) -> Result<i32, SocketError> {
        Ok(self.snd_hwm.get())
    }
    /// `ZMQ_RCVHWM`, messages.
    pub fn set_rcv_buf_size(&self, n: i32) -> Result<(), SocketError> {
        opt("ZMQ_RCVHWM", self.zsock.set_rcvhwm(n))
    }
    /// `ZMQ_RCVHWM`, messages.
    pub fn rcv_buf_size(&self) -> Result<i32, SocketError> {
        opt("ZMQ_RCVHWM", self.zsock.get_rcvhwm())
    }
    /// `ZMQ_SNDBUF`, bytes.
    pub fn set_snd_kernel_size(&self, n: i32) -> Result<(), SocketError> {
        opt("ZMQ_SNDBUF", self.zsock.set_sndbuf(n))
    }
    /// `ZMQ_SNDBUF`, bytes.
    pub fn snd_kernel_size(&self) -> Result<i32, SocketError> {
        opt("ZMQ_SNDBUF", self.zsock.get_sndbuf())
    }
    /// `ZMQ_RCVBUF`, bytes.
    pub fn set_rcv_kernel_size(&self, n: i32) -> Result<(), SocketError> {
        opt("ZMQ_RCVBUF", self.zsock.set_rcvbuf(n))
    }
    /// `ZMQ_RCVBUF`, bytes.
    pub fn rcv_kernel_size(&self) -> Result<i32, SocketError> {
        opt("ZMQ_RCVBUF", self.zsock.get_rcvbuf())
    }

    /// Binds one endpoint as given (no auto-bind).
    pub fn bind(&self, address: &str) -> Result<(), SocketError> {
        if self.password.borrow().is_some() {
            opt("ZMQ_PLAIN_SERVER", self.zsock.set_plain_server(true))?;
        }
        self.zsock.bind(address).map_err(|source| SocketError::Bind {
            socket: self.id.clone(),
            address: address.to_owned(),
            source,
        })?;
        let (b, c) = self.endpoints.get();
        self.endpoints.set((b + 1, c));
        Ok(())
    }

    /// Connects one endpoint as given.
    pub fn connect(&self, address: &str) -> Result<(), SocketError> {
        let named = self.connect_names.borrow().as_ref().map(|(prefix, ids)| {
            let mut id = prefix.clone();
            id.extend_from_slice(ids.len().to_string().as_bytes());
            id
        });
        if let Some(id) = &named {
            sys::set_connect_routing_id(self.ptr, id)
                .map_err(|source| SocketError::Option { option: "ZMQ_CONNECT_ROUTING_ID", source })?;
        }
        if let Some(password) = self.password.borrow().as_deref() {
            // The user name makes the socket a PLAIN client (no longer a server) for this endpoint.
            opt("ZMQ_PLAIN_USERNAME", self.zsock.set_plain_username(Some(crate::zap::USER)))?;
            opt("ZMQ_PLAIN_PASSWORD", self.zsock.set_plain_password(Some(password)))?;
        }
        self.zsock.connect(address).map_err(|source| SocketError::Connect {
            socket: self.id.clone(),
            address: address.to_owned(),
            source,
        })?;
        let (b, c) = self.endpoints.get();
        self.endpoints.set((b, c + 1));
        if let (Some(id), Some((_, ids))) = (named, self.connect_names.borrow_mut().as_mut()) {
            ids.push(id);
        }
        Ok(())
    }

    /// Attaches a channel address: every endpoint is validated, bound or connected (by its modifier,
    /// else the channel's method), tcp hosts are resolved to IPv4, and a tcp bind that fails because the
    /// port is taken retries random ports of the range (auto-bind). Returns the address as attached, in
    /// FairMQ's form (`@`/`+` kept where the original had a modifier, `,` between endpoints), so the
    /// caller can write the bound port back to its configuration.
    pub fn attach(&self, address: &str, o: &AttachOptions) -> Result<String, SocketError> {
        // Check every endpoint before attaching any, so a bad list leaves the socket untouched.
        crate::vocabulary::endpoint::validate_address(address)?;
        let mut attached = Vec::new();
        for ep in split_endpoints(address) {
            let protocol = ep.validate()?;
            let method = ep.method(o.method).ok_or_else(|| SocketError::InvalidMethod {
                method: "unspecified".to_owned(),
                endpoint: ep.address.to_owned(),
            })?;
            let resolved = resolve_tcp(ep.address)?;
            let actual = match method {
                Method::Bind => self.bind_auto(&resolved, protocol, o)?,
                Method::Connect => {
                    self.connect(&resolved)?;
                    resolved
                }
            };
            log::debug!("Attached socket {} to {actual} ({method})", self.id);
            attached.push(match ep.modifier {
                Some(Method::Bind) => format!("@{actual}"),
                Some(Method::Connect) => format!("+{actual}"),
                None => actual,
            });
        }
        Ok(attached.join(","))
    }

    fn bind_auto(&self, address: &str, protocol: Protocol, o: &AttachOptions) -> Result<String, SocketError> {
        let err = match self.bind(address) {
            Ok(()) => return Ok(self.bound_address(address)),
            Err(e) => e,
        };
        let retryable = matches!(&err, SocketError::Bind { source: zmq::Error::EADDRINUSE | zmq::Error::EACCES, .. });
        if protocol != Protocol::Tcp || !o.auto_bind || !retryable {
            return Err(err);
        }
        let (min, max) = (o.port_range_min, o.port_range_max);
        if min > max {
            return Err(SocketError::InvalidPortRange { min, max });
        }
        log::debug!("Could not bind to configured (TCP) port ({address}), trying random port in range {min}-{max}");
        let span = u64::from(max - min) + 1;
        let seed = RandomState::new();
        for attempt in 0..AttachOptions::AUTO_BIND_ATTEMPTS {
            let mut h = seed.build_hasher();
            h.write_u32(attempt);
            let port = min + (h.finish() % span) as u16;
            let candidate = with_port(address, port);
            if self.bind(&candidate).is_ok() {
                return Ok(candidate);
            }
        }
        log::error!(
            "could not bind to any (TCP) port in the given range after {} attempts",
            AttachOptions::AUTO_BIND_ATTEMPTS
        );
        Err(SocketError::AutoBindExhausted { min, max, attempts: AttachOptions::AUTO_BIND_ATTEMPTS })
    }

    /// For a wildcard port (`*` or 0) the port the kernel chose; otherwise the address as bound.
    fn bound_address(&self, address: &str) -> String {
        let wildcard = address.ends_with(":*") || address.ends_with(":0");
        if address.starts_with("tcp://") && wildcard {
            if let Ok(Ok(last)) = self.zsock.get_last_endpoint() {
                if let Some((_, port)) = last.rsplit_once(':') {
                    if let Ok(port) = port.parse::<u16>() {
                        return with_port(address, port);
                    }
                }
            }
        }
        address.to_owned()
    }

    /// Sends one message (one ZeroMQ frame). `timeout` (a [`Timeout`]: FairMQ's ms or a
    /// `Duration`): -1 (any negative) waits until done or interrupted, 0 does not wait, N waits at
    /// most N ms. On success the message is empty and the
    /// result is its size; on any error the caller keeps the message unchanged.
    pub fn send(&self, msg: &mut Message, timeout: impl Into<Timeout>) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        let size = msg.size();
        self.transfer(Dir::Send, timeout_ms, |flags| sys::msg_send(&mut msg.raw, self.ptr, flags))?;
        msg.after_send();
        self.counters.record_tx(size);
        Ok(size)
    }

    /// Receives one frame into `msg` (its old content is released). Returns the size received.
    /// On any error `msg` is left as it was (libzmq would clear it, so we receive into a fresh frame).
    pub fn receive(&self, msg: &mut Message, timeout: impl Into<Timeout>) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        let mut frame = RawMsg::empty();
        self.transfer(Dir::Receive, timeout_ms, |flags| sys::msg_recv(&mut frame, self.ptr, flags))?;
        msg.raw = frame;
        msg.after_receive();
        let size = msg.size();
        self.counters.record_rx(size);
        Ok(size)
    }

    /// Sends one frame like [`send`](Socket::send) but without counting it (see
    /// [`crate::layered::Uncounted`]).
    pub(crate) fn send_frame(&self, frame: &mut Message, timeout_ms: i32) -> Result<(), TransferError> {
        self.transfer(Dir::Send, timeout_ms, |flags| sys::msg_send(&mut frame.raw, self.ptr, flags))?;
        frame.after_send();
        Ok(())
    }

    /// Receives one frame like [`receive`](Socket::receive) but without counting it.
    pub(crate) fn receive_frame(&self, frame: &mut Message, timeout_ms: i32) -> Result<(), TransferError> {
        let mut raw = RawMsg::empty();
        self.transfer(Dir::Receive, timeout_ms, |flags| sys::msg_recv(&mut raw, self.ptr, flags))?;
        frame.raw = raw;
        Ok(())
    }

    /// Sends a multipart message: one ZeroMQ multipart, frame for frame. All parts leave atomically:
    /// the call waits (or fails) only before the first frame. Empty multiparts are refused.
    pub fn send_parts(&self, parts: &mut [Message], timeout: impl Into<Timeout>) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        self.send_held(parts, timeout_ms)
    }

    /// [`send_parts`](Socket::send_parts) of a caller's own messages that hold ours (see
    /// [`Part`]): each part's message is asked for once; a multipart with a part that holds none
    /// is refused whole, with an error.
    pub fn send_parts_of<P: Part>(&self, parts: &mut [P], timeout: impl Into<Timeout>) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        // On the stack for the usual few parts: no allocation per send.
        let mut held: smallvec::SmallVec<[&mut Message; 16]> = smallvec::SmallVec::with_capacity(parts.len());
        for p in parts.iter_mut() {
            held.push(p.as_zmq_mut().ok_or_else(|| TransferError::Transport("a part is not a zeromq message".into()))?);
        }
        self.send_held(&mut held, timeout_ms)
    }

    fn send_held<P: Held>(&self, parts: &mut [P], timeout_ms: i32) -> TransferResult {
        if let [single] = parts {
            return self.send(single.msg_mut(), timeout_ms);
        }
        let total: usize = parts.iter_mut().map(|p| p.msg_mut().size()).sum();
        self.send_frames(parts, timeout_ms)?;
        self.counters.record_tx(total);
        Ok(total)
    }

    /// Sends frames as one multipart without counting them; one frame is sent as a plain frame.
    pub(crate) fn send_frames<P: Held>(&self, parts: &mut [P], timeout_ms: i32) -> Result<(), TransferError> {
        let (first, rest) = match parts {
            [] => return Err(TransferError::EmptyMultipart),
            [single] => return self.send_frame(single.msg_mut(), timeout_ms),
            [first, rest @ ..] => (first.msg_mut(), rest),
        };
        self.transfer(Dir::Send, timeout_ms, |flags| sys::msg_send(&mut first.raw, self.ptr, flags | zmq::SNDMORE))?;
        let n = rest.len();
        let mut lost = false;
        for i in 0..n {
            let more = if i + 1 < n { zmq::SNDMORE } else { 0 };
            let frame = rest[i].msg_mut();
            match self.send_rest(i + 1 == n, |flags| sys::msg_send(&mut frame.raw, self.ptr, flags | more))? {
                Rest::Sent => {}
                Rest::Dropped => lost = true,
                Rest::NoPeer => {
                    lost = true;
                    rest[i..].iter_mut().for_each(|p| p.msg_mut().rebuild());
                    break;
                }
            }
        }
        if lost {
            log::warn!("socket {}: the peer went away in the middle of a multipart message: it is lost", self.id);
        }
        Ok(())
    }

    /// Hands a frame after the first of a multipart to libzmq without waiting. Its queue limit
    /// counts whole messages, so once the first frame went through the rest are taken at once;
    /// libzmq refuses one only when the peer's pipe died mid-message. A load-balancing socket (push,
    /// dealer, req) then drops the rest of the message: frames with more to come are taken and
    /// discarded when offered again, and a refused last frame must not be offered again (it would
    /// go to another peer as a message of its own). A pair socket has no pipe left at all.
    fn send_rest(
        &self,
        last: bool,
        mut attempt: impl FnMut(i32) -> Result<(), zmq::Error>,
    ) -> Result<Rest, TransferError> {
        let refused = |e: zmq::Error| matches!(e, zmq::Error::EAGAIN | zmq::Error::EINTR);
        match attempt(zmq::DONTWAIT) {
            Ok(()) => Ok(Rest::Sent),
            Err(e) if refused(e) && last => Ok(Rest::Dropped),
            Err(e) if refused(e) => match attempt(zmq::DONTWAIT) {
                Ok(()) => Ok(Rest::Dropped),
                Err(e) if refused(e) => Ok(Rest::NoPeer),
                Err(e) => Err(self.failed(e)),
            },
            Err(e) => Err(self.failed(e)),
        }
    }

    /// Receives every frame of one multipart without counting them, appended to `parts`.
    /// Each made a `T` by `wrap` (see [`Socket::receive_parts_into`]); their total size.
    pub(crate) fn receive_frames<T>(
        &self,
        parts: &mut Vec<T>,
        wrap: fn(Message) -> T,
        timeout_ms: i32,
    ) -> Result<usize, TransferError> {
        let mut frame = Message::new();
        self.transfer(Dir::Receive, timeout_ms, |flags| sys::msg_recv(&mut frame.raw, self.ptr, flags))?;
        let (start, mut total) = (parts.len(), 0);
        loop {
            let more = frame.raw.more();
            total += frame.size();
            parts.push(wrap(frame));
            if !more {
                return Ok(total);
            }
            frame = Message::new();
            if let Err(e) = self.complete(zmq::POLLIN, |flags| sys::msg_recv(&mut frame.raw, self.ptr, flags)) {
                // Only a socket that is going fails here: what came of the multipart goes too.
                parts.truncate(start);
                return Err(e);
            }
        }
    }

    /// Receives a multipart message and appends its parts to `parts`. Returns the total size.
    pub fn receive_parts(&self, parts: &mut Vec<Message>, timeout: impl Into<Timeout>) -> TransferResult {
        self.receive_parts_into(parts, std::convert::identity, timeout)
    }

    /// Receives a multipart message and appends its parts to `parts`, each made a `T` by `wrap`:
    /// a caller's own message type (a device's) holds them where they land, with no vector of
    /// ours in between (`wrap` runs inside the receive: it must not use this socket). Returns the
    /// total size. On error `parts` is as it was.
    pub fn receive_parts_into<T>(
        &self,
        parts: &mut Vec<T>,
        wrap: fn(Message) -> T,
        timeout: impl Into<Timeout>,
    ) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        let total = self.receive_frames(parts, wrap, timeout_ms)?;
        self.counters.record_rx(total);
        Ok(total)
    }

    /// One transfer with FairMQ's timeout semantics. Not interrupted: libzmq's own blocking call,
    /// bounded by the socket's send or receive timeout (set to `timeout_ms` for this call). The
    /// vendored libzmq also ends that wait, with EINTR, when the interrupter's descriptor becomes
    /// readable (`sys::set_wake_fd`), so a blocked call waits exactly as libzmq's does (one poll)
    /// and still returns promptly on `interrupt()`. Interrupted: one attempt that does not wait.
    #[inline]
    fn transfer(
        &self,
        dir: Dir,
        timeout_ms: i32,
        mut attempt: impl FnMut(i32) -> Result<(), zmq::Error>,
    ) -> Result<(), TransferError> {
        if timeout_ms == 0 || self.interrupter.is_interrupted() {
            return self.at_once(timeout_ms, &mut attempt);
        }
        self.set_timeout(dir, timeout_ms)?;
        let deadline = (timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(timeout_ms as u64));
        loop {
            match attempt(0) {
                Ok(()) => return Ok(()),
                // libzmq times out by a coarse clock (a few ms per tick): a wait that ended before
                // the deadline goes on for what is left, so no transfer gives up early.
                Err(zmq::Error::EAGAIN) => self.wait_until(dir, deadline.ok_or(TransferError::Timeout)?)?,
                Err(zmq::Error::EINTR) if self.interrupter.is_interrupted() => {
                    // A transfer that can complete at once still completes while interrupted.
                    return self.at_once(timeout_ms, &mut attempt);
                }
                // A signal: go on with the time that is left.
                Err(zmq::Error::EINTR) => {
                    if let Some(d) = deadline {
                        self.wait_until(dir, d)?;
                    }
                }
                Err(e) => return Err(self.failed(e)),
            }
        }
    }

    /// The next wait of a transfer lasts until `deadline` (a timeout once it passed).
    fn wait_until(&self, dir: Dir, deadline: Instant) -> Result<(), TransferError> {
        let left = ms_until(deadline).ok_or(TransferError::Timeout)?;
        self.set_timeout(dir, i32::try_from(left).unwrap_or(i32::MAX))
    }

    /// One attempt that does not wait: what cannot be done now is a timeout (`timeout_ms` 0) or
    /// an interruption.
    #[cold]
    fn at_once(
        &self,
        timeout_ms: i32,
        attempt: &mut impl FnMut(i32) -> Result<(), zmq::Error>,
    ) -> Result<(), TransferError> {
        match attempt(zmq::DONTWAIT) {
            Ok(()) => Ok(()),
            Err(zmq::Error::EAGAIN | zmq::Error::EINTR) if self.interrupter.is_interrupted() => {
                Err(TransferError::Interrupted)
            }
            Err(zmq::Error::EAGAIN | zmq::Error::EINTR) if timeout_ms == 0 => Err(TransferError::Timeout),
            // Interrupted when the call began, resumed since: still an interruption.
            Err(zmq::Error::EAGAIN | zmq::Error::EINTR) => Err(TransferError::Interrupted),
            Err(e) => Err(self.failed(e)),
        }
    }

    /// Sets `ZMQ_SNDTIMEO` or `ZMQ_RCVTIMEO` (negative: no limit) unless it already has that value.
    /// Inlined across crates, as every helper of a transfer: the transfers are generic over their
    /// timeout, so they are compiled in the caller's crate.
    #[inline]
    fn set_timeout(&self, dir: Dir, ms: i32) -> Result<(), TransferError> {
        let ms = ms.max(-1);
        let (send, receive) = self.timeouts.get();
        let r = match dir {
            Dir::Send if send != ms => self.zsock.set_sndtimeo(ms).map(|()| self.timeouts.set((ms, receive))),
            Dir::Receive if receive != ms => self.zsock.set_rcvtimeo(ms).map(|()| self.timeouts.set((send, ms))),
            _ => Ok(()),
        };
        r.map_err(|e| self.failed(e))
    }

    /// The remaining frames of a received multipart: libzmq delivers whole messages, so they are
    /// there once the first frame is; they are taken regardless of timeout or interruption.
    fn complete(
        &self,
        events: zmq::PollEvents,
        mut attempt: impl FnMut(i32) -> Result<(), zmq::Error>,
    ) -> Result<(), TransferError> {
        loop {
            match attempt(zmq::DONTWAIT) {
                Ok(()) => return Ok(()),
                Err(zmq::Error::EAGAIN | zmq::Error::EINTR) => {
                    let _ = self.zsock.poll(events, 100);
                }
                Err(e) => return Err(self.failed(e)),
            }
        }
    }

    #[cold]
    fn failed(&self, e: zmq::Error) -> TransferError {
        if e == zmq::Error::ETERM {
            log::debug!("Terminating socket {}", self.id);
        } else if e == zmq::Error::EHOSTUNREACH {
            // Only a router that must route (the shared-memory publisher) gets it: its peer left,
            // an expected event.
            log::debug!("socket {}: the peer left (errno {}, {})", self.id, e.to_raw(), e.message());
        } else {
            log::error!("Failed transfer on socket {}, errno: {}, reason: {}", self.id, e.to_raw(), e.message());
        }
        TransferError::Zmq(e)
    }

    /// Messages and bytes moved so far.
    pub fn counters(&self) -> CounterSnapshot {
        self.counters.snapshot()
    }

    /// The counters themselves, for reading from another thread.
    pub fn shared_counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// Poll item for this socket with the events its type supports (for [`Poller`](crate::Poller)).
    pub(crate) fn poll_item(&self) -> zmq::PollItem<'_> {
        let mut events = zmq::PollEvents::empty();
        if self.ty.can_receive() {
            events |= zmq::POLLIN;
        }
        if self.ty.can_send() {
            events |= zmq::POLLOUT;
        }
        self.zsock.as_poll_item(events)
    }

    pub(crate) fn interrupter(&self) -> &Arc<Interrupter> {
        &self.interrupter
    }
}

impl Sealed for Socket {}

impl Uncounted for Socket {
    fn send_uncounted(&self, frame: &mut Message, timeout_ms: i32) -> Result<(), TransferError> {
        self.send_frame(frame, timeout_ms)
    }

    fn receive_uncounted(&self, frame: &mut Message, timeout_ms: i32) -> Result<(), TransferError> {
        self.receive_frame(frame, timeout_ms)
    }

    fn send_parts_uncounted(&self, parts: &mut [Message], timeout_ms: i32) -> Result<(), TransferError> {
        self.send_frames(parts, timeout_ms)
    }

    fn receive_parts_uncounted(&self, parts: &mut Vec<Message>, timeout_ms: i32) -> Result<(), TransferError> {
        self.receive_frames(parts, std::convert::identity, timeout_ms).map(|_| ())
    }
}

impl LayeredSocket for Socket {
    fn counted_peers(&self) -> u64 {
        self.peers.2.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn peer_count(&self) -> Arc<std::sync::atomic::AtomicU64> {
        self.peers.2.clone()
    }

    fn require_password(&self, password: &str) {
        *self.password.borrow_mut() = Some(password.to_owned());
    }

    fn endpoint_counts(&self) -> (u32, u32) {
        self.endpoints.get()
    }

    fn name_connections(&self, prefix: &[u8]) {
        *self.connect_names.borrow_mut() = Some((prefix.to_vec(), Vec::new()));
    }

    fn connected_peers(&self) -> Vec<Vec<u8>> {
        self.connect_names.borrow().as_ref().map_or_else(Vec::new, |(_, ids)| ids.clone())
    }

    fn counters_ref(&self) -> &Counters {
        &self.counters
    }

    fn last_endpoint(&self) -> Option<String> {
        self.zsock.get_last_endpoint().ok().and_then(Result::ok)
    }

    fn set_routing_id(&self, id: &[u8]) -> Result<(), SocketError> {
        opt("ZMQ_ROUTING_ID", self.zsock.set_identity(id))
    }

    fn set_router_mandatory(&self) -> Result<(), SocketError> {
        opt("ZMQ_ROUTER_MANDATORY", self.zsock.set_router_mandatory(true))
    }

    fn set_probe_router(&self) -> Result<(), SocketError> {
        opt("ZMQ_PROBE_ROUTER", self.zsock.set_probe_router(true))
    }

    fn set_max_message_size(&self, bytes: i64) -> Result<(), SocketError> {
        opt("ZMQ_MAXMSGSIZE", self.zsock.set_maxmsgsize(bytes))
    }

    fn wait_writable(&self, wake: std::os::fd::RawFd, ms: i64) -> bool {
        let mut items =
            [self.zsock.as_poll_item(zmq::POLLIN | zmq::POLLOUT), zmq::PollItem::from_fd(wake, zmq::POLLIN)];
        zmq::poll(&mut items, ms).is_ok_and(|n| n > 0) && items[0].is_writable()
    }
}

#[cfg(feature = "raw")]
impl crate::layered::Raw for Socket {
    fn as_zmq(&self) -> &zmq::Socket {
        &self.zsock
    }
}
