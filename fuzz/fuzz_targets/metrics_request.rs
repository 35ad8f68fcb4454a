#![no_main]
//! See `fairmq::fuzzing::metrics_request`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairmq::fuzzing::metrics_request(data));
