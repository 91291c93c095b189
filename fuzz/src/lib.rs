//! Property functions for the fuzz targets; see `props.rs`.
pub mod props;
