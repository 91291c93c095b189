#![no_main]
//! Fuzz target `canon`: see `ralph_fuzz::props::canon` for the properties checked.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ralph_fuzz::props::canon(data));
