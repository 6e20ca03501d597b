//! The black-box harness: [`TestApp`] starts a real askloop on a random port over a fresh
//! database (an SQLite file, or a new PostgreSQL database when `TEST_DATABASE_URL` is set) and
//! tears it down afterwards. Each concern has its own module; the names tests use most are
//! re-exported here, so `askloop_tests::TestApp` and `askloop_tests::error_code` read as before.
//!
//! - [`database`]: the backends and a fresh database per test.
//! - [`app`]: the running askloop, its config, pausing, resuming and second instances.
//! - [`signed`]: requests signed as the agent signs them, and asking a question.
//! - [`answers`]: signing in, answering and verifying as a person does, through GraphQL.
//! - [`graphql`]: GraphQL over HTTP and reading error codes.
//! - [`fixtures`], [`people`]: builder functions for niches, questions, people and memberships.
//! - [`socket`]: a `graphql-transport-ws` client for subscriptions.
//! - [`receiver`]: an agent that receives askloop's webhooks and verifies them.
//! - [`resolver`]: a name resolver the test controls, for outbound webhooks (no real DNS).
//! - [`standard_webhooks`]: the Standard Webhooks npm library's verdict on a delivery.
//! - [`mcp`]: MCP over HTTP by hand, agents with tokens, and where the TypeScript SDK lives.
//! - [`browser`]: headless Chromium over the DevTools protocol.
//! - [`pages`]: what every dashboard page object does alike (notices, errors, secrets shown once).
//! - [`axe`]: axe-core's accessibility checks on the page a browser shows.
//! - [`proxy`]: a real nginx in front of a test app, forwarding the client's address.
//! - [`wait`]: waiting for a fact (a row, a request, a gauge) with a deadline, never for time.
//! - [`on_both_backends!`]: one storage test per backend.

pub mod answers;
pub mod app;
pub mod axe;
pub mod browser;
pub mod database;
pub mod fixtures;
pub mod graphql;
pub mod mcp;
mod on_both_backends;
pub mod outbox;
pub mod outside_client;
pub mod pages;
pub mod people;
pub mod proxy;
pub mod receiver;
pub mod resolver;
pub mod served;
pub mod signed;
pub mod smtp;
pub mod socket;
pub mod standard_webhooks;
pub mod wait;

pub use app::{
    SECRET, TestApp, askloop_binary, example_binary, load_binary, test_config, web_dist,
};
pub use database::{Backend, TestDatabase};
pub use graphql::error_code;
