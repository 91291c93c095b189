#![no_main]
//! Fuzz target `frontmatter`: see `ralph_fuzz::props::frontmatter_split` for the properties checked.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ralph_fuzz::props::frontmatter_split(data));
