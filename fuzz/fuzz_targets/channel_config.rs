#![no_main]
//! See `fairmq::fuzzing::channel_config`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairmq::fuzzing::channel_config(data));
