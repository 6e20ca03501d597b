//! What a question card sends, and what the person sees while and after it is sent:
//!
//! - **Answer** (`answerQuestion`) goes at once; a delegated task (docs/contract.md#delegated-tasks)
//!   is completed the same way, with its result and what it actually cost (0 up to its limit).
//!   What is typed is checked here first, so an amount or a "how sure" the server would refuse
//!   is explained beside the form and nothing is sent.
//! - **Not enough context**, **research** (with what the agent should find out, required) and
//!   **Use this answer** (settling from knowledge) are held ten seconds with "Undo"
//!   (`components::held`); one the server then refuses comes back to the card as an error.
//! - **Dismiss** (`dismissQuestion`, with an optional reason for the agent).
//!
//! Once an answer or a dismissal is taken, the card's draft is forgotten.

use leptos::prelude::*;

use super::{Fields, focus_by_id};
use crate::api::{self, ApiError, ErrorCode};
use crate::components::drafts;
use crate::components::held::{Held, Sent};
use crate::components::money::{money, parse_money};
use crate::operations::{AnswerQuestion, DismissQuestion, answer_question, dismiss_question};
use crate::vocab::AnswerKind;

/// What acting on a card did: the question, its research round, and the server's result.
pub type Acted = (String, i64, answer_question::AnswerQuestionAnswerQuestion);

/// What a refused answer means for the person who sent it, by the server's code and reason.
pub fn refusal(err: &ApiError) -> String {
    match (&err.code, err.reason.as_deref()) {
        (ErrorCode::Unauthenticated, _) => {
            "Your session has ended. Sign in again in another tab; what you typed is still here."
                .to_owned()
        }
        (ErrorCode::Conflict, Some("KNOWLEDGE_NOT_CURRENT")) => {
            format!("{err} That entry was replaced or withdrawn; answer in your own words.")
        }
        (ErrorCode::Conflict, _) => format!("{err} It may already be settled."),
        _ => err.to_string(),
    }
}

/// The question a card acts on.
#[derive(Clone)]
pub(super) struct Target {
    /// Its id.
    pub(super) id: String,
    /// Its research round when the card was shown (a held action names it).
    pub(super) round: i64,
    /// A task's budget limit (minor units); `None` for a question.
    pub(super) task_limit: Option<i64>,
}

/// What the form holds when the person answers, as typed.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Typed {
    /// The option chosen.
    pub(super) choice: Option<String>,
    /// The words (a task: its result).
    pub(super) body: String,
    /// A task's cost.
    pub(super) cost: String,
    /// How sure, in percent.
    pub(super) sure: String,
}

/// The `answerQuestion` input for answering `target` with `kind` (and, from knowledge, with
/// entry `entry`), or why what is typed cannot be sent: a task's cost must be given, from 0 up
/// to its limit (the server checks it again); "how sure" is optional, from 50 to 100 when given.
pub(super) fn answer_input(
    target: &Target,
    kind: &AnswerKind,
    entry: Option<&str>,
    typed: Typed,
) -> Result<answer_question::AnswerInput, String> {
    let actual_cost_minor = match (target.task_limit, kind) {
        (Some(limit), AnswerKind::Answered) => match parse_money(&typed.cost) {
            Some(minor) if minor <= limit => Some(minor),
            _ => {
                return Err(format!(
                    "Say what it cost: an amount from 0.00 up to the task's limit of {}.",
                    money(limit, "USD")
                ));
            }
        },
        _ => None,
    };
    let confidence = match (kind, typed.sure.trim()) {
        (AnswerKind::Answered, "") => None,
        (AnswerKind::Answered, sure) => match sure.trim_end_matches('%').trim().parse::<i64>() {
            Ok(value) if (50..=100).contains(&value) => Some(value),
            _ => {
                return Err(
                    "Say how sure you are as a percentage from 50 to 100, or leave it empty."
                        .to_owned(),
                );
            }
        },
        _ => None,
    };
    Ok(answer_question::AnswerInput {
        confidence,
        question_id: target.id.clone(),
        option_id: typed.choice.filter(|_| *kind == AnswerKind::Answered),
        body: Some(typed.body).filter(|b| entry.is_none() && !b.trim().is_empty()),
        actual_cost_minor,
        entry_id: entry.map(str::to_owned),
        kind: kind.clone(),
    })
}

/// `answerQuestion` for the card, dispatched with the kind and, from knowledge, the entry; on
/// success the draft goes and `on_done` hears it, otherwise the card says why.
pub(super) fn answer(
    target: Target,
    fields: Fields,
    sent: RwSignal<bool>,
    on_done: Callback<Acted>,
) -> Action<(AnswerKind, Option<String>), ()> {
    Action::new_local(move |(kind, entry): &(AnswerKind, Option<String>)| {
        let input = answer_input(&target, kind, entry.as_deref(), fields.typed_untracked());
        let (id, round) = (target.id.clone(), target.round);
        async move {
            fields.error.set(None);
            let input = match input {
                Ok(input) => input,
                Err(refusal) => return fields.error.set(Some(refusal)),
            };
            match api::run::<AnswerQuestion>(answer_question::Variables { input }).await {
                Ok(data) => {
                    sent.set(true);
                    drafts::forget(&id);
                    on_done.run((id, round, data.answer_question));
                }
                Err(err) => fields.error.set(Some(refusal(&err))),
            }
        }
    })
}

