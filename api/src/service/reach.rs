//! Reaching operators when the dashboard is closed (docs/contract.md#reaching-operators), by
//! concern: a person's mail [`settings`] and per-niche [`preferences`], the signed [`links`]
//! mail carries (address verification, one-click unsubscribe), and the notification rows
//! ([`planning`]) a new question writes in its own transaction. Where a planned row goes is a
//! pure rule, [`crate::domain::placement`].
//!
//! A notification row starts `planned`: the mail worker places it by the person's preferences
//! as they are when it looks (at once, in a digest, after quiet hours, or dropped), so the
//! intake transaction does no more than one `INSERT … SELECT`.

pub mod links;
pub mod mail;
pub mod operator_hooks;
pub mod planning;
pub mod preferences;
pub mod settings;
pub mod subscriptions;

pub use crate::domain::placement::{Digest, Placement, Recipient, Wanted, place, urgency_name};
pub use links::{
    unsubscribe, unsubscribe_target, unsubscribe_token, verification_token, verify_email,
};
pub use planning::{
    drop_mail_for_departed, plan_admin_escalation, plan_escalation, plan_for_new_questions,
    recipient_of, wanted_of,
};
pub use preferences::{Preference, preferences_of, set_preference};
pub use settings::{
    MailSettings, VERIFY_LINK_HOURS, VERIFY_PER_HOUR, parse_time_zone, request_verification,
    set_email, set_quiet_hours, settings_of,
};
