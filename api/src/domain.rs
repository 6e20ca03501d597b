//! Pure rules: no I/O, no framework types, unit-tested in place.

pub mod intake;
pub mod signing;
pub mod slug;
pub mod text;
