//! Property tests of the ledger: random sequences of intakes, answers, verdicts (verify, reject,
//! reverse), dismissals, expiries, revenue events, payouts, knowledge reuses, questions settled
//! from knowledge and corrections (seeded, so a failure names the seed that reproduces it), run
//! against a real askloop, with the ledger's rules (docs/contract.md#held-money,
//! docs/contract.md#knowledge) checked after every step:
//!
//! - for every question and task, reserved = charged + released + still reserved, a charge is
//!   given back at most once, and what the agent spent on it is one bounty at most (none while it
//!   waits or once it was dismissed or expired);
//! - a completed task cost the agent what its completion reported (0 when its reopening could
//!   not be reserved again), never more than its limit; a cost outside the limit is refused and
//!   changes nothing;
//! - no budget is ever overspent (what is spent and still reserved ≤ the monthly limit);
//! - every revenue event's allocations other than clawbacks sum to its net, and each clawback is
//!   the exact negative of a part already in a payout;
//! - a bounty's part is held exactly while its answer is pending, and nothing of an answer that
//!   is not verified is in a payout unless it was clawed back;
//! - no allocation is in two payouts, and a payout's amount is the sum of its allocations and
//!   positive;
//! - a reuse is given back at most once, for its whole amount, and exactly when the entry it
//!   relied on was retracted or the answer that pointed to it was rejected or reversed; what it
//!   paid the author is owed while it stands, and reversed (or clawed back once paid out) once it
//!   is given back; the niche's balance counts reuses as spending.

use std::collections::HashMap;

use askloop::error::{Conflict, ServiceError};
use askloop::service::people::admin::{self, Decision};
use askloop::service::{money::payouts, questions::expiry};
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::people::{Person, operator, person};
use askloop_tests::{Backend, TestApp};
use entity::agent_questions::{self, QuestionStatus};
use entity::allocations;
use entity::budget_entries::{self, BudgetEntryKind};
use entity::contribution_events::{self, ContributionStatus};
use entity::knowledge_entries::{self, KnowledgeStatus};
use entity::knowledge_reuses::{self, ReuseKind};
use entity::payouts::{self as payout_rows, PayoutStatus};
use entity::{agent_answers, niches, revenue_events};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::json;

const LIMIT: i64 = 2_000;
const SEEDS: u64 = 12;
const STEPS: usize = 60;

