//! placeholder
pub mod context;
pub mod entry;
pub mod error;
pub mod header;
pub mod js;
pub mod load;
pub mod migrate;
pub mod reader;
pub mod scan;
pub mod tree;
