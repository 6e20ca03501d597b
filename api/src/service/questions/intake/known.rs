//! The niches a database's batches read last, so that a plain batch of niches read before need
//! not read them again ([`plain`](super::plain)): on PostgreSQL that read is one round trip of a
//! batch's two. Nothing here is trusted on its own word: the plain statement checks that each
//! niche is still the row that was read (its version) before it inserts a question, and a batch
//! it would refuse is read again, so a niche opened, closed or changed since is never acted on
//! as it was.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use entity::niches;

use super::{Niches, Request};
use crate::domain::intake::NicheRef;

/// How long a niche's read is relied on. The statement checks the version anyway; the bound is
/// for the version itself, a transaction id, which PostgreSQL reuses after about four billion
/// transactions.
const KEPT_FOR: Duration = Duration::from_secs(60);

/// The most niches kept: a process serves few, and the bound keeps requests naming many
/// (every one of them read for real, none of them refused) from growing it without end.
const MOST: usize = 4096;

/// The niches read last, by id, and their slugs.
#[derive(Default)]
pub(super) struct Known {
    slugs: HashMap<String, i64>,
    niches: HashMap<i64, Entry>,
}

/// One niche as read, and when.
struct Entry {
    niche: niches::Model,
    version: String,
    hooks: bool,
    mail: bool,
    read_at: Instant,
}

impl Known {
    /// The niches `requests` name, as read before, if every one was read within [`KEPT_FOR`] of
    /// `now`.
    pub(super) fn niches_of(&self, requests: &[&Request], now: Instant) -> Option<Niches> {
        let mut read = Niches::default();
        for request in requests {
            let id = match &request.new.niche {
                NicheRef::Slug(slug) => *self.slugs.get(slug)?,
                NicheRef::Id(id) => *id,
            };
            if read.versions.contains_key(&id) {
                continue;
            }
            let entry = self.niches.get(&id)?;
            if now.saturating_duration_since(entry.read_at) > KEPT_FOR {
                return None;
            }
            read.versions.insert(id, entry.version.clone());
            if entry.hooks {
                read.reach.hooks.insert(id);
            }
            if entry.mail {
                read.reach.mail.insert(id);
            }
            read.rows.push(entry.niche.clone());
        }
        Some(read)
    }

    /// Keep the niches of `read` (those with a version: read on PostgreSQL), read at `now`.
    pub(super) fn remember(&mut self, read: &Niches, now: Instant) {
        for niche in &read.rows {
            let Some(version) = read.versions.get(&niche.id) else {
                continue;
            };
            match self.niches.get(&niche.id) {
                // Renamed since: its old slug no longer names it.
                Some(kept)
                    if kept.niche.slug != niche.slug
                        && self.slugs.get(&kept.niche.slug) == Some(&niche.id) =>
                {
                    self.slugs.remove(&kept.niche.slug);
                }
                Some(_) => {}
                None if self.niches.len() >= MOST => {
                    self.slugs.clear();
                    self.niches.clear();
                }
                None => {}
            }
            self.slugs.insert(niche.slug.clone(), niche.id);
            self.niches.insert(
                niche.id,
                Entry {
                    niche: niche.clone(),
                    version: version.clone(),
                    hooks: read.reach.hooks.contains(&niche.id),
                    mail: read.reach.mail.contains(&niche.id),
                    read_at: now,
                },
            );
        }
    }

