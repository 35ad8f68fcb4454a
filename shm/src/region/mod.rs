//! The shared-memory side of unmanaged regions: a region's bytes, and the queues that carry
//! acknowledgements of released pieces back to the region's controller (the process that created
//! or adopted the region).
//!
//! - [`map`]: one process's mapping of a region, and the creation of a region's bytes.
//! - [`ack_queue`]: a region's acknowledgement queue, a ring in a shared-memory file of its own.
//! - [`acks`]: the regions a transport has mapped, and the thread that sends its
//!   acknowledgements.
//! - [`count`]: the count block that holds a region piece's shared reference count, so that the
//!   sweep of the dead can acknowledge the pieces a killed holder held.

pub(crate) mod ack_queue;
pub(crate) mod acks;
pub(crate) mod count;
pub(crate) mod map;
