#![no_main]
//! See `fairmq_shm::fuzzing::socket_frames`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairmq_shm::fuzzing::socket_frames(data));
