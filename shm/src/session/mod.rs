//! The session: the state that all processes of a session share besides their segments and
//! regions.
//!
//! A session is the set of processes that share memory under one shmId. Its shared state lives in
//! the *management segment*, `fmqrs_<shmId>_mng` under `/dev/shm`. The management segment holds:
//!
//! - the session lock, a robust mutex that orders attaching, detaching and registrations;
//! - the session secret, from which the sockets' password and tokens are made;
//! - the registry of managed segments and the registry of unmanaged regions;
//! - one process slot per attached transport, which tells whether that transport is alive;
//! - one ledger per process slot, which lists the transport's references to shared blocks;
//! - the directory of endpoints (its code is in `transport::socket::directory`, a layer above).
//!
//! [`management::Management`] is one process's view of the management segment. [`layout`] gives
//! the place of every table in it.
//!
//! # A transport's life in the session
//!
//! 1. The transport attaches (see [`attach`]). The first transport creates the management
//!    segment. Each transport takes a process slot and holds the slot's mutex until it detaches
//!    (see [`liveness`]).
//! 2. While it lives, the transport lists in its ledger every reference it holds to a shared
//!    block (see [`ledger`]).
//! 3. When a process dies, the kernel marks its slot's mutex *owner died*. The next sweep of the
//!    dead finds the slot, frees what the dead process held alone, drops the references its
//!    ledger lists, and then counts the process out of the session. The transport layer runs the
//!    sweep (`Attachment::sweep_dead`); this module finds the dead ([`liveness`]) and drops their
//!    listed references ([`ledger`]).
//! 4. The transport detaches (see [`attach`]) and gives up its slot. The last transport to detach
//!    removes every object of the session, unless `no_cleanup` is set.
//!
//! # Submodules
//!
//! - [`attach`]: attaching a transport, detaching it, and removing the session's objects.
//! - [`layout`]: the management segment's layout, table by table.
//! - [`ledger`]: each transport's list of the shared references it holds, and the sweep that
//!   drops a dead transport's references.
//! - [`liveness`]: the heartbeat, and the process slots that tell which transports are alive.
//! - [`management`]: [`management::Management`]: the session lock, the segment registry, the
//!   event counter and the heartbeat counter.
//! - [`registry`]: the registry of unmanaged regions.

pub(crate) mod attach;
pub(crate) mod layout;
pub(crate) mod ledger;
pub(crate) mod liveness;
pub(crate) mod management;
pub(crate) mod registry;
