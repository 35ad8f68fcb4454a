//! Unmanaged regions over both transports: [`UnmanagedRegion`] (FairMQ's `UnmanagedRegion`).
//!
//! A region is a big buffer that the user fills and then sends in pieces, each piece as a message.
//! [`Transport::create_region`] makes a region, and [`Transport::new_message_from_region`] makes
//! a message of a piece. The region's callback hears of each piece once it is released:
//!
//! - On shmem, a piece travels without a copy. The callback hears of it when its last holder, in
//!   any process, has released it.
//! - On zeromq, the message holds a copy of the piece. The callback hears of the piece at once,
//!   as in FairMQ.

use crate::error::Error;
use crate::transport::{Message, Transport};
use fairmq_zmq::TransportKind;
pub use fairmq_zmq::{
    BulkCallback, RegionBlock, RegionCallback, RegionConfig, RegionEvent, RegionInfo, SingleCallback,
};
use std::time::Duration;

/// Wraps `callback` in the panic boundary. The callback runs on a transport's thread. A panic
/// there would end that thread, and with it every later acknowledgement. Instead, `on_panic`
/// hears of the panic.
pub(crate) fn guarded_callback(callback: RegionCallback, on_panic: impl Fn(String) + Send + 'static) -> RegionCallback {
    match callback {
        RegionCallback::None => RegionCallback::None,
        RegionCallback::Single(mut f) => RegionCallback::Single(Box::new(move |block| {
            if let Err(p) = crate::panic_boundary::catch(|| f(block)) {
                on_panic(p);
            }
        })),
        RegionCallback::Bulk(mut f) => RegionCallback::Bulk(Box::new(move |blocks| {
            if let Err(p) = crate::panic_boundary::catch(|| f(blocks)) {
                on_panic(p);
            }
        })),
    }
}

/// A region of either transport.
///
/// # Examples
///
/// On zeromq, a message holds a copy of its piece, so the callback hears of the piece at once. On
/// shmem, the callback hears of a piece once its last holder, in any process, has released it.
///
/// ```
/// use fairmq::region::{RegionCallback, RegionConfig};
/// use fairmq::{transport, Properties, TransportKind};
///
/// let t = transport::create(TransportKind::Zeromq, "doc", &Properties::new())?;
/// let (released, back) = std::sync::mpsc::channel();
/// let callback = RegionCallback::Single(Box::new(move |b| {
///     let _ = released.send(b.hint);
/// }));
/// let region = t.create_region(1 << 16, callback, &RegionConfig::default())?;
/// region.write(0, b"timeframe")?;
/// let msg = t.new_message_from_region(&region, 0, 9, 3)?;
/// assert_eq!(msg.data(), b"timeframe");
/// assert_eq!(back.try_recv()?, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub enum UnmanagedRegion {
    /// A private buffer of the zeromq transport.
    Zeromq(fairmq_zmq::Region),
    /// A shared-memory region of the session.
    Shmem(fairmq_shm::Region),
}

impl UnmanagedRegion {
    /// Which transport made the region.
    pub fn kind(&self) -> TransportKind {
        match self {
            UnmanagedRegion::Zeromq(_) => TransportKind::Zeromq,
            UnmanagedRegion::Shmem(_) => TransportKind::Shmem,
        }
    }

    /// The region id.
    pub fn id(&self) -> u16 {
        match self {
            UnmanagedRegion::Zeromq(r) => r.id(),
            UnmanagedRegion::Shmem(r) => r.id(),
        }
    }

    /// The size in bytes.
    pub fn size(&self) -> usize {
        match self {
            UnmanagedRegion::Zeromq(r) => r.size(),
            UnmanagedRegion::Shmem(r) => r.size(),
        }
    }

    /// The address of the region's first byte in this process, like FairMQ's `GetData`. It serves
    /// code that fills the region in place. [`write`](Self::write) is the safe way to fill it.
    pub fn data_ptr(&self) -> *mut u8 {
        match self {
            UnmanagedRegion::Zeromq(r) => r.data_ptr(),
            UnmanagedRegion::Shmem(r) => r.data_ptr(),
        }
    }

