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

/// The routing id prefix that a router gives the peers of the endpoints it connects, and the
/// routing ids given so far.
type ConnectNames = (Vec<u8>, Vec<Vec<u8>>);

/// A socket of the zeromq transport.
///
/// A `Socket` is not `Sync`. Like a ZeroMQ socket, it is used by one thread at a time, but it may
/// move between threads. Other threads can read its [`counters`](Socket::counters) through
/// [`shared_counters`](Socket::shared_counters).
///
/// # Examples
///
/// A request and its reply between a REQ and a REP socket. Then a send that gives up after its
/// timeout, because nobody receives from the PUSH socket.
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
    /// The send and receive timeouts last set on the libzmq socket, in ms (-1: no limit).
    timeouts: std::cell::Cell<(i32, i32)>,
    /// How many endpoints the socket has bound and connected so far.
    endpoints: std::cell::Cell<(u32, u32)>,
    /// For a router that names the peers of the endpoints it connects: the routing id prefix, and
    /// the routing ids given so far.
    connect_names: std::cell::RefCell<Option<ConnectNames>>,
    /// `ZMQ_SNDHWM` as last set. Only [`Socket::set_snd_buf_size`] sets it. The socket keeps this
    /// copy because the shm transport asks for the value on every send.
    snd_hwm: std::cell::Cell<i32>,
    /// The PLAIN password. Endpoints bound from now on ask peers for it. Endpoints connected from
    /// now on present it.
    password: std::cell::RefCell<Option<String>>,
    id: String,
    ty: SocketType,
    interrupter: Arc<Interrupter>,
    counters: Arc<Counters>,
    /// The socket's count of connected peers, which the transport's monitor thread keeps: the
    /// monitors, the socket's watch id, and the count.
    peers: (Arc<Monitors>, u64, PeerCount),
}

impl Drop for Socket {
    fn drop(&mut self) {
        // The monitor stops before the monitor thread drops its reader (`Monitors::forget`).
        // libzmq's I/O thread sends monitor events with a blocking send. An event for a reader
        // that is gone, such as a disconnection when the socket closes, stalled the I/O thread,
        // and with it every socket of the transport.
        sys::stop_monitor(self.ptr);
        self.peers.0.forget(self.peers.1);
    }
}

impl std::fmt::Debug for Socket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Socket").field("id", &self.id).field("type", &self.ty).finish()
    }
}

/// Which way a transfer goes. The direction selects the timeout option that the transfer sets.
#[derive(Clone, Copy)]
enum Dir {
    Send,
    Receive,
}

/// What became of a frame of a multipart after the first frame.
enum Rest {
    /// Queued for the peer.
    Sent,
    /// The peer went away in the middle of the message. libzmq took the frame and dropped it.
    Dropped,
    /// The peer went away in the middle of the message, and nothing can be sent any more.
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
        // FairMQ's creation defaults. A channel then applies its own options with
        // `Socket::set_options`.
        opt("ZMQ_IDENTITY", zsock.set_identity(id.as_bytes()))?;
        opt("ZMQ_LINGER", zsock.set_linger(1000))?;
        if ty == SocketType::Sub {
            opt("ZMQ_SUBSCRIBE", zsock.set_subscribe(b""))?;
        }
        let ptr = SockPtr::of(&mut zsock);
        // With this option of the vendored libzmq, blocking calls on this socket end when the
        // transport is interrupted.
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

