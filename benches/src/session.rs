//! Shared-memory sessions owned by one benchmark: the guard every crate's tests use (see
//! `fairmq_shm::testing::session`).

pub use fairmq_shm::testing::session::{remove_session, unique_session, SessionGuard};
