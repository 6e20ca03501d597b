//! "mara is answering": who has a waiting question's answer form open, so others see it before
//! they start on the same one. Best effort and never a lock: it lives in this instance's memory
//! (people on another instance of askloop are not seen), each mark lasts [`MARK_LIFETIME`]
//! unless renewed, and answering never looks at it.
//!
//! A person marks one question at a time (marking another, or none, ends the last mark), so
//! what is held is at most one small entry per signed-in person, whatever they send.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

/// How long a mark lasts without being renewed. Clients renew well within it and forget a mark
/// they have not heard renewed for a little longer.
pub const MARK_LIFETIME: Duration = Duration::from_secs(30);

/// A renewal of the same mark sooner than this after the last one told is kept quiet: a person
/// (or a script) marking in a loop costs everyone else nothing.
pub const QUIET_RENEWAL: Duration = Duration::from_secs(5);

/// How many presence changes a slow subscriber may fall behind before it misses some (it then
/// reads them again from the next change; nothing here is a record).
const CHANNEL: usize = 1024;

/// Who is answering one question now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answering {
    /// The question's niche.
    pub niche_id: i64,
    /// The question.
    pub question_id: i64,
    /// The handles of those with its form open, sorted.
    pub handles: Vec<String>,
}

#[derive(Debug, Clone)]
struct Mark {
    niche_id: i64,
    question_id: i64,
    handle: String,
    told: Instant,
}

/// This instance's presence marks and the channel that tells of their changes.
pub struct Presence {
    marks: Mutex<HashMap<i64, Mark>>,
    tx: broadcast::Sender<Answering>,
}

impl Default for Presence {
    fn default() -> Self {
        Self {
            marks: Mutex::new(HashMap::new()),
            tx: broadcast::channel(CHANNEL).0,
        }
    }
}

impl std::fmt::Debug for Presence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Presence").finish_non_exhaustive()
    }
}

impl Presence {
    /// Person `user_id` (`handle`) has question `question_id` of niche `niche_id` open
    /// (`Some`), or none (`None`). Tells subscribers of each question whose set changed, and
    /// of a renewal once per [`QUIET_RENEWAL`].
    pub fn mark(&self, user_id: i64, handle: &str, open: Option<(i64, i64)>, now: Instant) {
        let mut told = Vec::new();
        {
            let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
            marks.retain(|_, mark| now.duration_since(mark.told) < MARK_LIFETIME);
            let before = marks.get(&user_id).cloned();
            match (before, open) {
                (Some(mark), Some((_, question_id)))
                    if mark.question_id == question_id
                        && now.duration_since(mark.told) < QUIET_RENEWAL => {}
                (before, Some((niche_id, question_id))) => {
                    marks.insert(
                        user_id,
                        Mark {
                            niche_id,
                            question_id,
                            handle: handle.to_owned(),
                            told: now,
                        },
                    );
                    if let Some(old) = before.filter(|old| old.question_id != question_id) {
                        told.push((old.niche_id, old.question_id));
                    }
                    told.push((niche_id, question_id));
                }
                (Some(old), None) => {
                    marks.remove(&user_id);
                    told.push((old.niche_id, old.question_id));
                }
                (None, None) => {}
            }
            for (niche_id, question_id) in told.iter().copied() {
                // Nobody listening is not an error.
                let _ = self.tx.send(answering(&marks, niche_id, question_id));
            }
        }
    }

    /// Who is answering each question of `niche_id` now (questions nobody is answering are left
    /// out).
    pub fn of_niche(&self, niche_id: i64, now: Instant) -> Vec<Answering> {
        let marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        let mut questions: Vec<i64> = marks
            .values()
            .filter(|m| m.niche_id == niche_id && now.duration_since(m.told) < MARK_LIFETIME)
            .map(|m| m.question_id)
            .collect();
        questions.sort_unstable();
        questions.dedup();
        questions
            .into_iter()
            .map(|question_id| answering(&marks, niche_id, question_id))
            .collect()
    }

    /// The changes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Answering> {
        self.tx.subscribe()
    }
}

fn answering(marks: &HashMap<i64, Mark>, niche_id: i64, question_id: i64) -> Answering {
    let mut handles: Vec<String> = marks
        .values()
        .filter(|m| m.question_id == question_id)
        .map(|m| m.handle.clone())
        .collect();
    handles.sort();
    Answering {
        niche_id,
        question_id,
        handles,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_moves_with_the_person_and_a_quick_renewal_is_kept_quiet() {
        let presence = Presence::default();
        let mut rx = presence.subscribe();
        let t0 = Instant::now();
        presence.mark(1, "mara", Some((7, 100)), t0);
        presence.mark(2, "ben", Some((7, 100)), t0);
        assert_eq!(
            rx.try_recv().map(|a| a.handles).ok(),
            Some(vec!["mara".to_owned()])
        );
        assert_eq!(
            rx.try_recv().map(|a| a.handles).ok(),
            Some(vec!["ben".to_owned(), "mara".to_owned()])
        );
        // Renewed at once: nothing told.
        presence.mark(1, "mara", Some((7, 100)), t0 + Duration::from_secs(1));
        assert!(rx.try_recv().is_err());
        // Mara moves on: question 100 loses her, question 101 gains her.
        presence.mark(1, "mara", Some((7, 101)), t0 + Duration::from_secs(2));
        let left = rx.try_recv().expect("100 told");
        assert_eq!(
            (left.question_id, left.handles),
            (100, vec!["ben".to_owned()])
        );
        let joined = rx.try_recv().expect("101 told");
        assert_eq!(
            (joined.question_id, joined.handles),
            (101, vec!["mara".to_owned()])
        );
        // Ben closes his form.
        presence.mark(2, "ben", None, t0 + Duration::from_secs(3));
        assert_eq!(rx.try_recv().map(|a| a.handles.len()).ok(), Some(0));
        assert_eq!(presence.of_niche(7, t0 + Duration::from_secs(3)).len(), 1);
        // Unrenewed marks lapse.
        assert!(presence.of_niche(7, t0 + MARK_LIFETIME * 2).is_empty());
        assert!(presence.of_niche(8, t0).is_empty());
    }
}