async fn check_rules(app: &TestApp, seed: u64, step: usize) {
    let at = format!("seed {seed}, step {step}");
    let entries = budget_entries::Entity::find()
        .all(&app.db)
        .await
        .expect("entries");
    let models: HashMap<i64, agent_questions::Model> = agent_questions::Entity::find()
        .all(&app.db)
        .await
        .expect("questions")
        .into_iter()
        .map(|q| (q.id, q))
        .collect();
    let questions: HashMap<i64, QuestionStatus> =
        models.iter().map(|(id, q)| (*id, q.status)).collect();
    // The newest completion of each task: what it said it cost.
    let mut completions: HashMap<i64, (i64, Option<i64>)> = HashMap::new();
    // Questions once settled from knowledge: that settlement released their bounty.
    let mut pointed: std::collections::HashSet<i64> = std::collections::HashSet::new();
    for answer in agent_answers::Entity::find()
        .filter(agent_answers::Column::Kind.eq(agent_answers::AnswerKind::Answered))
        .all(&app.db)
        .await
        .expect("answers")
    {
        if answer.knowledge_entry_id.is_some() {
            pointed.insert(answer.question_id);
        }
        let newest = completions
            .get(&answer.question_id)
            .is_none_or(|(id, _)| *id < answer.id);
        if newest {
            completions.insert(answer.question_id, (answer.id, answer.actual_cost_minor));
        }
    }
    let mut by_question: HashMap<i64, Vec<(BudgetEntryKind, i64)>> = HashMap::new();
    for e in &entries {
        by_question
            .entry(e.question_id)
            .or_default()
            .push((e.kind, e.amount_minor));
    }
    for (question, list) in &by_question {
        let sum = |kind| -> i64 {
            list.iter()
                .filter(|(k, _)| *k == kind)
                .map(|(_, a)| a)
                .sum()
        };
        let (reserved, charged, released, given_back) = (
            sum(BudgetEntryKind::Reserve),
            sum(BudgetEntryKind::Charge),
            sum(BudgetEntryKind::Release),
            sum(BudgetEntryKind::ChargeReversal),
        );
        let still_reserved = reserved - charged - released;
        let spent = charged - given_back;
        let largest_charge = list
            .iter()
            .filter(|(k, _)| *k == BudgetEntryKind::Charge)
            .map(|(_, a)| *a)
            .max()
            .unwrap_or(0);
        assert!(still_reserved >= 0, "{at}: q{question} {list:?}");
        assert!(
            (0..=largest_charge).contains(&spent),
            "{at}: q{question} spent {spent}: {list:?}"
        );
        let task = models
            .get(question)
            .filter(|q| q.kind == agent_questions::ExchangeKind::Task);
        match questions.get(question) {
            // A reopened task keeps what its earlier completion released, and a question
            // reopened after an answer from knowledge what that settlement released; any other
            // question never releases before it settles.
            Some(QuestionStatus::Open | QuestionStatus::Researching)
                if task.is_some() || pointed.contains(question) =>
            {
                assert_eq!(spent, 0, "{at}: q{question} waits: {list:?}")
            }
            Some(QuestionStatus::Open | QuestionStatus::Researching) => {
                assert_eq!(
                    (spent, released),
                    (0, 0),
                    "{at}: q{question} waits: {list:?}"
                )
            }
            Some(QuestionStatus::Answered) => {
                assert_eq!(still_reserved, 0, "{at}: q{question} {list:?}");
                if let Some(task) = task {
                    let reported = completions
                        .get(question)
                        .and_then(|(_, cost)| *cost)
                        .expect("a completed task has its cost");
                    assert!(
                        (0..=task.bounty_minor).contains(&spent)
                            && (spent == reported || spent == 0),
                        "{at}: task {question} cost {reported}, spent {spent}: {list:?}"
                    );
                }
            }
            Some(_) => assert_eq!(
                (still_reserved, spent),
                (0, 0),
                "{at}: q{question} {list:?}"
            ),
            None => panic!("{at}: an entry for a question that does not exist"),
        }
    }
    let committed: i64 = entries
        .iter()
        .map(|e| match e.kind {
            BudgetEntryKind::Reserve => e.amount_minor,
            BudgetEntryKind::Release | BudgetEntryKind::ChargeReversal => -e.amount_minor,
            BudgetEntryKind::Charge => 0,
        })
        .sum();
    let reuses = knowledge_reuses::Entity::find()
        .all(&app.db)
        .await
        .expect("reuses");
    let reused: i64 = reuses
        .iter()
        .map(|r| match r.kind {
            ReuseKind::Reuse => r.amount_minor,
            ReuseKind::Refund => -r.amount_minor,
        })
        .sum();
    let committed = committed + reused;
    assert!(committed <= LIMIT, "{at}: {committed} committed of {LIMIT}");
    // The niche's balance is what its ledger sums to.
    let month = askloop::domain::ledger::month_of(chrono::Utc::now());
    for niche in niches::Entity::find().all(&app.db).await.expect("niches") {
        let of = |kinds: &[BudgetEntryKind], this_month: bool| -> i64 {
            entries
                .iter()
                .filter(|e| e.niche_id == niche.id && kinds.contains(&e.kind))
                .filter(|e| !this_month || e.month == month)
                .map(|e| match e.kind {
                    BudgetEntryKind::Reserve | BudgetEntryKind::Charge => e.amount_minor,
                    _ => -e.amount_minor,
                })
                .sum()
        };
        let reserved = of(&[BudgetEntryKind::Reserve], false)
            - of(&[BudgetEntryKind::Charge], false)
            + of(&[BudgetEntryKind::Release], false);
        let spent = of(
            &[BudgetEntryKind::Charge, BudgetEntryKind::ChargeReversal],
            true,
        );
        let reused: i64 = reuses
            .iter()
            .filter(|r| r.niche_id == niche.id && r.month == month)
            .map(|r| match r.kind {
                ReuseKind::Reuse => r.amount_minor,
                ReuseKind::Refund => -r.amount_minor,
            })
            .sum();
        let balance = askloop::service::money::budget::balance_of(&niche, chrono::Utc::now());
        assert_eq!(
            (balance.reserved, balance.spent),
            (reserved, spent + reused),
            "{at}: the balance of niche {} is not its ledger",
            niche.slug
        );
    }

    let all = allocations::Entity::find()
        .all(&app.db)
        .await
        .expect("allocations");
    for event in revenue_events::Entity::find()
        .all(&app.db)
        .await
        .expect("events")
    {
        let parts: i64 = all
            .iter()
            .filter(|a| a.revenue_event_id == event.id && a.claws_back.is_none())
            .map(|a| a.amount_minor)
            .sum();
        assert_eq!(parts, event.net_minor, "{at}: event {}", event.external_id);
        let Some(answer) = event
            .external_id
            .strip_prefix("agent_bounty:answer:")
            .and_then(|id| id.parse::<i64>().ok())
        else {
            continue;
        };
        let review = review_of_answer(app, answer).await;
        for part in all.iter().filter(|a| {
            a.revenue_event_id == event.id && a.user_id.is_some() && a.claws_back.is_none()
        }) {
            assert_eq!(
                part.status == allocations::AllocationStatus::Held,
                review == ContributionStatus::Pending,
                "{at}: allocation {} is {:?} for a {review:?} answer",
                part.id,
                part.status
            );
            let clawed_back = all.iter().any(|c| c.claws_back == Some(part.id));
            if part.payout_id.is_some() && review != ContributionStatus::Verified {
                assert!(
                    clawed_back,
                    "{at}: allocation {} of a {review:?} answer is in a payout",
                    part.id
                );
            }
        }
    }
    for clawback in all.iter().filter(|a| a.claws_back.is_some()) {
        let taken = all
            .iter()
            .find(|a| Some(a.id) == clawback.claws_back)
            .expect("a clawback names an allocation");
        assert_eq!(
            (
                clawback.user_id,
                clawback.revenue_event_id,
                clawback.amount_minor
            ),
            (taken.user_id, taken.revenue_event_id, -taken.amount_minor),
            "{at}: clawback {}",
            clawback.id
        );
        assert!(
            matches!(
                taken.status,
                allocations::AllocationStatus::Accrued
                    | allocations::AllocationStatus::Scheduled
                    | allocations::AllocationStatus::Paid
            ),
            "{at}: clawback of a {:?} allocation",
            taken.status
        );
    }
    check_reuses(app, &at, &reuses, &all).await;
    for payout in payout_rows::Entity::find()
        .all(&app.db)
        .await
        .expect("payouts")
    {
        let inside: Vec<&allocations::Model> = all
            .iter()
            .filter(|a| a.payout_id == Some(payout.id))
            .collect();
        match payout.status {
            PayoutStatus::Failed => assert!(inside.is_empty(), "{at}: a failed payout holds money"),
            _ => {
                assert_eq!(
                    inside.iter().map(|a| a.amount_minor).sum::<i64>(),
                    payout.amount_minor,
                    "{at}: payout {}",
                    payout.id
                );
                assert!(payout.amount_minor > 0, "{at}: payout {}", payout.id);
            }
        }
        let wanted = match payout.status {
            PayoutStatus::Scheduled => allocations::AllocationStatus::Scheduled,
            _ => allocations::AllocationStatus::Paid,
        };
        assert!(
            inside.iter().all(|a| a.status == wanted),
            "{at}: payout {}",
            payout.id
        );
    }
}

