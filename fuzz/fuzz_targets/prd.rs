#![no_main]
//! Fuzz target `prd`: see `ralph_fuzz::props::prd` for the properties checked.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ralph_fuzz::props::prd(data));
