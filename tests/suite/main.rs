//! askloop's black-box suite, compiled into one binary so linking stays fast.

mod accounts;
mod answering;
mod authorization;
mod cli;
mod dashboard;
mod dashboard_live;
mod dashboard_navigation;
mod dashboard_pages;
mod declines;
mod delivery;
mod error_door;
mod four_eyes;
mod graphql;
mod hardening;
mod health;
mod held_money;
mod intake;
mod ledger_properties;
mod live;
mod money;
mod properties;
mod query_limits;
mod queue;
mod sign_in;
mod signing_vectors;
mod verdicts;
