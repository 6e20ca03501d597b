//! The queue kept current without being rebuilt: how the page's rows take in a read of the queue
//! (the first, and each one after a drop or a removal), a live change (`questionQueue`) and the
//! next page ("Load more"), so focus, scroll, an open card and what the person typed stay where
//! they are; and the heading's counts, re-read after each live change. Rows keep the server's
//! order for the view (`sort_key`), so the client's merge and the server's cursor agree.

use std::collections::{HashMap, HashSet};

use leptos::prelude::*;

use super::filters::{View, with_view};
use super::{Parts, Question};
use crate::api;
use crate::components::drafts;
use crate::components::question_card::SettledElsewhere;
use crate::operations::{QueueCounts, queue_counts};
use crate::vocab::{QuestionStatus, QueueChangeKind, QueueSort, Urgency};

/// A row on the page.
#[derive(Clone)]
pub(super) struct Row {
    /// The question as last read or heard.
    pub(super) question: Question,
    /// It arrived after the first read (marked "new").
    pub(super) fresh: bool,
    /// What my own answer did (shown in place until closed).
    pub(super) outcome: RwSignal<Option<(String, Option<String>)>>,
    /// Someone else settled it while I had it open or a draft on it.
    pub(super) settled: RwSignal<Option<SettledElsewhere>>,
}

/// Where a question sorts in `sort` (the server's order, so the client's merge and the
/// server's cursor agree).
fn sort_key(sort: &QueueSort, q: &Question) -> (i64, i64, i64) {
    let id = q.id.parse::<i64>().unwrap_or(i64::MAX);
    let expires = js_sys::Date::parse(&q.expires_at) as i64;
    match sort {
        QueueSort::Newest => (0, 0, -id),
        QueueSort::Bounty => (0, -q.bounty_minor, id),
        QueueSort::Expiring => (0, expires, id),
        _ => {
            let rank = match Urgency::of(&q.urgency) {
                Urgency::High => 0,
                Urgency::Low => 2,
                _ => 1,
            };
            (rank, expires, id)
        }
    }
}

/// The rows on the page, in the view's order.
#[derive(Clone, Copy)]
pub(super) struct Rows {
    /// The rows.
    pub(super) list: RwSignal<Vec<Row>>,
    /// The page's owner: a row's own signals belong to the page, not to the read (or the live
    /// change) that made the row, so a later re-read must not dispose of them while it is shown.
    owner: StoredValue<Option<Owner>, LocalStorage>,
    view: StoredValue<View>,
}

impl Rows {
    /// No rows yet, for the page being built and its `view`.
    pub(super) fn new(view: StoredValue<View>) -> Self {
        Self {
            list: RwSignal::new(Vec::new()),
            owner: StoredValue::new_local(Owner::current()),
            view,
        }
    }

    /// A new row for `question`.
    fn row(&self, question: Question, fresh: bool) -> Row {
        Row {
            question,
            fresh,
            outcome: self.nothing_yet(),
            settled: self.nothing_yet(),
        }
    }

