//! The shared-memory transport: filled by the issue "Shared-memory transport core (fairmq-shm)".
