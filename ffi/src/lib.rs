//! # libfairmq_rs: the C ABI of fairmq-rs
//!
//! C and C++ programs use the Rust transports and devices through this library. A C program
//! includes `include/fairmq_rs.h`. A C++ program may include `include/fairmq_rs.hpp`, a
//! header-only C++ layer over the C header. cbindgen generates `fairmq_rs.h` from the docs of this
//! crate's exported items.
//!
//! # Conventions
//!
//! The conventions follow rustls-ffi's.
//!
//! - Every name starts with `fmq_`.
//! - Handles are opaque. Every handle that the caller owns has a `_free` function, and every
//!   `_free` accepts NULL. A borrowed handle, such as a channel of a hook's context, is not freed.
//! - A call that can fail returns an `fmq_result`: `FMQ_OK` (0), or a non-zero error code.
//!   `fmq_result_message` names a code. `fmq_last_error` gives the details of the calling thread's
//!   last error.
//! - A call writes its out-parameters only on success. The one exception is a length
//!   out-parameter: a call also writes it when the caller's buffer is too small
//!   (`FMQ_ERROR_BUFFER`).
//! - Every build checks NULL arguments, release builds included.
//! - A transfer returns FairMQ's codes: bytes (>= 0), -1 error, -2 timeout, -3 interrupted. A
//!   failed send leaves the message with the caller.
//!
//! # Panics
//!
//! No panic crosses the boundary. Every export runs inside a guard (see the module `error`). The
//! guard turns a panic into `FMQ_ERROR_PANIC`, into -1 for a transfer, or into the documented
//! default (NULL, 0, false) for a call that returns a value. A test checks that the body of each
//! export starts with a guard, or with a helper whose body starts with one (`boundary_test`).
//! Callbacks into C (regions, region events) are called through the same kind of guard, which
//! stops a panic and logs it.
//!
//! # Threads
//!
//! - Transports, regions, configurations, state machines and devices (`fmq_device`) may be shared
//!   between threads.
//! - Channels, messages, parts and pollers are used by one thread at a time.
//! - A hook's context is valid only during the hook, on the hook's thread.
//! - Region and region-event callbacks may run on threads of the library. The function that sets
//!   a callback says on which thread it runs.
//!
//! # Modules
//!
//! - `transport`: transports by name.
//! - `message`: messages of either transport.
//! - `channel`: channels, transfers, multipart messages, pollers and counters.
//! - `channel_setup`: channels set up step by step, as FairMQ's `fair::mq::Channel` is.
//! - `device`: devices written in C, run as FairMQ's `runDevice` runs a device, and the context
//!   that their hooks get.
//! - `device_object`: devices that a program runs in a thread of its own choice.
//! - `states`: a device's state machine.
//! - `config`: the properties of a configuration.
//! - `config_store`: configuration stores that a program owns.
//! - `region`: unmanaged regions.
//! - `region_events`: region events and the segments and regions that a transport knows of.
//! - `shm_external`: segments and regions of a shared-memory session, made without a transport.
//! - `shm_monitor`: shared-memory sessions as FairMQ's monitor sees them.
//! - `logger`: the logger's settings, and log lines from C and C++.
//! - `error`: result codes, the last error and the panic boundary.
//! - `ptr`: checked conversions of C pointers.

#![warn(missing_docs, unreachable_pub)]
#![allow(clippy::missing_safety_doc)] // each unsafe export documents its contract in "# Safety"
#![allow(missing_debug_implementations)] // handles are opaque to C; Debug would only expose internals

#[cfg(test)]
mod boundary_test;
mod channel;
mod channel_setup;
mod config;
mod config_store;
mod device;
mod device_object;
mod error;
mod logger;
mod message;
mod ptr;
mod region;
mod region_events;
#[cfg(test)]
mod region_test;
mod shm_external;
mod shm_monitor;
mod states;
mod transport;

pub use channel::*;
pub use channel_setup::*;
pub use config::*;
pub use config_store::*;
pub use device::*;
pub use device_object::*;
pub use error::*;
pub use logger::*;
pub use message::*;
pub use region::*;
pub use region_events::*;
pub use shm_external::*;
pub use shm_monitor::*;
pub use states::*;
pub use transport::*;

#[cfg(test)]
mod tests {
    #[test]
    fn checked_in_header_is_up_to_date() {
        let generated = include_str!(concat!(env!("OUT_DIR"), "/fairmq_rs.h"));
        let checked_in = include_str!("../../include/fairmq_rs.h");
        assert!(
            generated == checked_in,
            "include/fairmq_rs.h is stale: run `FMQ_WRITE_HEADER=1 cargo build -p fairmq-ffi`"
        );
    }
}
