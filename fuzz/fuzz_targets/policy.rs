#![no_main]
//! Fuzz target `policy`: see `ralph_fuzz::props::policy_file` for the properties checked.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ralph_fuzz::props::policy_file(data));