    /// An empty signal owned by the page.
    fn nothing_yet<T: Send + Sync + 'static>(&self) -> RwSignal<Option<T>> {
        match self.owner.get_value() {
            Some(owner) => owner.with(|| RwSignal::new(None)),
            None => RwSignal::new(None),
        }
    }

    /// Puts the rows back in the view's order.
    fn sort(&self) {
        let sort = self.view.with_value(View::sort);
        self.list
            .update(|list| list.sort_by_key(|r| sort_key(&sort, &r.question)));
    }

    /// Takes in a read of the queue's first `waiting` questions: a row already shown keeps its
    /// signals (and so its notice or collision), a new one is "new" unless this is the first
    /// read, and a row the read no longer has stays only while the person is still looking at
    /// it (my notice, or a collision).
    pub(super) fn take_read(&self, waiting: Vec<Question>, first_read: bool) {
        let ids: HashSet<String> = waiting.iter().map(|q| q.id.clone()).collect();
        self.list.update(|list| {
            let previous: HashMap<String, Row> =
                list.drain(..).map(|r| (r.question.id.clone(), r)).collect();
            let mut next: Vec<Row> = waiting
                .into_iter()
                .map(|q| match previous.get(&q.id) {
                    Some(old) => Row {
                        question: q,
                        ..old.clone()
                    },
                    None => self.row(q, !first_read),
                })
                .collect();
            next.extend(
                previous
                    .into_values()
                    .filter(|r| !ids.contains(&r.question.id))
                    .filter(|r| {
                        r.outcome.with_untracked(Option::is_some)
                            || r.settled.with_untracked(Option::is_some)
                    }),
            );
            list.extend(next);
        });
        self.sort();
    }

    /// Takes in a live change to `question` (`by` whom, when a person did it). A question that
    /// left the queue goes, unless the person has its row open, a draft on it or my notice in
    /// its place: then it stays, read-only, saying who settled it. Any other change updates its
    /// row, or adds one when it matches the view and falls within what is loaded (`more`: the
    /// server has more after the last row). Returns whether the queue should be read again.
    pub(super) fn take_change(
        &self,
        change: QueueChangeKind,
        by: Option<String>,
        question: Question,
        open: RwSignal<HashSet<String>>,
        more: bool,
    ) -> bool {
        match change {
            QueueChangeKind::Removed => {
                let id = question.id.clone();
                let keep = open.with_untracked(|o| o.contains(&id)) || drafts::load(&id).is_some();
                let row = self.list.with_untracked(|list| {
                    list.iter()
                        .find(|r| r.question.id == id)
                        .map(|r| (r.outcome, r.settled))
                });
                let gone = SettledElsewhere {
                    status: QuestionStatus::of(&question.status),
                    by,
                    at: String::from(js_sys::Date::new_0().to_iso_string()),
                };
                match row {
                    // My own notice stays until closed; closing it then lets the row go.
                    Some((outcome, settled)) if outcome.with_untracked(Option::is_some) => {
                        settled.set(Some(gone));
                    }
                    Some((_, settled)) if keep => settled.set(Some(gone)),
                    _ => self
                        .list
                        .update(|list| list.retain(|r| r.question.id != id)),
                }
                true
            }
            _ => {
                let admitted = self.view.with_value(|v| v.admits(&question));
                let sort = self.view.with_value(View::sort);
                let key = sort_key(&sort, &question);
                let beyond_loaded = more
                    && self.list.with_untracked(|list| {
                        list.last()
                            .is_some_and(|r| sort_key(&sort, &r.question) < key)
                    });
                self.list.update(|list| {
                    match list.iter_mut().find(|r| r.question.id == question.id) {
                        Some(row) if admitted => row.question = question,
                        Some(_) => list.retain(|r| r.question.id != question.id),
                        // New to this page: an arrival, or back from research; joins only when
                        // it matches the view and falls within what is loaded.
                        None if admitted && !beyond_loaded => list.push(self.row(question, true)),
                        None => {}
                    }
                });
                self.sort();
                false
            }
        }
    }

    /// Takes in the next page of the queue; returns how many of its questions were not shown
    /// already.
    pub(super) fn take_page(&self, page: Vec<Question>) -> usize {
        let mut added = 0;
        self.list.update(|list| {
            for q in page {
                let seen = list.iter().any(|r| r.question.id == q.id);
                if !seen {
                    added += 1;
                    list.push(self.row(q, false));
                }
            }
        });
        self.sort();
        added
    }
}

/// The heading's counts ("57 waiting · 5 high"), my part in the questions I acted on, and how
/// many waiting questions the view matches.
#[derive(Clone, Copy)]
pub(super) struct Tallies {
    /// What needs me, and how much of it is urgent.
    pub(super) counts: RwSignal<Option<(i64, i64)>>,
    /// My part in the waiting questions I acted on.
    pub(super) parts: RwSignal<Parts>,
    /// How many waiting questions the view matches.
    pub(super) matching: RwSignal<Option<i64>>,
}

/// Shows in `$tallies` the tallies of `$niche`, a niche as the first read or the counts' re-read
/// returns it (each operation has its own types with the same fields).
macro_rules! show_tallies {
    ($tallies:expr, $niche:expr) => {{
        let niche = &$niche;
        $tallies.counts.set(Some((
            niche.waiting_counts.needs_me,
            niche.waiting_counts.needs_me_high,
        )));
        $tallies.parts.set(
            niche
                .my_parts
                .iter()
                .map(|p| (p.question_id.clone(), p.part.clone()))
                .collect(),
        );
        $tallies.matching.set(Some(niche.waiting.total_count));
    }};
}
pub(super) use show_tallies;

impl Tallies {
    /// Nothing read yet.
    pub(super) fn new() -> Self {
        Self {
            counts: RwSignal::new(None),
            parts: RwSignal::new(Parts::new()),
            matching: RwSignal::new(None),
        }
    }

    /// Reads the tallies of niche `slug` in `view` again whenever it is run, one read in flight
    /// at a time: a run during a read makes one more read once it ends.
    pub(super) fn reader(self, slug: String, view: StoredValue<View>) -> Callback<()> {
        let reading = StoredValue::new(false);
        let again = StoredValue::new(false);
        let read = StoredValue::new(None::<Callback<()>>);
        let callback = Callback::new(move |()| {
            if reading.get_value() {
                again.set_value(true);
                return;
            }
            reading.set_value(true);
            let v = view.get_value();
            let variables = with_view!(queue_counts, v, { slug: slug.clone() });
            leptos::task::spawn_local(async move {
                if let Ok(data) = api::run::<QueueCounts>(variables).await
                    && let Some(niche) = data.niche
                {
                    show_tallies!(self, niche);
                }
                reading.set_value(false);
                if again.get_value() {
                    again.set_value(false);
                    if let Some(cb) = read.get_value() {
                        cb.run(());
                    }
                }
            });
        });
        read.set_value(Some(callback));
        callback
    }
}
