//! placeholder
pub mod js;
pub mod scan;
