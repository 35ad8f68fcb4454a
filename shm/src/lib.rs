//! # fairmq-shm: FairMQ's shared-memory transport
#[allow(dead_code)] // used by the segment and transport modules, which follow
mod sys;
pub mod tlsf;
