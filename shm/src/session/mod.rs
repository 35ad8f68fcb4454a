//! The session: its management segment (who is attached, and the region registry), which of its
//! processes are alive, what each holds of shared blocks, and the monitor that cleans up after them.

pub(crate) mod ledger;
pub(crate) mod liveness;
pub(crate) mod management;
pub mod monitor;
pub(crate) mod registry;
