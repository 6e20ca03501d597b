//! Use-cases, one module per area. Services own their transactions and accept only validated
//! input; they know nothing of HTTP or GraphQL.

pub mod accounts;
pub mod audit;
pub mod demo;
pub mod intake;
pub mod niches;
