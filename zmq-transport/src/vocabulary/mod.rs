//! The vocabulary both transports share: what a FairMQ user sees the same way on `zeromq` and on
//! `shmem`, defined once here and used by `fairmq-shm` and the device framework.
//!
//! | module | what |
//! |---|---|
//! | [`error`] | transfer results and FairMQ's transfer codes (-1 error, -2 timeout, -3 interrupted), the kinds of every error ([`ErrorKind`](error::ErrorKind)), socket, poll and allocation errors |
//! | [`socket_type`] | socket patterns by FairMQ's names (`push`, `pull`, `pair`, ...) |
//! | [`transport_kind`] | transport names (`default`, `zeromq`, `shmem`) |
//! | [`endpoint`] | channel addresses as FairMQ writes them (`@`/`+`/`>` modifiers, several endpoints) |
//! | [`options`] | channel properties that become socket options, with FairMQ's defaults |
//! | [`counters`] | per-socket message and byte counters (successful transfers only) |
//! | [`interrupt`] | interruption of blocked transfers, and the rest of a timeout |
//! | [`timeout`] | how long a transfer or poll may wait: FairMQ's milliseconds or a `Duration` |
//! | [`region`] | unmanaged regions' settings, released pieces and region events |
//!
//! A layered transport's own failures travel as [`TransferError::Transport`](error::TransferError::Transport)
//! (boxed, with its own [`kind`](error::TransferError::kind)); what such a transport needs of a
//! ZeroMQ socket beyond this vocabulary is the narrow interface of [`crate::layered`].

pub mod counters;
pub mod endpoint;
pub mod error;
pub mod interrupt;
pub mod options;
pub mod region;
pub mod socket_type;
pub mod timeout;
pub mod transport_kind;
