//! Money waits for the verdict (docs/contract.md#held-money): a pending answer's bounty is
//! charged to the agent but held from the answerer; verifying makes it owed; rejecting gives the
//! agent its charge back, reverses the bounty and reopens the question (for everyone but the
//! rejected answerer) with its bounty reserved again; reversing an answer already paid out books
//! a clawback that the next payout nets.

use askloop_tests::answers::early_access;
use askloop_tests::graphql::error_code;
use askloop_tests::people::{Person, operator, person};
use askloop_tests::{TestApp, on_both_backends};
use chrono::{Duration, Utc};
use entity::agent_questions::{self, QuestionStatus};
use entity::allocations::{self, AllocationStatus};
use entity::budget_entries::BudgetEntryKind::{Charge, ChargeReversal, Reserve};
use entity::{niches, revenue_events};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};

use crate::money::{
    BALANCE, SCHEDULE, SET_ADDRESS, ask_with_bounty, book_usage, budgeted_niche, entries,
    mark_paid, schedule_payout,
};

/// A niche `games` with a monthly budget of 1000, its operators ana (new, so her answers are
/// pending review) and bob, two admins, and one question `q-1` with a bounty of 300.
struct Setting {
    ana: Person,
    bob: Person,
    root: Person,
    question: i64,
}

