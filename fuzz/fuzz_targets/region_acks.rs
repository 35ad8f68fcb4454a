#![no_main]
//! See `fairmq_shm::testing::fuzzing::region_acks`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairmq_shm::testing::fuzzing::region_acks(data));
