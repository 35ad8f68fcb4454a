#![no_main]
//! See `fairmq_shm::testing::fuzzing::socket_frames`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairmq_shm::testing::fuzzing::socket_frames(data));