/// The reuse rules: each reuse given back at most once, wholly, exactly when its entry was
/// retracted or its pointing answer rejected or reversed; its author's money owed while it
/// stands, reversed or clawed back once it is given back.
async fn check_reuses(
    app: &TestApp,
    at: &str,
    reuses: &[knowledge_reuses::Model],
    all: &[allocations::Model],
) {
    let entries: HashMap<i64, KnowledgeStatus> = knowledge_entries::Entity::find()
        .all(&app.db)
        .await
        .expect("entries")
        .into_iter()
        .map(|e| (e.id, e.status))
        .collect();
    for reuse in reuses.iter().filter(|r| r.kind == ReuseKind::Reuse) {
        let refunds: Vec<&knowledge_reuses::Model> = reuses
            .iter()
            .filter(|r| r.refunds == Some(reuse.id))
            .collect();
        assert!(
            refunds.len() <= 1,
            "{at}: reuse {} refunded twice",
            reuse.id
        );
        if let Some(refund) = refunds.first() {
            assert_eq!(
                refund.amount_minor, reuse.amount_minor,
                "{at}: refund {}",
                refund.id
            );
        }
        let pointer_review = match reuse.answer_id {
            Some(answer) => Some(review_of_answer(app, answer).await),
            None => None,
        };
        let pointer_undone = matches!(
            pointer_review,
            Some(ContributionStatus::Rejected | ContributionStatus::Reversed)
        );
        // A pointer waiting for review holds its author's credit (docs/contract.md#held-money).
        let pointer_pending = pointer_review == Some(ContributionStatus::Pending);
        let withdrawn = entries.get(&reuse.entry_id) == Some(&KnowledgeStatus::Retracted);
        assert_eq!(
            !refunds.is_empty(),
            withdrawn || pointer_undone,
            "{at}: reuse {} of entry {} ({:?}), pointer undone {pointer_undone}",
            reuse.id,
            reuse.entry_id,
            entries.get(&reuse.entry_id)
        );
        assert_eq!(
            reuse.revenue_event_id.is_some(),
            reuse.amount_minor > 0,
            "{at}: reuse {} and its revenue",
            reuse.id
        );
        let Some(event) = reuse.revenue_event_id else {
            continue;
        };
        for part in all.iter().filter(|a| {
            a.revenue_event_id == event && a.user_id.is_some() && a.claws_back.is_none()
        }) {
            let clawed_back = all.iter().any(|c| c.claws_back == Some(part.id));
            let fine = if refunds.is_empty() && pointer_pending {
                part.status == allocations::AllocationStatus::Held && !clawed_back
            } else if refunds.is_empty() {
                matches!(
                    part.status,
                    allocations::AllocationStatus::Accrued
                        | allocations::AllocationStatus::Scheduled
                        | allocations::AllocationStatus::Paid
                ) && !clawed_back
            } else {
                part.status == allocations::AllocationStatus::Reversed || clawed_back
            };
            assert!(
                fine,
                "{at}: allocation {} ({:?}, clawed back {clawed_back}) of reuse {}, refunded {}",
                part.id,
                part.status,
                reuse.id,
                !refunds.is_empty()
            );
        }
    }
}

