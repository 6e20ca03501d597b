//! A correction as the admin's review card shows it: the version it corrects beside the whole
//! version it proposes, the option and the words with their differences marked (a word-level
//! diff: removed words struck through, added words underlined, each also said in words for
//! screen readers), the proposer's note, and a link to the entry. Never the contribution's raw
//! evidence. Also the words of a verdict, which depend on what was reviewed.

use leptos::prelude::*;

use crate::api;
use crate::components::question_card::visible_controls;
use crate::operations::{CorrectionReview as CorrectionRead, correction_review};

/// Most words a diff compares cell by cell; longer texts are shown as removed and added whole.
const DIFF_CELLS_MAX: usize = 4_000_000;

/// One run of a word-level diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Run {
    /// Words in both.
    Same(String),
    /// Words only in the old text.
    Removed(String),
    /// Words only in the new text.
    Added(String),
}

/// The word-level difference of `old` and `new` (words split at white space), as runs in the
/// new text's order, a removed run before the added run that replaces it.
pub fn word_diff(old: &str, new: &str) -> Vec<Run> {
    let a: Vec<&str> = old.split_whitespace().collect();
    let b: Vec<&str> = new.split_whitespace().collect();
    if a.len().saturating_mul(b.len()) > DIFF_CELLS_MAX {
        return [Run::Removed(a.join(" ")), Run::Added(b.join(" "))]
            .into_iter()
            .filter(|r| !matches!(r, Run::Removed(t) | Run::Added(t) if t.is_empty()))
            .collect();
    }
    // Longest common subsequence, from the end.
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[at(i, j)] = if a[i] == b[j] {
                lcs[at(i + 1, j + 1)] + 1
            } else {
                lcs[at(i + 1, j)].max(lcs[at(i, j + 1)])
            };
        }
    }
    let mut runs: Vec<Run> = Vec::new();
    let mut push = |run: Run| {
        let merged = match (runs.last_mut(), &run) {
            (Some(Run::Same(t)), Run::Same(w))
            | (Some(Run::Removed(t)), Run::Removed(w))
            | (Some(Run::Added(t)), Run::Added(w)) => {
                t.push(' ');
                t.push_str(w);
                true
            }
            _ => false,
        };
        if !merged {
            runs.push(run);
        }
    };
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            push(Run::Same(a[i].to_owned()));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[at(i + 1, j)] >= lcs[at(i, j + 1)]) {
            push(Run::Removed(a[i].to_owned()));
            i += 1;
        } else {
            push(Run::Added(b[j].to_owned()));
            j += 1;
        }
    }
    runs
}

/// `runs` with the words of one side: what `old` had (removed marked) or what `new` has (added
/// marked).
fn marked(runs: &[Run], old_side: bool) -> AnyView {
    runs.iter()
        .filter_map(|run| match (run, old_side) {
            (Run::Same(t), _) => Some(view! { <span>{visible_controls(t)}" "</span> }.into_any()),
            (Run::Removed(t), true) => Some(
                view! {
                    <del><span class="visually-hidden">"[removed: "</span>{visible_controls(t)}<span class="visually-hidden">"]"</span></del>" "
                }
                .into_any(),
            ),
            (Run::Added(t), false) => Some(
                view! {
                    <ins><span class="visually-hidden">"[added: "</span>{visible_controls(t)}<span class="visually-hidden">"]"</span></ins>" "
                }
                .into_any(),
            ),
            _ => None,
        })
        .collect_view()
        .into_any()
}

/// What a verdict on a contribution of `source` did, as the reviewer is told.
pub fn verdict_words(source: &str, verified: bool) -> &'static str {
    match (source, verified) {
        ("correction", true) => {
            "Verified: the correction is now the entry's current version, and the agents that relied on the old one are told."
        }
        ("correction", false) => {
            "Rejected: the entry stays as it was, and the correction's points do not count."
        }
        (_, true) => "Verified: its points count now.",
        (_, false) => "Rejected: the agent's charge is given back and the question reopens.",
    }
}

/// What rejecting a contribution of `source` will do, said before the reviewer confirms.
pub fn reject_warning(source: &str) -> &'static str {
    match source {
        "correction" => {
            "Rejecting leaves the entry as it is; the correction's points do not count. Its author is told your reason."
        }
        _ => {
            "Rejecting gives the agent's charge back and reopens the question. The answerer and the agent are told your reason."
        }
    }
}

