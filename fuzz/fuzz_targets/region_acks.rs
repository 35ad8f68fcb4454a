#![no_main]
//! See `fairmq_shm::fuzzing::region_acks`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairmq_shm::fuzzing::region_acks(data));
