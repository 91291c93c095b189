#![no_main]
//! Fuzz target `args`: see `ralph_fuzz::props::args` for the properties checked.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ralph_fuzz::props::args(data));
