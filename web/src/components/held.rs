//! Intent before consequence: "Not enough context", "Ask the agent to research more" and "Use
//! this answer" (settling from knowledge) are held in this browser tab for [`HOLD`] with an "Undo" beside the question, and only then sent.
//!
//! Held here rather than by the server with a grace period: until the window closes nothing
//! has happened anywhere — no decline row, no event for the agent, no change in the other
//! operators' queues — so "Undo" needs no compensating write, and a tab closed within the window
//! leaves nothing half-done (the action was never sent; the question simply stays waiting).
//! The store lives as long as the app, so moving to another page inside the dashboard does not
//! cancel what is held: it is sent when its window closes, wherever the person is.

use std::time::Duration;

use leptos::prelude::*;

use crate::api::{self, ApiError};
use crate::operations::{AnswerQuestion, answer_question};
use crate::vocab::AnswerKind;

/// How long a decline or a research request waits for "Undo".
pub const HOLD: Duration = Duration::from_secs(10);

/// One action waiting for its window to close.
#[derive(Clone, PartialEq)]
pub struct HeldAction {
    /// The question.
    pub question_id: String,
    /// Its research round when the person acted.
    pub round: i64,
    /// `InsufficientContext` or `NeedsResearch`.
    pub kind: AnswerKind,
    /// What the agent should find out (research).
    pub note: Option<String>,
    /// The knowledge entry that settles the question ("Use this answer").
    pub entry: Option<String>,
    /// When it will be sent (ms since the epoch).
    pub send_at: f64,
    /// Each hold's own number, so an undone and redone action is a new one.
    pub serial: u64,
}

impl HeldAction {
    /// What the person did, in words.
    pub fn describe(&self) -> &'static str {
        match self.kind {
            AnswerKind::NeedsResearch => "Sent back for research",
            AnswerKind::FromKnowledge => "Settling with a verified answer",
            _ => "Declined: not enough context",
        }
    }
}

/// How a held action ended once sent.
#[derive(Clone, PartialEq)]
pub enum Sent {
    /// The server took it; its notice.
    Done(String),
    /// The server refused it; why, in words.
    Refused(String),
}

/// The app's held actions and how the sent ones ended, by question.
#[derive(Clone, Copy)]
pub struct Held {
    waiting: RwSignal<Vec<HeldAction>>,
    ended: RwSignal<Vec<(String, i64, Sent)>>,
    serial: StoredValue<u64>,
}

impl Held {
    /// Start the store for the whole app.
    pub fn provide() {
        provide_context(Held {
            waiting: RwSignal::new(Vec::new()),
            ended: RwSignal::new(Vec::new()),
            serial: StoredValue::new(0),
        });
    }

    /// The app's store.
    pub fn get() -> Self {
        use_context::<Held>().expect("Held::provide runs in App")
    }

    /// Hold `kind` on question `question_id` (round `round`) for [`HOLD`], then send it.
    pub fn hold(self, question_id: String, round: i64, kind: AnswerKind, note: Option<String>) {
        self.hold_action(question_id, round, kind, note, None);
    }

    /// Hold settling question `question_id` (round `round`) with knowledge entry `entry_id` for
    /// [`HOLD`], then send it ("Use this answer").
    pub fn hold_entry(self, question_id: String, round: i64, entry_id: String) {
        self.hold_action(
            question_id,
            round,
            AnswerKind::FromKnowledge,
            None,
            Some(entry_id),
        );
    }

    fn hold_action(
        self,
        question_id: String,
        round: i64,
        kind: AnswerKind,
        note: Option<String>,
        entry: Option<String>,
    ) {
        let serial = self.serial.get_value() + 1;
        self.serial.set_value(serial);
        let action = HeldAction {
            question_id: question_id.clone(),
            round,
            kind,
            note,
            entry,
            send_at: js_sys::Date::now() + HOLD.as_millis() as f64,
            serial,
        };
        self.ended
            .update(|list| list.retain(|(id, _, _)| *id != question_id));
        self.waiting.update(|list| {
            list.retain(|a| a.question_id != question_id);
            list.push(action);
        });
        set_timeout(move || self.send(serial), HOLD);
    }

    /// Take back what is held on question `question_id`: nothing is sent.
    pub fn undo(self, question_id: &str) {
        self.waiting
            .update(|list| list.retain(|a| a.question_id != question_id));
    }

    /// What is held on question `question_id`, if anything.
    pub fn waiting_on(self, question_id: &str) -> Option<HeldAction> {
        self.waiting
            .with(|list| list.iter().find(|a| a.question_id == question_id).cloned())
    }

    /// How the last held action sent on question `question_id` ended, with its round.
    pub fn ended_on(self, question_id: &str) -> Option<(i64, Sent)> {
        self.ended.with(|list| {
            list.iter()
                .find(|(id, _, _)| id == question_id)
                .map(|(_, round, sent)| (*round, sent.clone()))
        })
    }

    /// Forget how question `question_id`'s action ended (the person closed the message).
    pub fn forget(self, question_id: &str) {
        self.ended
            .update(|list| list.retain(|(id, _, _)| id != question_id));
    }

    fn send(self, serial: u64) {
        let Some(action) = self
            .waiting
            .with_untracked(|list| list.iter().find(|a| a.serial == serial).cloned())
        else {
            // Undone.
            return;
        };
        let input = answer_question::AnswerInput {
            question_id: action.question_id.clone(),
            kind: action.kind.clone(),
            option_id: None,
            body: action.note.clone(),
            actual_cost_minor: None,
            confidence: None,
            entry_id: action.entry.clone(),
        };
        leptos::task::spawn_local(async move {
            let result = api::run::<AnswerQuestion>(answer_question::Variables { input }).await;
            let sent = match result {
                Ok(data) => Sent::Done(data.answer_question.notice),
                Err(err) => Sent::Refused(refused(&err)),
            };
            self.waiting
                .update(|list| list.retain(|a| a.serial != serial));
            self.ended.update(|list| {
                list.retain(|(id, _, _)| *id != action.question_id);
                list.push((action.question_id.clone(), action.round, sent));
            });
        });
    }
}

fn refused(err: &ApiError) -> String {
    crate::components::question_card::refusal(err)
}
