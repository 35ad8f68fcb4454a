//! The vocabulary that both transports share.
//!
//! A FairMQ user sees these types the same way on `zeromq` and on `shmem`. They are defined once,
//! here. `fairmq-shm` and the device framework use them.
//!
//! | module | what |
//! |---|---|
//! | [`error`] | transfer results and FairMQ's transfer codes (-1 error, -2 timeout, -3 interrupted), the kinds of every error ([`ErrorKind`](error::ErrorKind)), socket, poll and allocation errors |
//! | [`socket_type`] | socket patterns by FairMQ's names (`push`, `pull`, `pair`, ...) |
//! | [`transport_kind`] | transport names (`default`, `zeromq`, `shmem`) |
//! | [`endpoint`] | channel addresses as FairMQ writes them (`@`/`+`/`>` modifiers, several endpoints) |
//! | [`options`] | channel properties that become socket options, with FairMQ's defaults |
//! | [`counters`] | per-socket counters: messages and bytes of successful transfers, and failed transfers |
//! | [`interrupt`] | interruption of blocked transfers, and the rest of a timeout |
//! | [`timeout`] | how long a transfer or poll may wait: FairMQ's milliseconds or a `Duration` |
//! | [`region`] | unmanaged regions' settings, released pieces and region events |
//!
//! A layered transport reports its own failures as
//! [`TransferError::Transport`](error::TransferError::Transport), with the transport's error boxed
//! inside. A caller downcasts it for details. Its [`kind`](error::TransferError::kind) is
//! `ErrorKind::Transport`, as for every transfer error. What such a transport needs of a ZeroMQ
//! socket beyond this vocabulary is the narrow interface of the module `layered`.

pub mod counters;
pub mod endpoint;
pub mod error;
pub mod interrupt;
pub mod options;
pub mod region;
pub mod socket_type;
pub mod timeout;
pub mod transport_kind;
