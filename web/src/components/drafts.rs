//! Drafts that survive: what a person has typed or chosen on a waiting question is kept in this
//! browser (`localStorage`, per question) as they type, restored when the card shows again (a
//! reload, another visit), and forgotten once the answer is sent. Drafts older than a week are
//! dropped when the dashboard starts. Nothing here leaves the browser.

use serde::{Deserialize, Serialize};

/// The prefix of every draft's key.
const PREFIX: &str = "askloop.draft.";
/// How long a draft is kept, in milliseconds.
const KEPT_MS: f64 = 7.0 * 24.0 * 3600.0 * 1000.0;

/// What a person had started on one question.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Draft {
    /// The words (a task: its result).
    #[serde(default)]
    pub body: String,
    /// The option chosen.
    #[serde(default)]
    pub option: Option<String>,
    /// A task's cost as typed.
    #[serde(default)]
    pub cost: String,
    /// What the agent should find out, for a research request not yet sent.
    #[serde(default)]
    pub note: String,
    /// How sure, in percent, as chosen or typed.
    #[serde(default)]
    pub confidence: String,
    /// When it was last saved (ms since the epoch).
    #[serde(default)]
    pub saved: f64,
}

impl Draft {
    /// Whether nothing was started.
    pub fn is_empty(&self) -> bool {
        self.body.trim().is_empty()
            && self.option.is_none()
            && self.cost.trim().is_empty()
            && self.note.trim().is_empty()
    }
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

fn key(question_id: &str) -> String {
    format!("{PREFIX}{question_id}")
}

/// The draft kept for question `question_id`, if any.
pub fn load(question_id: &str) -> Option<Draft> {
    let text = storage()?.get_item(&key(question_id)).ok().flatten()?;
    serde_json::from_str::<Draft>(&text)
        .ok()
        .filter(|d| !d.is_empty())
}

/// Keep `draft` for question `question_id` (an empty one is forgotten). Storage that is full or
/// refused (a private window) keeps nothing, silently: the draft is still on the page.
pub fn save(question_id: &str, draft: &Draft) {
    let Some(storage) = storage() else { return };
    if draft.is_empty() {
        let _ = storage.remove_item(&key(question_id));
        return;
    }
    let mut draft = draft.clone();
    draft.saved = js_sys::Date::now();
    if let Ok(text) = serde_json::to_string(&draft) {
        let _ = storage.set_item(&key(question_id), &text);
    }
}

/// Forget question `question_id`'s draft.
pub fn forget(question_id: &str) {
    if let Some(storage) = storage() {
        let _ = storage.remove_item(&key(question_id));
    }
}

/// Drop drafts older than a week.
pub fn prune() {
    let Some(storage) = storage() else { return };
    let now = js_sys::Date::now();
    let count = storage.length().unwrap_or(0);
    let mut stale = Vec::new();
    for i in 0..count {
        let Some(k) = storage.key(i).ok().flatten() else {
            continue;
        };
        if !k.starts_with(PREFIX) {
            continue;
        }
        let old = storage
            .get_item(&k)
            .ok()
            .flatten()
            .and_then(|text| serde_json::from_str::<Draft>(&text).ok())
            .is_none_or(|d| now - d.saved > KEPT_MS);
        if old {
            stale.push(k);
        }
    }
    for k in stale {
        let _ = storage.remove_item(&k);
    }
}
