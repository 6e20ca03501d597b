//! A question's life from intake to its end: asking, the queue and triage, routing, presence and
//! escalation, answering and declining, several answers, research rounds, withdrawal, expiry, and
//! the agent's reads of what it asked.

pub mod answering;
pub mod consensus;
pub mod escalation;
pub mod expiry;
pub mod intake;
pub mod lookup;
pub mod presence;
pub mod queue;
pub mod research;
pub mod routing;
pub mod triage;
pub mod withdrawal;
