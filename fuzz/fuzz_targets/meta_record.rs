#![no_main]
//! See `fairmq_shm::testing::fuzzing::meta_record`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairmq_shm::testing::fuzzing::meta_record(data));