    /// How many peers are connected now (FairMQ's `GetNumberOfConnectedPeers`).
    ///
    /// The count is the connections made and accepted, less those that ended, as ZeroMQ's monitor
    /// had reported them by the time of the call. So a peer whose message was received is counted.
    /// A peer that left a moment ago may still be counted.
    pub fn number_of_connected_peers(&self) -> u64 {
        self.peers.0.sync();
        self.peers.2.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The socket id, `<transport id>.<channel name>.<type>`. It is also the socket's ZeroMQ
    /// identity.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The socket pattern.
    pub fn socket_type(&self) -> SocketType {
        self.ty
    }

    /// Applies a channel's options. The linger and the queue sizes are always set. The kernel
    /// buffer sizes are set only when they are not zero.
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

    /// Sets `ZMQ_LINGER`, in ms.
    pub fn set_linger(&self, ms: i32) -> Result<(), SocketError> {
        opt("ZMQ_LINGER", self.zsock.set_linger(ms))
    }
    /// Returns `ZMQ_LINGER`, in ms.
    pub fn linger(&self) -> Result<i32, SocketError> {
        opt("ZMQ_LINGER", self.zsock.get_linger())
    }
    /// Sets `ZMQ_SNDHWM`, the send queue limit in messages.
    pub fn set_snd_buf_size(&self, n: i32) -> Result<(), SocketError> {
        opt("ZMQ_SNDHWM", self.zsock.set_sndhwm(n))?;
        self.snd_hwm.set(n);
        Ok(())
    }
    /// Returns `ZMQ_SNDHWM`, the send queue limit in messages.
    pub fn snd_buf_size(&self) -> Result<i32, SocketError> {
        Ok(self.snd_hwm.get())
    }
    /// Sets `ZMQ_RCVHWM`, the receive queue limit in messages.
    pub fn set_rcv_buf_size(&self, n: i32) -> Result<(), SocketError> {
        opt("ZMQ_RCVHWM", self.zsock.set_rcvhwm(n))
    }
    /// Returns `ZMQ_RCVHWM`, the receive queue limit in messages.
    pub fn rcv_buf_size(&self) -> Result<i32, SocketError> {
        opt("ZMQ_RCVHWM", self.zsock.get_rcvhwm())
    }
    /// Sets `ZMQ_SNDBUF`, the kernel's send buffer size in bytes.
    pub fn set_snd_kernel_size(&self, n: i32) -> Result<(), SocketError> {
        opt("ZMQ_SNDBUF", self.zsock.set_sndbuf(n))
    }
    /// Returns `ZMQ_SNDBUF`, the kernel's send buffer size in bytes.
    pub fn snd_kernel_size(&self) -> Result<i32, SocketError> {
        opt("ZMQ_SNDBUF", self.zsock.get_sndbuf())
    }
    /// Sets `ZMQ_RCVBUF`, the kernel's receive buffer size in bytes.
    pub fn set_rcv_kernel_size(&self, n: i32) -> Result<(), SocketError> {
        opt("ZMQ_RCVBUF", self.zsock.set_rcvbuf(n))
    }
    /// Returns `ZMQ_RCVBUF`, the kernel's receive buffer size in bytes.
    pub fn rcv_kernel_size(&self) -> Result<i32, SocketError> {
        opt("ZMQ_RCVBUF", self.zsock.get_rcvbuf())
    }

    /// Binds one endpoint as given, without auto-bind.
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

    /// Attaches a channel address, which may list several endpoints.
    ///
    /// - Every endpoint is validated.
    /// - Each endpoint is bound or connected by its modifier, or else by the channel's method.
    /// - A tcp host is resolved to IPv4.
    /// - When a tcp bind fails because the port is taken, random ports of the channel's range are
    ///   tried (auto-bind).
    ///
    /// Returns the address as attached, in FairMQ's form: endpoints are separated by `,`, and an
    /// endpoint that had a modifier gets `@` (bind) or `+` (connect). So the caller can write the
    /// bound port back to its configuration.
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

    /// The address as bound. For a tcp address with a wildcard port (`*` or 0), the port in the
    /// result is the one the kernel chose.
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

    /// Sends one message as one ZeroMQ frame.
    ///
    /// `timeout` is a [`Timeout`]: FairMQ's milliseconds or a `Duration`.
    ///
    /// - `-1`, or any negative value, waits until the send is done or the transport is interrupted.
    /// - `0` does not wait.
    /// - `N` waits at most N ms.
    ///
    /// On success the message is empty, and the result is the size the message had. On any error
    /// the caller keeps the message unchanged.
    pub fn send(&self, msg: &mut Message, timeout: impl Into<Timeout>) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        let size = msg.size();
        self.transfer(Dir::Send, timeout_ms, |flags| sys::msg_send(&mut msg.raw, self.ptr, flags))?;
        msg.after_send();
        self.counters.record_tx(size);
        Ok(size)
    }

    /// Receives one frame into `msg`, and releases the old content of `msg`. Returns the size
    /// received. On any error `msg` is left as it was. (libzmq would clear the message it receives
    /// into, so the socket receives into a fresh frame first.)
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

