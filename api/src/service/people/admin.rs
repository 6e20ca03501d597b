//! Admin decisions: niches, memberships and contribution review. Every decision is audited.
//!
//! By job: niches and memberships (`niches`), contribution review (`review`), and manual
//! adjustments (`adjustment`).

mod adjustment;
mod niches;
mod review;

pub use adjustment::manual_adjustment;
pub use niches::{
    NicheChanges, WAITING_MAX, Waiting, add_member, all_niches, create_niche, members_of,
    set_member_status, update_niche, waiting_to_join,
};
pub use review::{Decision, review, review_queue};
