#![no_main]
//! Fuzz target `state`: see `ralph_fuzz::props::state_file` for the properties checked.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ralph_fuzz::props::state_file(data));
