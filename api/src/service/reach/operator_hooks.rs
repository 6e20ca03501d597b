//! Operator webhooks (docs/contract.md#operator-webhooks): URLs a person registers for a niche
//! they belong to (an admin, for any niche) that hear of new and escalated questions — a small
//! signed JSON a chat bridge can forward. Their events are rows of `deliveries` (`webhook_id`),
//! written in the transaction that causes them and sent by the delivery worker with the agent's
//! retries and attempt log.
//!
//! A webhook hears of its niche only while its owner may ([`crate::service::people::access::who_may_hear`]: an admin, or
//! an active member): that is checked when its deliveries are written and again when each is
//! sent, and a member who is suspended or leaves has what waits for their webhooks dropped at
//! once, with the reason on each. A member's webhook reaches only public addresses, and its
//! owner sees of a failed attempt no more than its status code or that the address was refused.
//!
//! By job: the rows a question's change writes (`events`), registering and removing
//! (`registration`), test sends and the owner's view of attempts (`attempts`), and what the
//! delivery worker and membership changes ask (`sending`).

mod attempts;
mod events;
mod registration;
mod sending;

pub use attempts::{OwnerView, recent_deliveries, send_test, shown_error};
pub use events::{HookEvent, QuestionFacts, enqueue, plain, question_path};
pub use registration::{Hook, PlainHttp, check_scheme, is_private, mine, register, remove};
pub use sending::{HookDestination, destination, drop_for_departed};

/// How many live webhooks one person may have in one niche.
pub const PER_NICHE_MAX: usize = 5;

/// The longest title a webhook body carries.
pub const TITLE_MAX: usize = 200;

/// Why a delivery to a webhook was dropped: its owner may no longer hear of its niche.
pub const OWNER_DEPARTED: &str = "dropped: its owner is no longer an active member of the niche";

#[cfg(test)]
mod tests {
    use super::{PlainHttp, check_scheme, is_private};
    use crate::service::people::access::Viewer;

    #[test]
    fn plain_http_is_only_for_an_admins_local_or_own_host() {
        let member = Viewer {
            user_id: 1,
            handle: "ana".into(),
            is_admin: false,
        };
        let admin = Viewer {
            user_id: 2,
            handle: "root".into(),
            is_admin: true,
        };
        let plain = PlainHttp {
            own_host: Some("askloop.example.org".into()),
            anywhere: false,
        };
        for viewer in [&member, &admin] {
            assert!(check_scheme("https://hooks.example.com/x", viewer, &plain).is_ok());
            assert!(check_scheme("http://hooks.example.com/x", viewer, &plain).is_err());
        }
        for url in [
            "http://127.0.0.1:9/x",
            "http://localhost/x",
            "http://ASKLOOP.example.org/hooks",
        ] {
            assert!(check_scheme(url, &admin, &plain).is_ok(), "{url}");
            assert!(check_scheme(url, &member, &plain).is_err(), "{url}");
        }
        let no_origin = PlainHttp::default();
        assert!(check_scheme("http://askloop.example.org/", &admin, &no_origin).is_err());
        let tests = PlainHttp {
            own_host: None,
            anywhere: true,
        };
        assert!(check_scheme("http://hooks.example.com/x", &member, &tests).is_ok());
    }

    #[test]
    fn local_and_private_hosts_are_told_apart_from_public_ones() {
        for url in [
            "http://127.0.0.1:9/x",
            "http://10.1.2.3/",
            "http://192.168.0.10/",
            "http://172.16.5.5/",
            "http://169.254.169.254/latest",
            "http://100.64.0.1/",
            "http://0.0.0.0/",
            "http://[::1]/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://localhost:8080/",
            "http://chat.internal/",
            "http://bridge/",
        ] {
            assert!(is_private(url), "{url}");
        }
        for url in [
            "https://hooks.slack.com/services/x",
            "https://93.184.216.34/",
            "https://[2606:4700::1111]/",
        ] {
            assert!(!is_private(url), "{url}");
        }
    }
}
