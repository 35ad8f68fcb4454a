//! # libfairmq_rs: the C ABI of fairmq-rs
//!
//! C and C++ programs use the Rust transports and devices through `include/fairmq_rs.h` (C) and
//! `include/fairmq_rs.hpp` (header-only C++ over it).
//!
//! Conventions (as rustls-ffi's):
//! - Every name starts with `fmq_`. Handles are opaque; each `_new` has a `_free`, and `_free`
//!   accepts NULL.
//! - Calls that can fail return `fmq_result` (`FMQ_OK` = 0, errors non-zero; `fmq_result_message`
//!   names them, `fmq_last_error` gives the calling thread's details). Out-parameters are written only
//!   on success. NULL arguments are checked in every build.
//! - Transfers return FairMQ's codes: bytes (>= 0), -1 error, -2 timeout, -3 interrupted. A failed
//!   send leaves the message with the caller.
//! - No panic crosses the boundary: every export runs inside a guard that turns one into
//!   `FMQ_ERROR_PANIC` (or -1 for transfers); a test checks each export's body starts with one.
//!   Callbacks into C (regions, region events) are called through the same kind of guard.
//! - Thread safety: transports and regions may be shared between threads; channels, messages, parts
//!   and pollers are used by one thread at a time; a hook's context only during the hook. Region and
//!   region-event callbacks run on threads of the library (each function says which).

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
