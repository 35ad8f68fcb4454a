//! FairMQ devices: filled by the issue "Device framework (crate fairmq)".
#![forbid(unsafe_code)]
