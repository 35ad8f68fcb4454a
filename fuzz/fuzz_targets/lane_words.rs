#![no_main]
//! See `fairmq_shm::testing::fuzzing::lane_words`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairmq_shm::testing::fuzzing::lane_words(data));
