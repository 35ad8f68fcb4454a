//! The shared-memory side of unmanaged regions: a region's bytes (made, and mapped into this
//! process) and the queues that carry a receiver's acknowledgements back to the region's owner.

pub(crate) mod ack_queue;
pub(crate) mod acks;
pub(crate) mod count;
pub(crate) mod map;
