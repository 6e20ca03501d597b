//! "Already answered?" on a question card: up to two current knowledge entries of the niche like
//! the waiting question, read once when the card is shown (not with the card, so a page of cards
//! costs a search per card only as cards open), each offering "Use this answer" when it can
//! answer the question. A shortcut, not the way to answer: nothing shows when there are none or
//! when they could not be read.

use leptos::prelude::*;

use super::{shorten, visible_controls};
use crate::api;
use crate::operations::{SimilarKnowledge, similar_knowledge};

/// "Already answered?": up to two current knowledge entries of the niche like waiting question
/// `question_id` (read once, when this is shown), each with a link to its page and, when it can
/// answer this question, "Use this answer", which hands the entry's id to `on_use` (the card
/// holds it ten seconds with "Undo" before it is sent). An entry can answer it when the question
/// has no options, or when the entry's chosen option is one of them by label (ignoring case and
/// surrounding spaces): the option the agent will receive is named beside the button. An entry
/// that cannot says why instead. Nothing is shown when there are none, or when they could not be
/// read (it is a shortcut, not the way to answer).
#[component]
pub(super) fn AlreadyAnswered(
    question_id: String,
    busy: Signal<bool>,
    on_use: Callback<String>,
) -> impl IntoView {
    let heading_id = format!("already-answered-{question_id}");
    let entries = LocalResource::new(move || {
        let id = question_id.clone();
        async move {
            api::run::<SimilarKnowledge>(similar_knowledge::Variables { id })
                .await
                .map(|data| {
                    let options: Vec<String> =
                        data.question.options.into_iter().map(|o| o.label).collect();
                    (options, data.question.similar_knowledge)
                })
                .unwrap_or_default()
        }
    });
    move || {
        let heading_id = heading_id.clone();
        entries.get().filter(|(_, list)| !list.is_empty()).map(|(options, list)| {
            let items = list
                .into_iter()
                .map(|entry| {
                    let href = format!("/dashboard/niches/{}/knowledge/{}", entry.niche_slug, entry.id);
                    let title = visible_controls(&shorten(&entry.title, 120));
                    let entry_id = entry.id.clone();
                    let receives = receives(&options, entry.option_label.as_deref());
                    let offer = match receives {
                        Some(label) => view! {
                            <p class="receives" data-receives="">
                                {match label {
                                    Some(label) => view! { "The agent will receive the option "<strong><bdi>{visible_controls(&label)}</bdi></strong>" with these words." }.into_any(),
                                    None => view! { "The agent will receive these words." }.into_any(),
                                }}
                            </p>
                            <button type="button" class="secondary small" data-kind="from_knowledge" disabled=busy on:click=move |_| on_use.run(entry_id.clone())>
                                "Use this answer"<span class="visually-hidden">" — "{title.clone()}</span>
                            </button>
                        }.into_any(),
                        None => view! {
                            <p class="muted" data-cannot-use="">"Its chosen option is not one of this question's options, so it cannot settle this question."</p>
                        }.into_any(),
                    };
                    view! {
                        <li data-entry-id=entry.id.clone()>
                            <a href=href><bdi>{title.clone()}</bdi></a>
                            {entry.option_label.map(|label| view! {
                                <p><strong>"Chosen: "</strong><bdi>{visible_controls(&shorten(&label, 120))}</bdi></p>
                            })}
                            {entry.answer.filter(|a| !a.trim().is_empty()).map(|answer| view! {
                                <p class="answer-words"><bdi>{visible_controls(&shorten(&answer, 200))}</bdi></p>
                            })}
                            {offer}
                        </li>
                    }
                })
                .collect_view();
            let labelled_by = heading_id.clone();
            view! {
                <section class="already-answered" aria-labelledby=labelled_by>
                    <h3 id=heading_id>"Already answered?"</h3>
                    <p class="muted">"Verified answers to similar questions. Using one settles this question with it, after ten seconds in which you can undo it."</p>
                    <ul>{items}</ul>
                </section>
            }
        })
    }
}

/// What an entry whose chosen option is `chosen` gives a question offering `options` (labels):
/// `Some(Some(label))` the question's option of the same label, `Some(None)` words only (the
/// question has no options), `None` when it cannot answer it.
fn receives(options: &[String], chosen: Option<&str>) -> Option<Option<String>> {
    if options.is_empty() {
        return Some(None);
    }
    let chosen = chosen.map(str::trim).filter(|c| !c.is_empty())?;
    options
        .iter()
        .find(|o| o.trim().to_lowercase() == chosen.to_lowercase())
        .map(|o| Some(o.clone()))
}

#[cfg(test)]
mod tests {
    use super::receives;

    fn labels(list: &[&str]) -> Vec<String> {
        list.iter().map(|l| (*l).to_owned()).collect()
    }

    #[test]
    fn an_entry_answers_a_question_without_options_with_its_words() {
        assert_eq!(receives(&[], Some("Yes")), Some(None));
        assert_eq!(receives(&[], None), Some(None));
    }

    #[test]
    fn an_entry_gives_the_option_of_the_same_label_ignoring_case_and_spaces() {
        let options = labels(&["Yes ", "No"]);
        assert_eq!(
            receives(&options, Some("  yes")),
            Some(Some("Yes ".to_owned()))
        );
    }

    #[test]
    fn an_entry_whose_option_the_question_lacks_cannot_answer_it() {
        let options = labels(&["Yes", "No"]);
        assert_eq!(receives(&options, Some("Maybe")), None);
        assert_eq!(receives(&options, None), None);
        assert_eq!(receives(&options, Some("  ")), None);
    }
}