/// What a contribution of `source` is, in a verdict's notice ("mara's correction — …").
pub fn kind_words(source: &str) -> &'static str {
    match source {
        "correction" => "correction",
        _ => "answer",
    }
}

/// The correction that contribution `contribution_id` is, read when the card shows: the current
/// version and the proposed one side by side, the note, and a link to the entry.
#[component]
pub fn CorrectionReview(contribution_id: String) -> impl IntoView {
    let read = LocalResource::new(move || {
        let id = contribution_id.clone();
        async move {
            api::run::<CorrectionRead>(correction_review::Variables { id })
                .await
                .map(|data| data.correction_review)
        }
    });
    move || {
        read.get().map(|result| match result {
            Err(err) => view! {
                <p class="error" role="alert">{format!("Could not read the correction: {err}")}</p>
            }
            .into_any(),
            Ok(None) => ().into_any(),
            Ok(Some(c)) => {
                let e = c.entry;
                let href = format!("/dashboard/niches/{}/knowledge/{}", e.niche_slug, e.id);
                let old_words = e.answer.clone().unwrap_or_default();
                let new_words = c.proposed_answer.clone().unwrap_or_default();
                let runs = word_diff(&old_words, &new_words);
                let option_row = (e.option_label.is_some() || c.proposed_option_label.is_some()).then(|| {
                    let old = e.option_label.clone().unwrap_or_default();
                    let new = c.proposed_option_label.clone().unwrap_or_default();
                    let changed = c.option_changed && old != new;
                    view! {
                        <tr data-row="option">
                            <th scope="row">"Chosen option"</th>
                            <td>{if changed {
                                view! { <del><span class="visually-hidden">"[removed: "</span><bdi>{visible_controls(&old)}</bdi><span class="visually-hidden">"]"</span></del> }.into_any()
                            } else {
                                view! { <bdi>{visible_controls(&old)}</bdi> }.into_any()
                            }}</td>
                            <td data-proposed="option">{if changed {
                                view! { <ins><span class="visually-hidden">"[added: "</span><bdi>{visible_controls(&new)}</bdi><span class="visually-hidden">"]"</span></ins>" "<span class="badge changed">"changed"</span> }.into_any()
                            } else {
                                view! { <bdi>{visible_controls(&new)}</bdi>" "<span class="muted">"(unchanged)"</span> }.into_any()
                            }}</td>
                        </tr>
                    }
                });
                let words_changed = c.answer_changed;
                view! {
                    <section class="correction-review" aria-label="The correction">
                        <p>
                            <strong>{c.proposed_by}</strong>" proposes a correction of "
                            <a href=href data-entry-link="">"version "{e.version}" of the entry"</a>"."
                        </p>
                        <div class="table-scroll">
                            <table class="correction-compare">
                                <thead>
                                    <tr>
                                        <th scope="col"><span class="visually-hidden">"Part"</span></th>
                                        <th scope="col">"Now (version "{e.version}")"</th>
                                        <th scope="col">"Proposed"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {option_row}
                                    <tr data-row="answer">
                                        <th scope="row">"In words"</th>
                                        <td data-current="answer"><p class="answer-words" dir="auto">{marked(&runs, true)}</p></td>
                                        <td data-proposed="answer">
                                            <p class="answer-words" dir="auto">{marked(&runs, false)}</p>
                                            {(!words_changed).then(|| view! { <span class="muted">"(unchanged)"</span> })}
                                        </td>
                                    </tr>
                                </tbody>
                            </table>
                        </div>
                        <h4>"Note from "<span>"the proposer"</span></h4>
                        {match c.note {
                            Some(note) => view! { <p class="correction-note" dir="auto" data-note="">{visible_controls(&note)}</p> }.into_any(),
                            None => view! { <p class="muted" data-note="">"No note given."</p> }.into_any(),
                        }}
                    </section>
                }
                .into_any()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_diff_marks_what_was_removed_and_added() {
        assert_eq!(
            word_diff("the February edition is best", "the June edition is best"),
            vec![
                Run::Same("the".into()),
                Run::Removed("February".into()),
                Run::Added("June".into()),
                Run::Same("edition is best".into()),
            ]
        );
        assert_eq!(
            word_diff("", "new words"),
            vec![Run::Added("new words".into())]
        );
        assert_eq!(word_diff("same", "same"), vec![Run::Same("same".into())]);
    }
}
