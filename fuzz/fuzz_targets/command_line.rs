#![no_main]
//! See `fairmq::fuzzing::command_line`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairmq::fuzzing::command_line(data));