/// The review state of answer `answer_id`'s contribution.
async fn review_of_answer(app: &TestApp, answer_id: i64) -> ContributionStatus {
    let answer = agent_answers::Entity::find_by_id(answer_id)
        .one(&app.db)
        .await
        .expect("answer")
        .expect("a bounty names its answer");
    let contribution = answer
        .contribution_event_id
        .expect("an answer has a contribution");
    contribution_events::Entity::find_by_id(contribution)
        .one(&app.db)
        .await
        .expect("contribution")
        .expect("the contribution")
        .status
}

/// A verdict on a random pending or verified answer, by the admin: verify or reject a pending
/// one, reverse a verified one. Its name, for the tally.
async fn a_verdict(app: &TestApp, admin: &Person, rng: &mut StdRng) -> Option<&'static str> {
    let open: Vec<contribution_events::Model> = contribution_events::Entity::find()
        .filter(
            contribution_events::Column::Status
                .is_in([ContributionStatus::Pending, ContributionStatus::Verified]),
        )
        .all(&app.db)
        .await
        .expect("contributions");
    if open.is_empty() {
        return None;
    }
    let chosen = &open[rng.random_range(0..open.len())];
    let (decision, name) = match chosen.status {
        ContributionStatus::Pending if rng.random_bool(0.5) => (Decision::Verify, "verified"),
        ContributionStatus::Pending => (Decision::Reject, "rejected"),
        _ => (Decision::Reverse, "reversed"),
    };
    match admin::review(
        &app.db,
        &askloop::live::ChangeHint::none(),
        Some(&admin.viewer()),
        chosen.id,
        decision,
        Some("property step".into()),
        chrono::Utc::now(),
    )
    .await
    {
        Ok(_) => Some(name),
        // A correction of an entry replaced since it was proposed cannot be verified: a clean
        // refusal that changes nothing.
        Err(ServiceError::Conflict(Conflict::KnowledgeNotCurrent)) => {
            Some("stale correction refused")
        }
        Err(other) => panic!("a verdict: {other:?}"),
    }
}