/// `dismissQuestion` for question `id`, with the reason typed (if any); on success the draft goes
/// and `on_dismissed` hears it, otherwise the card says why.
pub(super) fn dismiss(
    id: String,
    fields: Fields,
    sent: RwSignal<bool>,
    on_dismissed: Callback<String>,
) -> Action<(), ()> {
    Action::new_local(move |_: &()| {
        let id = id.clone();
        let reason = Some(fields.reason.get_untracked()).filter(|r| !r.trim().is_empty());
        async move {
            fields.error.set(None);
            let variables = dismiss_question::Variables {
                id: id.clone(),
                reason,
            };
            match api::send::<DismissQuestion>(variables).await {
                Ok(()) => {
                    sent.set(true);
                    drafts::forget(&id);
                    on_dismissed.run(id);
                }
                Err(err) => fields.error.set(Some(err.to_string())),
            }
        }
    })
}

/// "Not enough context": held ten seconds for "Undo".
pub(super) fn decline(target: &Target, fields: Fields) {
    fields.error.set(None);
    Held::get().hold(
        target.id.clone(),
        target.round,
        AnswerKind::InsufficientContext,
        None,
    );
}

/// "Send back for research" with the note written, held ten seconds for "Undo"; without a note
/// nothing is held and the note's field (`note_field`, an element id) says why and takes focus.
pub(super) fn send_back(target: &Target, fields: Fields, note_field: &str) {
    let written = fields.note.get_untracked().trim().to_owned();
    if written.is_empty() {
        fields.note_error.set(Some(
            "Say what the agent should find out: it is sent with the question.".to_owned(),
        ));
        focus_by_id(note_field);
        return;
    }
    fields.error.set(None);
    fields.note_error.set(None);
    Held::get().hold(
        target.id.clone(),
        target.round,
        AnswerKind::NeedsResearch,
        Some(written),
    );
}

/// "Use this answer" with knowledge entry `entry`: held ten seconds with "Undo", as decline and
/// research are.
pub(super) fn use_entry(target: &Target, fields: Fields, entry: String) {
    fields.error.set(None);
    Held::get().hold_entry(target.id.clone(), target.round, entry);
}

/// Shows on the card, as an error, why the server refused a held action on it (one of this
/// round's: an older round's refusal is not this card's).
pub(super) fn show_held_refusals(target: &Target, fields: Fields) {
    let held = Held::get();
    let (id, round) = (target.id.clone(), target.round);
    Effect::new(move |_| {
        if let Some((r, Sent::Refused(why))) = held.ended_on(&id)
            && r == round
        {
            fields.error.set(Some(why));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::{Target, Typed, answer_input};
    use crate::vocab::AnswerKind;

    fn question() -> Target {
        Target {
            id: "7".to_owned(),
            round: 0,
            task_limit: None,
        }
    }

    fn task(limit: i64) -> Target {
        Target {
            task_limit: Some(limit),
            ..question()
        }
    }

    fn typed(body: &str, sure: &str) -> Typed {
        Typed {
            body: body.to_owned(),
            sure: sure.to_owned(),
            ..Typed::default()
        }
    }

    #[test]
    fn an_answer_sends_its_words_option_and_how_sure() {
        let input = answer_input(
            &question(),
            &AnswerKind::Answered,
            None,
            Typed {
                choice: Some("3".to_owned()),
                ..typed("  yes, it holds ", "80 %")
            },
        )
        .expect("an answer that can be sent");
        assert_eq!(input.question_id, "7");
        assert_eq!(input.option_id.as_deref(), Some("3"));
        assert_eq!(input.body.as_deref(), Some("  yes, it holds "));
        assert_eq!(input.confidence, Some(80));
        assert_eq!(input.actual_cost_minor, None);
        assert_eq!(input.entry_id, None);
    }

    #[test]
    fn blank_words_and_an_unsaid_how_sure_are_left_out() {
        let input = answer_input(&question(), &AnswerKind::Answered, None, typed("  ", ""))
            .expect("an answer that can be sent");
        assert_eq!(input.body, None);
        assert_eq!(input.confidence, None);
    }

    #[test]
    fn how_sure_outside_fifty_to_a_hundred_is_refused() {
        for sure in ["49", "101", "very", "-80"] {
            let refused = answer_input(&question(), &AnswerKind::Answered, None, typed("y", sure));
            assert_eq!(
                refused.err().as_deref(),
                Some("Say how sure you are as a percentage from 50 to 100, or leave it empty.")
            );
        }
    }

    #[test]
    fn a_task_needs_a_cost_within_its_limit() {
        let over = Typed {
            cost: "12.01".to_owned(),
            ..typed("done", "")
        };
        assert_eq!(
            answer_input(&task(1200), &AnswerKind::Answered, None, over)
                .err()
                .as_deref(),
            Some("Say what it cost: an amount from 0.00 up to the task's limit of 12.00 USD.")
        );
        assert!(answer_input(&task(1200), &AnswerKind::Answered, None, typed("done", "")).is_err());
        let within = Typed {
            cost: "12".to_owned(),
            ..typed("done", "")
        };
        let input = answer_input(&task(1200), &AnswerKind::Answered, None, within)
            .expect("a cost within the limit");
        assert_eq!(input.actual_cost_minor, Some(1200));
    }

    #[test]
    fn settling_from_knowledge_sends_the_entry_and_nothing_typed() {
        let input = answer_input(
            &question(),
            &AnswerKind::FromKnowledge,
            Some("41"),
            Typed {
                choice: Some("3".to_owned()),
                ..typed("my words", "70")
            },
        )
        .expect("an answer that can be sent");
        assert_eq!(input.entry_id.as_deref(), Some("41"));
        assert_eq!(input.option_id, None);
        assert_eq!(input.body, None);
        assert_eq!(input.confidence, None);
    }
}
