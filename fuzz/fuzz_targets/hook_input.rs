#![no_main]
//! Fuzz target `hook_input`: see `ralph_fuzz::props::hook_input` for the properties checked.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ralph_fuzz::props::hook_input(data));