    /// Copies `bytes` into the region at `offset`. On shmem, the region refuses to overwrite bytes
    /// that a message of this process still refers to. Write only pieces that no message refers
    /// to, in any process.
    pub fn write(&self, offset: usize, bytes: &[u8]) -> Result<(), Error> {
        match self {
            UnmanagedRegion::Zeromq(r) => Ok(r.write(offset, bytes)?),
            UnmanagedRegion::Shmem(r) => Ok(r.write(offset, bytes)?),
        }
    }

    /// How long dropping the region waits for outstanding acknowledgements. On zeromq it is zero.
    pub fn linger(&self) -> Duration {
        match self {
            UnmanagedRegion::Zeromq(r) => r.linger(),
            UnmanagedRegion::Shmem(r) => r.linger(),
        }
    }

    /// Sets the linger. The zeromq transport ignores it, because its acknowledgements are local.
    pub fn set_linger(&self, linger: Duration) {
        match self {
            UnmanagedRegion::Zeromq(r) => r.set_linger(linger),
            UnmanagedRegion::Shmem(r) => r.set_linger(linger),
        }
    }
}

impl Transport {
    /// Creates an unmanaged region of `size` bytes, like FairMQ's `CreateUnmanagedRegion`.
    /// `callback` hears of every piece once its last holder has released it.
    pub fn create_region(
        &self,
        size: usize,
        callback: RegionCallback,
        config: &RegionConfig,
    ) -> Result<UnmanagedRegion, Error> {
        Ok(match self {
            Transport::Zeromq(t) => UnmanagedRegion::Zeromq(t.create_region(size, callback, config)?),
            Transport::Shmem(t) => UnmanagedRegion::Shmem(t.create_region(size, callback, config)?),
        })
    }

    /// Creates a message that refers to `size` bytes at `offset` of `region`. On zeromq, the
    /// message holds a copy of those bytes. The region's callback gets `hint` back.
    pub fn new_message_from_region(
        &self,
        region: &UnmanagedRegion,
        offset: usize,
        size: usize,
        hint: u64,
    ) -> Result<Message, Error> {
        Ok(match (self, region) {
            (Transport::Zeromq(t), UnmanagedRegion::Zeromq(r)) => {
                Message::Zeromq(t.new_message_from_region(r, offset, size, hint)?)
            }
            (Transport::Shmem(t), UnmanagedRegion::Shmem(r)) => {
                Message::Shmem(t.new_message_from_region(r, offset, size, hint)?)
            }
            _ => return Err(Error::RegionKind { region: region.kind(), message: self.kind() }),
        })
    }

    /// The segments and regions that this transport knows of. On zeromq, these are its live
    /// regions. On shmem, these are every segment and region of the session.
    pub fn region_info(&self) -> Vec<RegionInfo> {
        match self {
            Transport::Zeromq(t) => t.region_info(),
            Transport::Shmem(t) => t.region_info(),
        }
    }

    /// Calls `callback` for every region event, on a thread of its own. The new subscription
    /// replaces an earlier one.
    pub fn subscribe_to_region_events(&self, callback: impl FnMut(RegionInfo) + Send + 'static) -> Result<(), Error> {
        match self {
            Transport::Zeromq(t) => Ok(t.subscribe_to_region_events(callback)?),
            Transport::Shmem(t) => Ok(t.subscribe_to_region_events(callback)?),
        }
    }

    /// Whether a region event subscription is running.
    pub fn subscribed_to_region_events(&self) -> bool {
        match self {
            Transport::Zeromq(t) => t.subscribed_to_region_events(),
            Transport::Shmem(t) => t.subscribed_to_region_events(),
        }
    }

    /// Ends the region event subscription.
    pub fn unsubscribe_from_region_events(&self) {
        match self {
            Transport::Zeromq(t) => t.unsubscribe_from_region_events(),
            Transport::Shmem(t) => t.unsubscribe_from_region_events(),
        }
    }
}