    /// Drop the niches of `read`: one of them is no longer as it was read.
    pub(super) fn forget(&mut self, read: &Niches) {
        for niche in &read.rows {
            self.niches.remove(&niche.id);
            if self.slugs.get(&niche.slug) == Some(&niche.id) {
                self.slugs.remove(&niche.slug);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(niche: serde_json::Value) -> Request {
        let mut body = serde_json::json!({
            "externalId": "q",
            "title": "Which?",
            "question": "Which of the two?",
        });
        for (key, value) in niche.as_object().expect("an object") {
            body[key] = value.clone();
        }
        Request {
            asker: crate::service::agents::registry::Asker::Default,
            new: crate::domain::intake::parse_new_question(&body).expect("a valid question"),
            now: chrono::Utc::now(),
        }
    }

    fn niche(id: i64, slug: &str) -> niches::Model {
        niches::Model {
            id,
            slug: slug.into(),
            name: slug.into(),
            description: String::new(),
            status: niches::NicheStatus::Open,
            primary_agent_id: None,
            bounty_minor: 0,
            max_bounty_minor: 0,
            monthly_budget_minor: None,
            default_question_lifetime_secs: 3600,
            declines_to_notify: 0,
            budget_month: None,
            budget_spent_minor: 0,
            budget_reserved_minor: 0,
            escalate_high_secs: None,
            escalate_normal_secs: None,
            escalate_low_secs: None,
            similarity_threshold_bps: 0,
            reuse_price_minor: 0,
            trust_lower_bound_bps: 0,
            first_wave: None,
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
        }
    }

    fn read(niches: &[(i64, &str, Option<&str>)]) -> Niches {
        let mut read = Niches::default();
        for &(id, slug, version) in niches {
            read.rows.push(niche(id, slug));
            if let Some(version) = version {
                read.versions.insert(id, version.into());
            }
        }
        read
    }

    #[test]
    fn a_batch_is_known_only_when_every_niche_it_names_is() {
        let now = Instant::now();
        let mut known = Known::default();
        known.remember(&read(&[(1, "roofing", Some("7")), (2, "games", None)]), now);
        let roofing = request(serde_json::json!({"nicheSlug": "roofing"}));
        let by_id = request(serde_json::json!({"nicheId": 1}));
        let games = request(serde_json::json!({"nicheSlug": "games"}));
        let found = known
            .niches_of(&[&roofing, &by_id], now)
            .expect("roofing by slug and by id");
        assert_eq!(found.rows.len(), 1, "each niche once");
        assert_eq!(found.versions.get(&1).map(String::as_str), Some("7"));
        // Read without a version (SQLite) is not kept; an unread niche is not known.
        assert!(known.niches_of(&[&roofing, &games], now).is_none());
        let later = now + KEPT_FOR + Duration::from_secs(1);
        assert!(
            known.niches_of(&[&roofing], later).is_none(),
            "kept a minute"
        );
        known.forget(&found);
        assert!(known.niches_of(&[&by_id], now).is_none(), "forgotten");
    }

    #[test]
    fn a_slug_follows_the_niche_read_last_and_the_keeping_is_bounded() {
        let now = Instant::now();
        let mut known = Known::default();
        known.remember(&read(&[(1, "roofing", Some("7"))]), now);
        // The slug moved to another niche: the later read wins, and forgetting the first
        // leaves it.
        known.remember(&read(&[(2, "roofing", Some("9"))]), now);
        known.forget(&read(&[(1, "roofing", Some("7"))]));
        let roofing = request(serde_json::json!({"nicheSlug": "roofing"}));
        let found = known.niches_of(&[&roofing], now).expect("the later niche");
        assert_eq!(found.rows[0].id, 2);
        let many: Vec<(i64, String)> = (10..10 + MOST as i64)
            .map(|id| (id, format!("niche-{id}")))
            .collect();
        let many: Vec<(i64, &str, Option<&str>)> = many
            .iter()
            .map(|(id, slug)| (*id, slug.as_str(), Some("1")))
            .collect();
        known.remember(&read(&many), now);
        assert!(known.niches.len() <= MOST, "{}", known.niches.len());
        assert!(known.slugs.len() <= MOST, "{}", known.slugs.len());
    }

    #[test]
    fn a_renamed_niche_is_no_longer_known_by_its_old_slug() {
        let now = Instant::now();
        let mut known = Known::default();
        known.remember(&read(&[(1, "roofing", Some("7"))]), now);
        known.remember(&read(&[(1, "roofs", Some("8"))]), now);
        let old = request(serde_json::json!({"nicheSlug": "roofing"}));
        let new = request(serde_json::json!({"nicheSlug": "roofs"}));
        assert!(known.niches_of(&[&old], now).is_none(), "the old slug");
        let found = known.niches_of(&[&new], now).expect("the new slug");
        assert_eq!(found.versions.get(&1).map(String::as_str), Some("8"));
    }
}