    /// Sends a multipart message as one ZeroMQ multipart, one frame per part. All parts leave
    /// together: the call waits, or fails, only before the first frame. An empty multipart is
    /// refused.
    pub fn send_parts(&self, parts: &mut [Message], timeout: impl Into<Timeout>) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        self.send_held(parts, timeout_ms)
    }

    /// Like [`send_parts`](Socket::send_parts), for a caller's own message type whose parts hold
    /// this crate's messages (see [`Part`]). The send asks each part for its message once. When a
    /// part holds no message, the whole multipart is refused with an error.
    pub fn send_parts_of<P: Part>(&self, parts: &mut [P], timeout: impl Into<Timeout>) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        // The usual few parts fit on the stack, so a send allocates nothing.
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

    /// Sends frames as one multipart without counting them. A single frame is sent as a plain
    /// frame.
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

    /// Hands a frame after the first of a multipart to libzmq without waiting.
    ///
    /// libzmq's queue limit counts whole messages. So once the first frame went through, libzmq
    /// takes the rest at once. libzmq refuses a later frame only when the peer's pipe died in the
    /// middle of the message. A load-balancing socket (push, dealer, req) then drops the rest of
    /// the message:
    ///
    /// - A refused frame with more to come is taken and discarded when it is offered again.
    /// - A refused last frame must not be offered again. It would go to another peer as a message
    ///   of its own.
    ///
    /// A pair socket has no pipe left at all.
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

    /// Receives every frame of one multipart without counting them, and appends the frames to
    /// `parts`. `wrap` makes each frame a `T` (see [`Socket::receive_parts_into`]). Returns the
    /// total size of the frames.
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
                // Only a socket that is going away fails here. The frames of the multipart that
                // came so far go too.
                parts.truncate(start);
                return Err(e);
            }
        }
    }

    /// Receives a multipart message and appends its parts to `parts`. Returns the total size.
    pub fn receive_parts(&self, parts: &mut Vec<Message>, timeout: impl Into<Timeout>) -> TransferResult {
        self.receive_parts_into(parts, std::convert::identity, timeout)
    }

    /// Receives a multipart message and appends its parts to `parts`, each made a `T` by `wrap`.
    /// So a caller's own message type, such as a device's, holds the parts where they land, with
    /// no vector of this crate's in between. `wrap` runs inside the receive, so it must not use
    /// this socket. Returns the total size. On error `parts` is as it was.
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

    /// One transfer with FairMQ's timeout semantics.
    ///
    /// While the transport is not interrupted, the transfer is libzmq's own blocking call. The
    /// socket's send or receive timeout bounds the call; `Socket::transfer` sets it to
    /// `timeout_ms` for this call. The vendored libzmq also ends that wait, with EINTR, when the
    /// interrupter's descriptor becomes readable (`sys::set_wake_fd`). So a blocked call waits
    /// exactly as libzmq's does, in one poll, and still returns promptly on `interrupt()`.
    ///
    /// While the transport is interrupted, the transfer makes one attempt that does not wait.
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
                // libzmq times out by a coarse clock, a few ms per tick. A wait that ended before
                // the deadline goes on for the time that is left, so no transfer gives up early.
                Err(zmq::Error::EAGAIN) => self.wait_until(dir, deadline.ok_or(TransferError::Timeout)?)?,
                Err(zmq::Error::EINTR) if self.interrupter.is_interrupted() => {
                    // A transfer that can complete at once still completes while interrupted.
                    return self.at_once(timeout_ms, &mut attempt);
                }
                // A signal ended the wait: go on with the time that is left.
                Err(zmq::Error::EINTR) => {
                    if let Some(d) = deadline {
                        self.wait_until(dir, d)?;
                    }
                }
                Err(e) => return Err(self.failed(e)),
            }
        }
    }

    /// Makes the next wait of a transfer last until `deadline`. Once `deadline` has passed, the
    /// result is a timeout.
    fn wait_until(&self, dir: Dir, deadline: Instant) -> Result<(), TransferError> {
        let left = ms_until(deadline).ok_or(TransferError::Timeout)?;
        self.set_timeout(dir, i32::try_from(left).unwrap_or(i32::MAX))
    }

    /// Makes one attempt that does not wait. When the transfer cannot be done now, the result is a
    /// timeout (`timeout_ms` 0) or an interruption.
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
            // The transport was interrupted when the call began, and has resumed since. The
            // result is still an interruption.
            Err(zmq::Error::EAGAIN | zmq::Error::EINTR) => Err(TransferError::Interrupted),
            Err(e) => Err(self.failed(e)),
        }
    }

    /// Sets `ZMQ_SNDTIMEO` or `ZMQ_RCVTIMEO` to `ms` (negative: no limit), unless the option
    /// already has that value. Like every helper of a transfer, this function is inlined across
    /// crates. The reason is that the transfers are generic over their timeout, so they are
    /// compiled in the caller's crate.
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

    /// Takes a remaining frame of a received multipart. libzmq delivers whole messages, so the
    /// remaining frames are there once the first frame is. `Socket::complete` therefore takes
    /// them regardless of timeout or interruption.
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
            // Only a router that must route, such as the shared-memory publisher, gets
            // EHOSTUNREACH. It means that the peer left, which is an expected event.
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