/// A step on the niche's knowledge, as `who` or the agent: reuse an entry (now and then one
/// no longer current, or an external id used before), settle a waiting question from an entry,
/// or propose a correction (which a later verdict decides). Its name, for the tally.
async fn a_knowledge_step(
    app: &TestApp,
    who: &Person,
    waiting: &[i64],
    rng: &mut StdRng,
) -> Option<&'static str> {
    let entries = knowledge_entries::Entity::find()
        .all(&app.db)
        .await
        .expect("entries");
    let current: Vec<&knowledge_entries::Model> = entries
        .iter()
        .filter(|e| e.status == KnowledgeStatus::Current)
        .collect();
    match rng.random_range(0..4) {
        0 | 1 => {
            let withdrawn = entries
                .iter()
                .find(|e| e.status != KnowledgeStatus::Current);
            let entry = match (rng.random_bool(0.2), withdrawn, current.is_empty()) {
                (true, Some(old), _) => old,
                (_, _, true) => return None,
                _ => current[rng.random_range(0..current.len())],
            };
            let body =
                json!({"entryId": entry.id, "externalId": format!("r-{}", rng.random_range(0..6))});
            let response = app
                .post_signed("/api/v1/internal/knowledge/reuse", &body.to_string())
                .await;
            Some(match response.status().as_u16() {
                201 => "reused",
                200 => "reuse replayed",
                402 => "reuse over budget",
                409 => "reuse of an entry not current",
                other => panic!("a reuse answered {other}: {:?}", response.text().await),
            })
        }
        2 => {
            let questions = agent_questions::Entity::find()
                .filter(agent_questions::Column::Id.is_in(waiting.iter().copied()))
                .filter(agent_questions::Column::Kind.eq(agent_questions::ExchangeKind::Question))
                .all(&app.db)
                .await
                .expect("questions");
            if questions.is_empty() || current.is_empty() {
                return None;
            }
            let question = &questions[rng.random_range(0..questions.len())];
            let entry = current[rng.random_range(0..current.len())];
            let done = app
                .graphql(
                    Some(&who.token),
                    "mutation($q: ID!, $e: ID!) { answerQuestion(input: {questionId: $q, kind: FROM_KNOWLEDGE, entryId: $e}) { points } }",
                    json!({"q": question.id.to_string(), "e": entry.id.to_string()}),
                )
                .await;
            done["errors"].is_null().then_some("settled from knowledge")
        }
        _ => {
            if current.is_empty() {
                return None;
            }
            let entry = current[rng.random_range(0..current.len())];
            let proposed = app
                .graphql(
                    Some(&who.token),
                    "mutation($e: ID!) { proposeKnowledgeCorrection(input: {entryId: $e, optionId: \"full\", answer: \"corrected\"}) { id } }",
                    json!({"e": entry.id.to_string()}),
                )
                .await;
            proposed["errors"]
                .is_null()
                .then_some("correction proposed")
        }
    }
}

