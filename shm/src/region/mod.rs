//! The shared-memory side of unmanaged regions: the map of a region into this process and the
//! queues that carry a receiver's acknowledgements back to the region's owner.

pub(crate) mod ack_queue;
pub(crate) mod acks;
pub(crate) mod map;
