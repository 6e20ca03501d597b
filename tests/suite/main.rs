//! askloop's black-box suite, compiled into one binary so linking stays fast.

mod answering;
mod cli;
mod dashboard;
mod graphql;
mod health;
mod intake;
mod signing_vectors;
