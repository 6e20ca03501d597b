//! Withdrawing a question (docs/contract.md#withdrawal): the typed request and its check live
//! in `askloop-wire` ([`WithdrawRequest`] into [`Withdraw`]), shared with every door and the
//! agent SDK; re-exported here for the server.

pub use askloop_wire::withdraw::{QuestionRef, Withdraw, WithdrawRequest};
