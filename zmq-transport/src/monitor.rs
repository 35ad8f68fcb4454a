//! How many peers each socket has (FairMQ's `GetNumberOfConnectedPeers`).
//!
//! libzmq reports a socket's connections as monitor events. A thread of the transport
//! ([`Monitors`]) reads them and counts them as FairMQ does: a connected or an accepted connection
//! adds one, and a disconnection takes one away.
//!
//! # Why a thread
//!
//! libzmq sends monitor events from its I/O thread with a blocking send. FairMQ reads a monitor
//! only when someone asks for the count. Such a monitor needs an unlimited queue. That queue grows
//! without bound under a peer that connects again and again: each attempt that the password
//! refuses is two events. So one thread per transport reads every socket's monitor as the events
//! come, and keeps the counts.
//!
//! # Reading a count
//!
//! - `Socket::number_of_connected_peers` first asks the thread to read the events already sent,
//!   and waits for its answer ([`Monitors::sync`]). So the count is never behind a message that the
//!   socket has received: ZeroMQ reports a connection before the peer's first message can arrive.
//! - Readers on other threads hold the count itself ([`PeerCount`]). They get it as the thread
//!   last left it, with one atomic load.

use crate::vocabulary::error::SocketError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

const EVENTS: u16 =
    (zmq_sys::ZMQ_EVENT_CONNECTED | zmq_sys::ZMQ_EVENT_ACCEPTED | zmq_sys::ZMQ_EVENT_DISCONNECTED) as u16;
const WAKE_ENDPOINT: &str = "inproc://fairmq-rs-monitors";

/// A socket's count of connected peers, kept by the monitor thread.
pub(crate) type PeerCount = Arc<AtomicU64>;

enum Command {
    Watch {
        id: u64,
        reader: zmq::Socket,
        count: PeerCount,
    },
    Forget(u64),
    /// Read every event sent so far, then answer.
    Sync(mpsc::Sender<()>),
    Stop,
}

/// The monitor thread of a transport. Dropping `Monitors` stops the thread and joins it.
pub(crate) struct Monitors {
    /// Commands, and the socket that wakes the thread to read them.
    commands: Mutex<(mpsc::Sender<Command>, zmq::Socket)>,
    next: AtomicU64,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Monitors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitors").finish()
    }
}

fn create(source: zmq::Error) -> SocketError {
    SocketError::Create { what: "socket monitor", source }
}

impl Monitors {
    /// Starts the monitor thread of `ctx`.
    pub(crate) fn start(ctx: &zmq::Context) -> Result<Monitors, SocketError> {
        let woken = ctx.socket(zmq::PAIR).map_err(create)?;
        woken.bind(WAKE_ENDPOINT).map_err(create)?;
        let wake = ctx.socket(zmq::PAIR).map_err(create)?;
        // A wake-up send never waits: a high-water mark of 0 means no limit. The thread reads all
        // queued wake-ups at once.
        wake.set_sndhwm(0).map_err(create)?;
        wake.connect(WAKE_ENDPOINT).map_err(create)?;
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("fmq-monitor".into())
            .spawn(move || run(&woken, &rx))
            .map_err(|e| create(zmq::Error::from_raw(e.raw_os_error().unwrap_or(libc::EAGAIN))))?;
        Ok(Monitors { commands: Mutex::new((tx, wake)), next: AtomicU64::new(0), thread: Some(thread) })
    }

    fn send(&self, c: Command) {
        if let Ok(guard) = self.commands.lock() {
            let (tx, wake) = &*guard;
            if tx.send(c).is_ok() {
                let _ = wake.send("", zmq::DONTWAIT);
            }
        }
    }

