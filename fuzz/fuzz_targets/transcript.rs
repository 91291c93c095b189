#![no_main]
//! Fuzz target `transcript`: see `ralph_fuzz::props::transcript_tail` for the properties checked.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ralph_fuzz::props::transcript_tail(data));
