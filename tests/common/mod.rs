//! Everything the differential and provider tests share: the tool shapes and the document
//! generator. Tests that need only the shapes include `shapes.rs` alone.

pub mod generator;
pub mod shapes;

pub use generator::*;
pub use shapes::*;
