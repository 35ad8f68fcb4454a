//! The session: its management segment (who is attached, and the region registry), which of its
//! processes are alive and what each holds of shared blocks.

pub(crate) mod attach;
pub(crate) mod layout;
pub(crate) mod ledger;
pub(crate) mod liveness;
pub(crate) mod management;
pub(crate) mod registry;
