//! The zeromq transport: [`Transport`] (FairMQ's `zmq::TransportFactory`).
//!
//! A transport holds one ZeroMQ context and one interrupt flag ([`Interrupter`]). Its clones and
//! the sockets it makes share both. `inproc://` connects only sockets of the same transport.
//!
//! A transport also starts a few threads when they are first needed:
//!
//! - the monitor thread that counts the peers of every socket, with the first socket (see the
//!   module `monitor`);
//! - the handler that checks passwords, with the first `serve_password` (see the module `zap`);
//! - a thread that delivers region events, for each subscription (see the module `region`).
//!
//! The context ends when the transport and all its sockets are dropped. Queued outgoing messages
//! get their linger time then.

use crate::message::Message;
use crate::region::{Region, RegionError, RegionEvents};
use crate::socket::Socket;
use crate::vocabulary::error::SocketError;
use crate::vocabulary::interrupt::Interrupter;
use crate::vocabulary::region::{RegionCallback, RegionConfig, RegionInfo};
use crate::vocabulary::socket_type::SocketType;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Arc;

/// Settings of a transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportConfig {
    /// The transport id, normally the device id. It is part of every socket id. When it is empty,
    /// the transport makes a random id.
    pub id: String,
    /// The number of ZeroMQ I/O threads (FairMQ option `--io-threads`, default 1).
    pub io_threads: i32,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig { id: String::new(), io_threads: 1 }
    }
}

/// The zeromq transport (FairMQ's `zmq::TransportFactory`).
///
/// A `Transport` is cheap to clone. All clones share one ZeroMQ context and one interrupt flag.
/// `inproc://` connects only sockets of the same transport.
///
/// The context ends when the transport and all its sockets are dropped. Queued outgoing messages
/// get their linger time then.
///
/// # Examples
///
/// An interrupt wakes a blocked receive at once. The receive fails with FairMQ's code -3.
///
/// ```
/// use fairmq_zmq::{Message, SocketType, TransferCode, Transport};
///
/// let transport = Transport::new("doc")?;
/// let pull = transport.socket(SocketType::Pull, "data")?;
/// pull.bind("inproc://doc-interrupt")?;
/// let t = transport.clone();
/// let waker = std::thread::spawn(move || {
///     std::thread::sleep(std::time::Duration::from_millis(50));
///     t.interrupt();
/// });
/// let mut msg = Message::new();
/// let err = pull.receive(&mut msg, -1).unwrap_err();
/// assert_eq!(err.code(), TransferCode::Interrupted); // -3, as in FairMQ
/// waker.join().unwrap();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Transport {
    inner: Arc<Inner>,
}

struct Inner {
    id: String,
    ctx: zmq::Context,
    interrupter: Arc<Interrupter>,
    regions: Arc<RegionEvents>,
    /// The handler that checks who may connect to sockets that ask for a password (see
    /// [`LayeredTransport::serve_password`](crate::layered::LayeredTransport::serve_password)).
    zap: std::sync::OnceLock<crate::zap::Handler>,
    /// The monitor thread that counts every socket's peers (see the module `monitor`). The first
    /// socket starts it.
    monitors: std::sync::Mutex<Option<Arc<crate::monitor::Monitors>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.regions.unsubscribe();
    }
}

impl Transport {
    /// A transport with the given id and one I/O thread.
    pub fn new(id: &str) -> Result<Transport, SocketError> {
        Transport::with_config(&TransportConfig { id: id.to_owned(), ..TransportConfig::default() })
    }

    /// A transport with explicit settings.
    pub fn with_config(config: &TransportConfig) -> Result<Transport, SocketError> {
        let (major, minor, patch) = zmq::version();
        log::debug!("Transport: Using ZeroMQ library, version: {major}.{minor}.{patch}");
        let ctx = zmq::Context::new();
        ctx.set_io_threads(config.io_threads.max(1))
            .map_err(|source| SocketError::Create { what: "context", source })?;
        let id = if config.id.is_empty() { random_id() } else { config.id.clone() };
        let interrupter = Arc::new(Interrupter::new()?);
        Ok(Transport {
            inner: Arc::new(Inner {
                id,
                ctx,
                interrupter,
                regions: RegionEvents::new(),
                zap: std::sync::OnceLock::new(),
                monitors: std::sync::Mutex::new(None),
            }),
        })
    }