async fn setting(app: &TestApp) -> Setting {
    budgeted_niche(app, "games", Some(1000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    let root = person(&app.db, "root", true).await;
    let (status, asked) = ask_with_bounty(app, "games", "q-1", 300).await;
    assert_eq!(status, 201, "{asked}");
    let question = asked["question"]["id"].as_i64().expect("an id");
    Setting {
        ana,
        bob,
        root,
        question,
    }
}

async fn answer(app: &TestApp, who: &Person, question: i64) -> Value {
    app.answer(
        &who.token,
        early_access(question, Some("The early-access date.")),
    )
    .await
}

/// `mutation` (verify/reject/reverseContribution) on the newest contribution, as `admin`.
async fn decide(app: &TestApp, admin: &Person, mutation: &str, note: &str) {
    app.decide_newest_contribution(&admin.token, mutation, Some(note).filter(|n| !n.is_empty()))
        .await;
}

/// The allocations of the bounties charged for `question`: (user, status, amount), oldest first.
async fn bounty_parts(app: &TestApp, question: i64) -> Vec<(Option<i64>, AllocationStatus, i64)> {
    let events: Vec<i64> = revenue_events::Entity::find()
        .filter(revenue_events::Column::QuestionId.eq(question))
        .all(&app.db)
        .await
        .expect("events")
        .into_iter()
        .map(|e| e.id)
        .collect();
    allocations::Entity::find()
        .filter(allocations::Column::RevenueEventId.is_in(events))
        .order_by_asc(allocations::Column::Id)
        .all(&app.db)
        .await
        .expect("allocations")
        .into_iter()
        .map(|a| (a.user_id, a.status, a.amount_minor))
        .collect()
}

async fn balance(app: &TestApp, who: &Person) -> Value {
    let body = app
        .graphql(
            Some(&who.token),
            "{ myRevenue { balances { currency heldMinor owedMinor paidMinor } } }",
            json!({}),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    body["data"]["myRevenue"]["balances"][0].clone()
}

/// ana saves a payout address and root verifies it.
async fn ana_can_be_paid(app: &TestApp, s: &Setting) {
    let saved = app
        .graphql(Some(&s.ana.token), SET_ADDRESS, json!({"a": "IBAN DE99 1"}))
        .await;
    assert!(saved["errors"].is_null(), "{saved}");
    let verified = app
        .graphql(
            Some(&s.root.token),
            "mutation { verifyPayoutAddress(handle: \"ana\", address: \"IBAN DE99 1\") { verified } }",
            json!({}),
        )
        .await;
    assert!(verified["errors"].is_null(), "{verified}");
}

async fn question_row(app: &TestApp, id: i64) -> agent_questions::Model {
    agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the question")
}

async fn a_pending_answers_bounty_is_held_until_it_is_verified(app: TestApp) {
    let s = setting(&app).await;
    let answered = answer(&app, &s.ana, s.question).await;
    assert!(answered["errors"].is_null(), "{answered}");
    assert_eq!(
        app.events_for_agent("expert_answer.created").await[0]["review"],
        "pending"
    );
    // Charged to the agent at once; held from the answerer (20 % of 300), the platform's part
    // accrued.
    assert_eq!(
        entries(&app, s.question).await,
        vec![(Reserve, 300), (Charge, 300)]
    );
    assert_eq!(
        bounty_parts(&app, s.question).await,
        vec![
            (Some(s.ana.id), AllocationStatus::Held, 60),
            (None, AllocationStatus::Accrued, 240)
        ]
    );
    let held = balance(&app, &s.ana).await;
    assert_eq!(
        (&held["heldMinor"], &held["owedMinor"]),
        (&json!(60), &json!(0)),
        "{held}"
    );

    // Held money is in no payout.
    ana_can_be_paid(&app, &s).await;
    let refused = app
        .graphql(Some(&s.root.token), SCHEDULE, json!({"handle": "ana"}))
        .await;
    assert_eq!(error_code(&refused), Some("CONFLICT"), "{refused}");
    assert_eq!(refused["errors"][0]["extensions"]["reason"], "NOTHING_OWED");

    decide(&app, &s.root, "verifyContribution", "").await;
    assert_eq!(
        bounty_parts(&app, s.question).await[0],
        (Some(s.ana.id), AllocationStatus::Accrued, 60)
    );
    let owed = balance(&app, &s.ana).await;
    assert_eq!(
        (&owed["heldMinor"], &owed["owedMinor"]),
        (&json!(0), &json!(60)),
        "{owed}"
    );
    let scheduled = app
        .graphql(Some(&s.root.token), SCHEDULE, json!({"handle": "ana"}))
        .await;
    assert_eq!(
        scheduled["data"]["schedulePayout"]["amountMinor"], 60,
        "{scheduled}"
    );
}

async fn a_rejected_answer_gives_the_charge_back_and_reopens_the_question_for_others(app: TestApp) {
    let s = setting(&app).await;
    answer(&app, &s.ana, s.question).await;
    decide(&app, &s.root, "rejectContribution", "A guess.").await;

    // The agent pays nothing for it, the answerer earns nothing, and the bounty is held again
    // for the reopened question.
    assert_eq!(
        entries(&app, s.question).await,
        vec![
            (Reserve, 300),
            (Charge, 300),
            (ChargeReversal, 300),
            (Reserve, 300)
        ]
    );
    assert_eq!(
        bounty_parts(&app, s.question).await,
        vec![
            (Some(s.ana.id), AllocationStatus::Reversed, 60),
            (None, AllocationStatus::Reversed, 240)
        ]
    );
    let reopened = question_row(&app, s.question).await;
    assert_eq!(reopened.status, QuestionStatus::Open);
    assert_eq!(reopened.research_round, 1);
    assert_eq!(reopened.answered_at, None);
    let budget = app
        .graphql(
            Some(&s.root.token),
            "{ budget(nicheSlug: \"games\") { spentMinor reservedMinor } }",
            json!({}),
        )
        .await;
    assert_eq!(
        budget["data"]["budget"],
        json!({"spentMinor": 0, "reservedMinor": 300})
    );

    // The rejected answerer can neither see it waiting for her nor answer it again.
    let waiting = "{ awaitingMe { nodes { id } } }";
    let hers = app.graphql(Some(&s.ana.token), waiting, json!({})).await;
    assert_eq!(hers["data"]["awaitingMe"]["nodes"], json!([]), "{hers}");
    let again = answer(&app, &s.ana, s.question).await;
    assert_eq!(error_code(&again), Some("CONFLICT"), "{again}");
    assert_eq!(
        again["errors"][0]["extensions"]["reason"],
        "ALREADY_ANSWERED"
    );
    let his = app.graphql(Some(&s.bob.token), waiting, json!({})).await;
    assert_eq!(
        his["data"]["awaitingMe"]["nodes"],
        json!([{"id": s.question.to_string()}]),
        "{his}"
    );

    // Another operator's answer settles it, is charged again and reaches the agent.
    let second = answer(&app, &s.bob, s.question).await;
    assert!(second["errors"].is_null(), "{second}");
    let created = app.events_for_agent("expert_answer.created").await;
    assert_eq!(created.len(), 2);
    assert_ne!(created[0]["answerId"], created[1]["answerId"]);
    assert_eq!(created[1]["answeredBy"], "bob");
    let rejected = app.events_for_agent("expert_answer.rejected").await;
    assert_eq!(rejected[0]["answerId"], created[0]["answerId"]);
    assert_eq!(
        entries(&app, s.question).await,
        vec![
            (Reserve, 300),
            (Charge, 300),
            (ChargeReversal, 300),
            (Reserve, 300),
            (Charge, 300)
        ]
    );
    let looked = app
        .post_signed(
            "/api/v1/internal/expert-questions/lookup",
            &json!({"nicheSlug": "games", "externalIds": ["q-1"]}).to_string(),
        )
        .await;
    let looked: Value = looked.json().await.expect("JSON");
    assert_eq!(
        looked["questions"][0]["answer"]["answeredBy"], "bob",
        "{looked}"
    );
    assert_eq!(
        looked["questions"][0]["answer"]["answerId"],
        created[1]["answerId"]
    );
}

async fn a_rejected_answer_to_an_expired_question_leaves_it_expired(app: TestApp) {
    let s = setting(&app).await;
    answer(&app, &s.ana, s.question).await;
    agent_questions::Entity::update_many()
        .col_expr(
            agent_questions::Column::ExpiresAt,
            Expr::value(Utc::now() - Duration::minutes(1)),
        )
        .filter(agent_questions::Column::Id.eq(s.question))
        .exec(&app.db)
        .await
        .expect("moved back");
    decide(&app, &s.root, "rejectContribution", "Wrong.").await;
    assert_eq!(
        question_row(&app, s.question).await.status,
        QuestionStatus::Answered,
        "a question past its time is not reopened"
    );
    assert_eq!(
        entries(&app, s.question).await,
        vec![(Reserve, 300), (Charge, 300), (ChargeReversal, 300)]
    );
}

async fn a_reopened_question_the_budget_no_longer_covers_waits_without_a_bounty(app: TestApp) {
    let s = setting(&app).await;
    answer(&app, &s.ana, s.question).await;
    niches::Entity::update_many()
        .col_expr(
            niches::Column::MonthlyBudgetMinor,
            Expr::value(Some(100_i64)),
        )
        .exec(&app.db)
        .await
        .expect("budget lowered");
    decide(&app, &s.root, "rejectContribution", "A guess.").await;
    let reopened = question_row(&app, s.question).await;
    assert_eq!(
        (reopened.status, reopened.bounty_minor),
        (QuestionStatus::Open, 0)
    );
    assert_eq!(
        entries(&app, s.question).await,
        vec![(Reserve, 300), (Charge, 300), (ChargeReversal, 300)]
    );
    let said = entity::audit_log::Entity::find()
        .filter(entity::audit_log::Column::Action.eq("budget.not_reserved"))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(said, 1);
    // Its answer is then free, and still leaves a (zero) charge.
    answer(&app, &s.bob, s.question).await;
    assert_eq!(entries(&app, s.question).await.last(), Some(&(Charge, 0)));
}

async fn reversing_a_paid_answer_books_a_clawback_that_the_next_payout_nets(app: TestApp) {
    let s = setting(&app).await;
    answer(&app, &s.ana, s.question).await;
    decide(&app, &s.root, "verifyContribution", "").await;
    ana_can_be_paid(&app, &s).await;
    let other_admin = person(&app.db, "root2", true).await;
    let payout = schedule_payout(&app, &s.root).await;
    let paid = mark_paid(&app, &other_admin, &payout, "wire-1").await;
    assert!(paid["errors"].is_null(), "{paid}");

    decide(&app, &s.root, "reverseContribution", "The date moved.").await;
    // The paid part stays paid; a clawback of its negative is owed; the platform's is reversed.
    assert_eq!(
        bounty_parts(&app, s.question).await,
        vec![
            (Some(s.ana.id), AllocationStatus::Paid, 60),
            (None, AllocationStatus::Reversed, 240),
            (Some(s.ana.id), AllocationStatus::Accrued, -60)
        ]
    );
    let clawback = allocations::Entity::find()
        .filter(allocations::Column::AmountMinor.lt(0))
        .one(&app.db)
        .await
        .expect("query")
        .expect("a clawback");
    assert!(clawback.claws_back.is_some());
    let owing = balance(&app, &s.ana).await;
    assert_eq!(
        (&owing["owedMinor"], &owing["paidMinor"]),
        (&json!(-60), &json!(60)),
        "{owing}"
    );
    assert_eq!(
        question_row(&app, s.question).await.status,
        QuestionStatus::Open
    );

    // Nothing is paid while she owes more than she is owed ...
    let refused = app
        .graphql(Some(&s.root.token), SCHEDULE, json!({"handle": "ana"}))
        .await;
    assert_eq!(
        refused["errors"][0]["extensions"]["reason"], "NOTHING_OWED",
        "{refused}"
    );
    // ... and the next payout nets the clawback: 2,000 (her 20 % of 10,000) − 60.
    book_usage(&app, "inv-1").await;
    let netted = app
        .graphql(Some(&s.root.token), SCHEDULE, json!({"handle": "ana"}))
        .await;
    assert_eq!(
        netted["data"]["schedulePayout"]["amountMinor"], 1940,
        "{netted}"
    );
    let after = app.graphql(Some(&s.ana.token), BALANCE, json!({})).await;
    assert_eq!(
        after["data"]["myRevenue"]["balances"][0]["inFlightMinor"], 1940,
        "{after}"
    );
}

on_both_backends!(
    a_pending_answers_bounty_is_held_until_it_is_verified,
    a_rejected_answer_gives_the_charge_back_and_reopens_the_question_for_others,
    a_rejected_answer_to_an_expired_question_leaves_it_expired,
    a_reopened_question_the_budget_no_longer_covers_waits_without_a_bounty,
    reversing_a_paid_answer_books_a_clawback_that_the_next_payout_nets
);
