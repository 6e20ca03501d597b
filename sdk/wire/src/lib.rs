//! `askloop-wire`: the requests an agent sends askloop (docs/contract.md#signed-routes), each
//! one typed request parsed once at the edge, with the validation that turns it into what the
//! server acts on.
//!
//! The server (`askloop`) parses every surface's request with these types (REST, MCP, A2A, the
//! command line), and the agent SDK (`askloop-agent`) builds and sends them, so a field is
//! described in one place. The refusal messages are the contract's (docs/contract.md#errors):
//! a field of the wrong type is kept as [`Field::Wrong`] while the body is read and refused by
//! the validation, in the order and with the words the contract gives, never with serde's text.

pub mod ask;
pub mod field;
pub mod knowledge;
pub mod limits;
pub mod lookup;
pub mod research;
pub mod withdraw;

pub use field::Field;

/// Why a request was refused (a 400, `BAD_USER_INPUT`, with this text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadRequest(pub String);