    /// The transport id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// Makes a socket of type `ty` for the channel `name`. The socket's id is
    /// `<transport id>.<name>.<type>`.
    pub fn socket(&self, ty: SocketType, name: &str) -> Result<Socket, SocketError> {
        let id = format!("{}.{}.{}", self.inner.id, name, ty);
        let monitors = {
            let mut m = self.inner.monitors.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match &*m {
                Some(m) => m.clone(),
                None => m.insert(Arc::new(crate::monitor::Monitors::start(&self.inner.ctx)?)).clone(),
            }
        };
        Socket::new(&self.inner.ctx, self.inner.interrupter.clone(), &monitors, ty, id)
    }

    /// Makes every blocked transfer and poll on this transport's sockets return `Interrupted`.
    /// Until [`resume`](Transport::resume), every later transfer or poll that would have to wait
    /// returns `Interrupted` too.
    pub fn interrupt(&self) {
        self.inner.interrupter.interrupt();
    }

    /// Ends the interrupt: transfers and polls wait again.
    pub fn resume(&self) {
        self.inner.interrupter.resume();
    }

    /// Whether the transport is interrupted.
    pub fn is_interrupted(&self) -> bool {
        self.inner.interrupter.is_interrupted()
    }

    /// Creates an unmanaged region of `size` zeroed bytes. `callback` hears of every piece of the
    /// region that a message was made from. It hears at once, because the message holds a copy of
    /// the piece.
    pub fn create_region(
        &self,
        size: usize,
        callback: RegionCallback,
        config: &RegionConfig,
    ) -> Result<Region, RegionError> {
        Region::create(&self.inner.regions, size, callback, config)
    }

    /// Makes a message holding a copy of `size` bytes at `offset` of `region`, as FairMQ's zeromq
    /// transport does. The region's callback gets the piece, with `hint`, before this function
    /// returns.
    pub fn new_message_from_region(
        &self,
        region: &Region,
        offset: usize,
        size: usize,
        hint: u64,
    ) -> Result<Message, RegionError> {
        if !region.belongs_to(&self.inner.regions) {
            return Err(RegionError::ForeignRegion { id: region.id() });
        }
        region.message(offset, size, hint)
    }

    /// The live regions of this transport.
    pub fn region_info(&self) -> Vec<RegionInfo> {
        self.inner.regions.info()
    }

    /// Calls `callback` for every region event of this transport, in order, on a thread of its own.
    /// Delivery starts with the events queued since the transport's creation. A new subscription
    /// replaces an earlier one.
    pub fn subscribe_to_region_events(
        &self,
        callback: impl FnMut(RegionInfo) + Send + 'static,
    ) -> Result<(), RegionError> {
        self.inner.regions.subscribe(Box::new(callback))
    }

    /// Whether a region event subscription runs.
    pub fn subscribed_to_region_events(&self) -> bool {
        self.inner.regions.subscribed()
    }

    /// Ends the region event subscription, and waits for its thread to finish.
    pub fn unsubscribe_from_region_events(&self) {
        self.inner.regions.unsubscribe();
    }
}

impl crate::layered::sealed::Sealed for Transport {}

impl crate::layered::LayeredTransport for Transport {
    fn serve_password(&self, password: &str) -> Result<(), SocketError> {
        if self.inner.zap.get().is_none() {
            let handler = crate::zap::Handler::start(&self.inner.ctx, password.to_owned())?;
            let _ = self.inner.zap.set(handler);
        }
        Ok(())
    }

    fn interrupter(&self) -> &Arc<Interrupter> {
        &self.inner.interrupter
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport").field("id", &self.id).finish()
    }
}

/// A random 128-bit id in UUID text form (FairMQ uses a UUID when no id is given).
fn random_id() -> String {
    let a = RandomState::new().hash_one(1u8);
    let b = RandomState::new().hash_one(2u8);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}
