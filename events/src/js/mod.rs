//! JavaScript semantics pi's results depend on (spec README, "JS-isms"), in one home for every
//! crate:
//!
//! - [`stringify`](mod@stringify): how `JSON.stringify` spells values, so lines pith creates are byte for
//!   byte what pi would have written.
//! - [`semantics`]: `trim()`'s whitespace set, truthiness of JSON values, `Number(x)` and
//!   `String(x)` of JSON values, and `new Date(x).getTime()`.
//! - [`surrogates`]: JSON text with lone surrogate escapes made decodable.

pub mod semantics;
pub mod stringify;
pub mod surrogates;

pub use semantics::*;
pub use stringify::*;
pub use surrogates::*;