async fn run(seed: u64, seen: &mut HashMap<&'static str, usize>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let niche = open_niche(&app.db, "games").await;
    niches::Entity::update_many()
        .col_expr(niches::Column::MonthlyBudgetMinor, Expr::value(Some(LIMIT)))
        .col_expr(niches::Column::MaxBountyMinor, Expr::value(500_i64))
        .col_expr(niches::Column::ReusePriceMinor, Expr::value(120_i64))
        .filter(niches::Column::Id.eq(niche.id))
        .exec(&app.db)
        .await
        .expect("budget");
    let people: Vec<Person> = vec![
        operator(&app.db, "games", "ana").await,
        operator(&app.db, "games", "bo").await,
    ];
    let admin = person(&app.db, "root", true).await;
    for p in &people {
        payouts::set_address(
            &app.db,
            &p.viewer(),
            &format!("acct-{}", p.handle),
            chrono::Utc::now(),
        )
        .await
        .expect("address");
        let address = format!("acct-{}", p.handle);
        payouts::verify_address(
            &app.db,
            Some(&admin.viewer()),
            &p.handle,
            &address,
            chrono::Utc::now(),
        )
        .await
        .expect("verified");
    }
    let mut asked = 0;
    for step in 0..STEPS {
        let waiting: Vec<i64> = agent_questions::Entity::find()
            .filter(
                agent_questions::Column::Status
                    .is_in([QuestionStatus::Open, QuestionStatus::Researching]),
            )
            .all(&app.db)
            .await
            .expect("waiting")
            .into_iter()
            .map(|q| q.id)
            .collect();
        let pick = |rng: &mut StdRng| waiting[rng.random_range(0..waiting.len())];
        let who = &people[rng.random_range(0..people.len())];
        match rng.random_range(0..16) {
            0..=3 => {
                asked += 1;
                let mut body = question_body("games", &format!("q-{asked}"));
                if rng.random_bool(0.4) {
                    let payload = body["payload"].as_object_mut().expect("a payload");
                    payload.remove("options");
                    payload.insert("kind".into(), json!("task"));
                    payload.insert("budgetLimitMinor".into(), json!(rng.random_range(1..=500)));
                } else {
                    body["payload"]["bountyMinor"] = json!(rng.random_range(0..=500));
                }
                let status = app
                    .post_signed("/api/v1/internal/expert-questions", &body.to_string())
                    .await
                    .status()
                    .as_u16();
                assert!(
                    status == 201 || status == 402,
                    "seed {seed}: intake {status}"
                );
                *seen
                    .entry(if status == 201 {
                        "stored"
                    } else {
                        "over budget"
                    })
                    .or_default() += 1;
            }
            4 | 5 if !waiting.is_empty() => {
                let id = pick(&mut rng);
                let limit = agent_questions::Entity::find_by_id(id)
                    .one(&app.db)
                    .await
                    .expect("query")
                    .filter(|q| q.kind == agent_questions::ExchangeKind::Task)
                    .map(|q| q.bounty_minor);
                match limit {
                    None => {
                        app.graphql(
                            Some(&who.token),
                            "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, optionId: \"ea\"}) { points } }",
                            json!({"id": id.to_string()}),
                        )
                        .await;
                    }
                    Some(limit) => {
                        // Now and then a cost past the limit, which must change nothing.
                        let cost = rng.random_range(0..=limit + limit / 4 + 1);
                        let before = budget_entries::Entity::find()
                            .all(&app.db)
                            .await
                            .expect("entries")
                            .len();
                        let done = app
                            .graphql(
                                Some(&who.token),
                                "mutation($id: ID!, $cost: Int!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, body: \"done\", actualCostMinor: $cost}) { points } }",
                                json!({"id": id.to_string(), "cost": cost}),
                            )
                            .await;
                        let after = budget_entries::Entity::find()
                            .all(&app.db)
                            .await
                            .expect("entries")
                            .len();
                        if cost > limit {
                            assert_eq!(
                                done["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
                                "seed {seed}: {done}"
                            );
                            assert_eq!(before, after, "seed {seed}: a refused cost wrote");
                            *seen.entry("task cost refused").or_default() += 1;
                        } else if done["errors"].is_null() {
                            *seen.entry("task completed").or_default() += 1;
                        }
                    }
                }
            }
            6 if !waiting.is_empty() => {
                let id = pick(&mut rng);
                app.graphql(
                    Some(&who.token),
                    "mutation($id: ID!) { dismissQuestion(id: $id) { status } }",
                    json!({"id": id.to_string()}),
                )
                .await;
            }
            7 if !waiting.is_empty() => {
                let id = pick(&mut rng);
                agent_questions::Entity::update_many()
                    .col_expr(
                        agent_questions::Column::ExpiresAt,
                        Expr::value(chrono::Utc::now() - chrono::Duration::seconds(1)),
                    )
                    .filter(agent_questions::Column::Id.eq(id))
                    .exec(&app.db)
                    .await
                    .expect("moved");
                expiry::sweep(
                    &app.db,
                    &askloop::live::ChangeHint::none(),
                    100,
                    chrono::Utc::now(),
                )
                .await
                .expect("swept");
            }
            12 | 13 | 15 => {
                if let Some(name) = a_knowledge_step(&app, who, &waiting, &mut rng).await {
                    *seen.entry(name).or_default() += 1;
                }
            }
            9 | 10 | 14 => {
                if let Some(name) = a_verdict(&app, &admin, &mut rng).await {
                    *seen.entry(name).or_default() += 1;
                }
            }
            8 => {
                let gross = rng.random_range(0..50_000_i64);
                let event = json!({"nicheSlug": "games", "externalId": format!("inv-{seed}-{step}"),
                    "sourceType": "usage", "grossMinor": gross,
                    "processingMinor": rng.random_range(0..3_000_i64),
                    "refundMinor": rng.random_range(0..2_000_i64), "currency": "USD"});
                let status = app
                    .post_signed("/api/v1/internal/revenue-events", &event.to_string())
                    .await
                    .status();
                assert_eq!(status, 201, "seed {seed}");
            }
            _ => {
                // Schedule (nothing owed is a clean refusal), then settle the newest payout.
                let _ = payouts::schedule(
                    &app.db,
                    Some(&admin.viewer()),
                    &who.handle,
                    "USD",
                    chrono::Utc::now(),
                )
                .await;
                let newest = payouts::list(&app.db, None, 1).await.expect("payouts");
                if let Some(p) = newest
                    .first()
                    .filter(|p| p.status == PayoutStatus::Scheduled)
                {
                    if rng.random_bool(0.5) {
                        payouts::mark_paid(
                            &app.db,
                            Some(&admin.viewer()),
                            p.id,
                            &format!("ref-{seed}-{step}"),
                            chrono::Utc::now(),
                        )
                        .await
                        .expect("paid");
                        *seen.entry("paid").or_default() += 1;
                    } else {
                        payouts::mark_failed(
                            &app.db,
                            Some(&admin.viewer()),
                            p.id,
                            "bounced",
                            chrono::Utc::now(),
                        )
                        .await
                        .expect("failed");
                        *seen.entry("failed").or_default() += 1;
                    }
                }
            }
        }
        check_rules(&app, seed, step).await;
    }
    for e in budget_entries::Entity::find()
        .all(&app.db)
        .await
        .expect("entries")
    {
        *seen
            .entry(match e.kind {
                BudgetEntryKind::Reserve => "reserved",
                BudgetEntryKind::Charge => "charged",
                BudgetEntryKind::Release => "released",
                BudgetEntryKind::ChargeReversal => "charge given back",
            })
            .or_default() += 1;
    }
    let given_back = knowledge_reuses::Entity::find()
        .filter(knowledge_reuses::Column::Kind.eq(ReuseKind::Refund))
        .count(&app.db)
        .await
        .expect("refunds");
    *seen.entry("reuse given back").or_default() += usize::try_from(given_back).unwrap_or(0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_sequences_keep_the_ledger_rules() {
    let mut seen = HashMap::new();
    for seed in 0..SEEDS {
        run(seed, &mut seen).await;
    }
    // The sequences did reach every rule: each kind of step happened.
    for kind in [
        "stored",
        "over budget",
        "reserved",
        "charged",
        "released",
        "paid",
        "failed",
        "verified",
        "rejected",
        "reversed",
        "charge given back",
        "task completed",
        "task cost refused",
        "reused",
        "reuse replayed",
        "settled from knowledge",
        "correction proposed",
        "reuse given back",
    ] {
        assert!(
            seen.get(kind).copied().unwrap_or(0) > 0,
            "no '{kind}' in {seen:?}"
        );
    }
    eprintln!("ledger properties held over {SEEDS} sequences: {seen:?}");
}
