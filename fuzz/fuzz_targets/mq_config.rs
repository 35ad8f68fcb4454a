#![no_main]
//! See `fairmq::fuzzing::mq_config`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairmq::fuzzing::mq_config(data));