    /// Starts counting the peers of `socket`. Call it before `socket` binds or connects, so that
    /// the reader is connected before libzmq can send any event. Returns the watch id and the
    /// count.
    pub(crate) fn watch(&self, ctx: &zmq::Context, socket: &zmq::Socket) -> Result<(u64, PeerCount), SocketError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let endpoint = format!("inproc://fairmq-rs-monitor-{id}");
        socket.monitor(&endpoint, i32::from(EVENTS)).map_err(create)?;
        let reader = ctx.socket(zmq::PAIR).map_err(create)?;
        // libzmq's I/O thread sends the events, so it must never wait for the monitor thread. A
        // high-water mark of 0 means no limit.
        reader.set_rcvhwm(0).map_err(create)?;
        reader.connect(&endpoint).map_err(create)?;
        let count = PeerCount::default();
        self.send(Command::Watch { id, reader, count: count.clone() });
        Ok((id, count))
    }

    /// Waits until the monitor thread has counted every event that libzmq had sent when `sync` was
    /// called. A thread that has ended counts no more, so then `sync` returns at once.
    pub(crate) fn sync(&self) {
        let (tx, rx) = mpsc::channel();
        self.send(Command::Sync(tx));
        // The timeout is generous: the thread answers as soon as it is woken. The timeout only
        // keeps a lost answer from hanging the caller.
        let _ = rx.recv_timeout(std::time::Duration::from_secs(5));
    }

    /// Stops counting the peers of the socket watched as `id`, when that socket closes.
    pub(crate) fn forget(&self, id: u64) {
        self.send(Command::Forget(id));
    }
}

impl Drop for Monitors {
    fn drop(&mut self) {
        self.send(Command::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The body of the monitor thread: reads events and commands until it is told to stop or the
/// context ends.
fn run(woken: &zmq::Socket, commands: &mpsc::Receiver<Command>) {
    let mut watched: Vec<(u64, zmq::Socket, PeerCount)> = Vec::new();
    loop {
        let ready: Vec<bool> = {
            let mut items: Vec<zmq::PollItem<'_>> = std::iter::once(woken.as_poll_item(zmq::POLLIN))
                .chain(watched.iter().map(|(_, r, _)| r.as_poll_item(zmq::POLLIN)))
                .collect();
            match zmq::poll(&mut items, -1) {
                Err(zmq::Error::ETERM) => return,
                Err(_) => continue,
                Ok(_) => items.iter().map(zmq::PollItem::is_readable).collect(),
            }
        };
        // Read the events first. The positions in `ready` match those in `watched` only until a
        // command changes `watched`.
        for ((_, reader, count), _) in watched.iter().zip(&ready[1..]).filter(|(_, &r)| r) {
            read_events(reader, count);
        }
        if ready[0] {
            while woken.recv_bytes(zmq::DONTWAIT).is_ok() {}
            for c in commands.try_iter() {
                match c {
                    Command::Watch { id, reader, count } => watched.push((id, reader, count)),
                    Command::Forget(id) => watched.retain(|(w, _, _)| *w != id),
                    Command::Sync(answer) => {
                        for (_, reader, count) in &watched {
                            read_events(reader, count);
                        }
                        let _ = answer.send(());
                    }
                    Command::Stop => return,
                }
            }
        }
    }
}

/// Counts the events waiting on `reader`. Each event has two frames: first the event (u16) and its
/// value (u32), then the endpoint.
fn read_events(reader: &zmq::Socket, count: &AtomicU64) {
    while let Ok(frames) = reader.recv_multipart(zmq::DONTWAIT) {
        let Some(event) = frames.first().and_then(|f| f.get(..2)).map(|b| u16::from_le_bytes([b[0], b[1]])) else {
            continue;
        };
        match u32::from(event) {
            zmq_sys::ZMQ_EVENT_CONNECTED | zmq_sys::ZMQ_EVENT_ACCEPTED => {
                count.fetch_add(1, Ordering::Relaxed);
            }
            // The match guard takes one away. This arm runs, and logs a warning, only when the
            // count is already 0.
            zmq_sys::ZMQ_EVENT_DISCONNECTED
                if count.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_err() =>
            {
                log::warn!("Computing connected peers would result in negative count! Some event was missed!");
            }
            _ => {}
        }
    }
}
