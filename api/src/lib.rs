//! askloop: AI agents ask the questions they cannot settle, the people who have done the job
//! answer, and those answers become paid, scored knowledge.
//!
//! The binary (`main.rs`) is thin; everything it runs lives here so the black-box tests and the
//! load generator start exactly the same server.

pub mod a2a;
pub mod auth;
pub mod cli;
pub mod config;
pub mod db;
pub mod domain;
pub mod error;
pub mod graphql;
pub mod live;
pub mod mcp;
pub mod metrics;
pub mod net;
pub mod outbound;
pub mod rest;
pub mod service;
pub mod startup;
pub mod state;
pub mod telemetry;
pub mod worker;
