//! Answers you can weigh (docs/contract.md#weighing-answers), on both stores: the confidence an
//! answer states reaches the agent with the answerer's record; the record's Wilson bound and
//! Brier score are the ones worked by hand; the trust rule counts rejections and follows the
//! niche's threshold; a question asking for several answers takes exactly that many, however
//! many answer at once, and concludes in a consensus or a disagreement; a rejected answer among
//! them gives back its place, not the question.

use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::people::{Person, operator, person};
use askloop_tests::receiver::{Receiver, reserve_port};
use askloop_tests::standard_webhooks::verify_with_library;
use askloop_tests::{TestApp, error_code, on_both_backends};
use chrono::Utc;
use entity::agents::WebhookScheme;
use entity::contribution_events::{self, ContributionStatus};
use entity::{agent_answers, agent_questions, contribution_types, niches};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, NotSet, QueryFilter, Set};
use serde_json::{Value, json};

use crate::agents::{WAIT, post_as, register};

const STANDING: &str = r#"{ viewer { memberships { niche { slug } calibration {
  answers verified verifiedRate lowerBound trusted trustLowerBound brier withConfidence
  bins { from to answers stated observed } } } } }"#;

const WEIGHING: &str = r#"mutation($slug: String!, $bound: Float, $routing: RoutingInput) {
  setNicheWeighing(slug: $slug, trustLowerBound: $bound, routing: $routing) {
    trustLowerBound routing { mode firstWave } } }"#;

/// Seed `who`'s judged answers in `slug` straight into the store, as answering and review
/// would have left them: for each `(confidence, verified)`, an answered question, the answer
/// and its contribution, verified or rejected.
pub(crate) async fn seed_history(
    app: &TestApp,
    slug: &str,
    who: &Person,
    judged: &[(Option<i32>, bool)],
) {
    let niche = niches::Entity::find()
        .filter(niches::Column::Slug.eq(slug))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the niche");
    let answer_type = contribution_types::Entity::find()
        .filter(contribution_types::Column::Key.eq("agent_answer"))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the answer type");
    for (i, (confidence, verified)) in judged.iter().enumerate() {
        let question = app.ask(slug, &format!("history-{}-{i}", who.handle)).await;
        let status = if *verified {
            ContributionStatus::Verified
        } else {
            ContributionStatus::Rejected
        };
        let now = Utc::now();
        let contribution = contribution_events::ActiveModel {
            id: NotSet,
            niche_id: Set(niche.id),
            user_id: Set(who.id),
            type_id: Set(answer_type.id),
            points: Set(3),
            status: Set(status),
            source: Set("answer".into()),
            evidence: Set(json!({ "questionId": question })),
            dedupe_key: Set(Some(format!("agent_answer:question:{question}"))),
            verified_at: Set(verified.then_some(now)),
            verified_by: Set(None),
            reverses: Set(None),
            created_at: Set(now),
        }
        .insert(&app.db)
        .await
        .expect("a contribution");
        agent_answers::ActiveModel {
            id: NotSet,
            question_id: Set(question),
            user_id: Set(who.id),
            kind: Set(agent_answers::AnswerKind::Answered),
            option_id: Set(Some("ea".into())),
            body: Set(None),
            actual_cost_minor: Set(None),
            contribution_event_id: Set(Some(contribution.id)),
            research_round: Set(0),
            knowledge_entry_id: Set(None),
            confidence: Set(*confidence),
            one_of_several: Set(false),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&app.db)
        .await
        .expect("an answer");
    }
}

fn close(value: &Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|v| (v - expected).abs() < 1e-4)
}

async fn answer_with(app: &TestApp, who: &Person, question: i64, option: &str) -> Value {
    app.answer(
        &who.token,
        json!({"questionId": question.to_string(), "kind": "ANSWERED", "optionId": option, "confidence": 80}),
    )
    .await
}

async fn the_record_is_the_wilson_bound_and_brier_score_and_trust_counts_rejections(app: TestApp) {
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    // ana: 20 verified at 95 %, 4 verified at 80 %, 1 rejected at 80 %.
    let mut history = vec![(Some(95), true); 20];
    history.extend([(Some(80), true); 4]);
    history.push((Some(80), false));
    seed_history(&app, "games", &ana, &history).await;

    let standing = app.graphql(Some(&ana.token), STANDING, json!({})).await;
    let record = &standing["data"]["viewer"]["memberships"][0]["calibration"];
    assert_eq!(
        (record["answers"].clone(), record["verified"].clone()),
        (json!(25), json!(24)),
        "{standing}"
    );
    // By hand: p = 24/25 = 0.96, z = 1.96, n = 25: (p + z²/2n - z·sqrt(p(1-p)/n + z²/4n²)) /
    // (1 + z²/n) = (0.96 + 0.076829 - 1.959964 · sqrt(0.001536 + 0.0015366)) / 1.153658 = 0.80456.
    assert!(close(&record["lowerBound"], 0.80456), "{record}");
    assert!(close(&record["verifiedRate"], 0.96), "{record}");
    // Brier by hand: (20 · 0.05² + 4 · 0.2² + 1 · 0.8²) / 25 = (0.05 + 0.16 + 0.64) / 25 = 0.034.
    assert!(close(&record["brier"], 0.034), "{record}");
    assert_eq!(
        record["trusted"], false,
        "one rejection among 25 is not yet trusted"
    );
    let bins = record["bins"].as_array().expect("bins");
    let shape: Vec<(Value, Value, Value)> = bins
        .iter()
        .map(|b| (b["from"].clone(), b["to"].clone(), b["answers"].clone()))
        .collect();
    assert_eq!(
        shape,
        [
            (json!(80), json!(89), json!(5)),
            (json!(90), json!(100), json!(20))
        ]
    );
    assert!(close(&bins[0]["stated"], 0.8) && close(&bins[0]["observed"], 0.8));
    assert!(close(&bins[1]["stated"], 0.95) && close(&bins[1]["observed"], 1.0));
    let question = app.ask("games", "after-history").await;
    let answered = answer_with(&app, &ana, question, "ea").await;
    assert_eq!(
        answered["data"]["answerQuestion"]["contributionStatus"], "PENDING",
        "{answered}"
    );

    // bob: 40 clean answers (lower bound 0.9124) are trusted at the default 0.85 ...
    seed_history(&app, "games", &bob, &[(None, true); 40]).await;
    let question = app.ask("games", "bob-trusted").await;
    let answered = answer_with(&app, &bob, question, "ea").await;
    assert_eq!(
        answered["data"]["answerQuestion"]["contributionStatus"], "VERIFIED",
        "{answered}"
    );
    // ... and not at a niche's 0.95, which an admin sets; a bad threshold changes nothing.
    let refused = app
        .graphql(
            Some(&root.token),
            WEIGHING,
            json!({"slug": "games", "bound": 0.3}),
        )
        .await;
    assert_eq!(error_code(&refused), Some("BAD_USER_INPUT"), "{refused}");
    let refused = app
        .graphql(
            Some(&bob.token),
            WEIGHING,
            json!({"slug": "games", "bound": 0.95}),
        )
        .await;
    assert!(
        !refused["errors"].is_null(),
        "an operator may not: {refused}"
    );
    for (variables, code) in [
        (
            json!({"slug": "games", "routing": {"mode": "FIRST_WAVE", "firstWave": 0}}),
            "BAD_USER_INPUT",
        ),
        (
            json!({"slug": "games", "routing": {"mode": "FIRST_WAVE", "firstWave": 51}}),
            "BAD_USER_INPUT",
        ),
        (
            json!({"slug": "games", "routing": {"mode": "BROADCAST", "firstWave": 2}}),
            "BAD_USER_INPUT",
        ),
        (json!({"slug": "games", "bound": 1.5}), "BAD_USER_INPUT"),
        (json!({"slug": "nowhere", "bound": 0.9}), "NOT_FOUND"),
    ] {
        let refused = app
            .graphql(Some(&root.token), WEIGHING, variables.clone())
            .await;
        assert_eq!(error_code(&refused), Some(code), "{variables}: {refused}");
    }
    let unchanged = app
        .graphql(
            Some(&root.token),
            "{ niche(slug: \"games\") { trustLowerBound routing { mode firstWave } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        unchanged["data"]["niche"],
        json!({"trustLowerBound": 0.85, "routing": {"mode": "BROADCAST", "firstWave": null}}),
        "nothing refused changed it"
    );
    let set = app
        .graphql(
            Some(&root.token),
            WEIGHING,
            json!({"slug": "games", "bound": 0.95}),
        )
        .await;
    assert_eq!(
        set["data"]["setNicheWeighing"]["trustLowerBound"], 0.95,
        "{set}"
    );
    let question = app.ask("games", "bob-stricter").await;
    let answered = answer_with(&app, &bob, question, "ea").await;
    assert_eq!(
        answered["data"]["answerQuestion"]["contributionStatus"], "PENDING",
        "{answered}"
    );
}

on_both_backends!(the_record_is_the_wilson_bound_and_brier_score_and_trust_counts_rejections);

async fn confidence_reaches_the_agent_in_both_webhook_schemes_and_the_lookup(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    seed_history(&app, "games", &ana, &[(Some(90), true), (Some(70), false)]).await;
    let mut received = Vec::new();
    for (slug, scheme) in [
        ("agent-own", WebhookScheme::Chovy),
        ("agent-std", WebhookScheme::Standard),
    ] {
        let addr = reserve_port();
        let secret = register(
            &app,
            slug,
            &["games"],
            Some(&Receiver::url_for(addr)),
            scheme,
        )
        .await;
        let endpoint = Receiver::start_verifying(addr, &secret, Vec::new()).await;
        let asked = post_as(
            &app,
            slug,
            &secret,
            "/api/v1/internal/expert-questions",
            &question_body("games", &format!("{slug}-q")),
        )
        .await;
        let asked: Value = asked.json().await.expect("JSON");
        let question = asked["question"]["id"].as_i64().expect("an id");
        // Out of range and on a decline: refused, nothing stored.
        let low = app
            .answer(
                &ana.token,
                json!({"questionId": question.to_string(), "kind": "ANSWERED", "optionId": "ea", "confidence": 49}),
            )
            .await;
        assert_eq!(error_code(&low), Some("BAD_USER_INPUT"), "{low}");
        assert!(
            low["errors"][0]["message"]
                .as_str()
                .is_some_and(|m| m.contains("50 to 100")),
            "{low}"
        );
        let decline = app
            .answer(
                &ana.token,
                json!({"questionId": question.to_string(), "kind": "INSUFFICIENT_CONTEXT", "confidence": 80}),
            )
            .await;
        assert_eq!(error_code(&decline), Some("BAD_USER_INPUT"), "{decline}");
        let stored = agent_answers::Entity::find()
            .filter(agent_answers::Column::QuestionId.eq(question))
            .all(&app.db)
            .await
            .expect("read");
        assert!(
            stored.is_empty(),
            "a refused answer stores nothing: {stored:?}"
        );
        let answered = answer_with(&app, &ana, question, "ea").await;
        assert!(answered["errors"].is_null(), "{answered}");
        received.push((slug, secret, endpoint, question));
    }
    for (slug, secret, endpoint, _) in &received {
        endpoint
            .wait_until(WAIT, "expert_answer.created", |r| {
                r.iter()
                    .any(|d| d.envelope["type"] == "expert_answer.created")
            })
            .await;
        let got = endpoint.received();
        let got = got
            .iter()
            .find(|d| d.envelope["type"] == "expert_answer.created")
            .expect("the answer");
        assert!(got.verified, "{slug}: the signature verifies");
        if *slug == "agent-std" {
            assert!(verify_with_library(secret, got, &got.body).is_ok());
        }
        let payload = &got.envelope["payload"];
        assert_eq!(payload["confidence"], 80, "{slug}: {payload}");
        assert_eq!(payload["answerer"]["answers"], 2, "{payload}");
        assert!(
            close(&payload["answerer"]["verifiedRate"], 0.5),
            "{payload}"
        );
        // Wilson at 1 of 2: (0.5 + 0.960365 - 1.959964 · sqrt(0.125 + 0.240091)) / 2.920730.
        assert!(
            close(&payload["answerer"]["lowerBound"], 0.0945),
            "{payload}"
        );
        // Brier: ((0.9 - 1)² + (0.7 - 0)²) / 2 = (0.01 + 0.49) / 2 = 0.25.
        assert!(close(&payload["answerer"]["brier"], 0.25), "{payload}");
    }
    // The form route takes confidence as typed; what is not a whole number changes nothing.
    let question = app.ask("games", "form-confidence").await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    for (typed, error) in [
        ("sure", "confidence+must+be+a+whole+number"),
        ("101", "from+50+to+100"),
    ] {
        let refused = client
            .post(app.url(&format!("/dashboard/questions/{question}/answer")))
            .bearer_auth(&ana.token)
            .form(&[
                ("kind", "answered"),
                ("option_id", "ea"),
                ("confidence", typed),
                ("next", "/dashboard/niches/games/questions"),
            ])
            .send()
            .await
            .expect("sent");
        assert_eq!(refused.status(), 303);
        let location = refused.headers()["location"].to_str().expect("text");
        assert!(location.contains(error), "{typed}: {location}");
    }
    let done = client
        .post(app.url(&format!("/dashboard/questions/{question}/answer")))
        .bearer_auth(&ana.token)
        .form(&[
            ("kind", "answered"),
            ("option_id", "ea"),
            ("confidence", " 95 "),
        ])
        .send()
        .await
        .expect("sent");
    assert_eq!(done.status(), 303);
    let stored = agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.eq(question))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the answer from the form");
    assert_eq!(stored.confidence, Some(95));
    let (slug, secret, _, _) = &received[0];
    let looked = post_as(
        &app,
        slug,
        secret,
        "/api/v1/internal/expert-questions/lookup",
        &json!({"nicheSlug": "games", "externalIds": [format!("{slug}-q")]}),
    )
    .await;
    let looked: Value = looked.json().await.expect("JSON");
    let answer = &looked["questions"][0]["answer"];
    assert_eq!(answer["confidence"], 80, "{looked}");
    assert_eq!(answer["answerer"]["answers"], 2, "{looked}");
}

on_both_backends!(confidence_reaches_the_agent_in_both_webhook_schemes_and_the_lookup);

/// A question asking `wanted` answers at `agreement`, with three options.
pub(crate) async fn ask_several(
    app: &TestApp,
    external_id: &str,
    wanted: i64,
    agreement: f64,
) -> i64 {
    let mut body = question_body("games", external_id);
    body["payload"]["options"] = json!([
        {"id": "ea", "label": "Early access"},
        {"id": "full", "label": "1.0"},
        {"id": "demo", "label": "The demo"},
    ]);
    body["payload"]["answers"] = json!({"wanted": wanted, "agreement": agreement});
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    assert_eq!(response.status(), 201);
    let stored: Value = response.json().await.expect("JSON");
    stored["question"]["id"].as_i64().expect("an id")
}

async fn operators(app: &TestApp, count: usize) -> Vec<Person> {
    let mut people = Vec::with_capacity(count);
    for i in 0..count {
        people.push(operator(&app.db, "games", &format!("op{i}")).await);
    }
    people
}

async fn twenty_answering_three_places_at_once_leave_exactly_three(app: TestApp) {
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    let budget = app
        .graphql(
            Some(&root.token),
            "mutation { setNicheBudget(nicheSlug: \"games\", monthlyBudgetMinor: 10000, bountyMinor: 100, maxBountyMinor: 500) { bountyMinor } }",
            json!({}),
        )
        .await;
    assert!(budget["errors"].is_null(), "{budget}");
    let people = operators(&app, 20).await;
    let question = ask_several(&app, "race", 3, 0.6).await;
    let tries = people.iter().map(|p| answer_with(&app, p, question, "ea"));
    let results = futures::future::join_all(tries).await;
    let won: Vec<&Value> = results.iter().filter(|r| r["errors"].is_null()).collect();
    assert_eq!(won.len(), 3, "{results:?}");
    for lost in results.iter().filter(|r| !r["errors"].is_null()) {
        assert_eq!(
            lost["errors"][0]["extensions"]["reason"], "ANSWERS_COMPLETE",
            "{lost}"
        );
        assert!(
            lost["errors"][0]["message"]
                .as_str()
                .is_some_and(|m| m.contains("all 3 answers")),
            "{lost}"
        );
    }
    for won in &won {
        assert_eq!(
            won["data"]["answerQuestion"]["contributionStatus"],
            "PENDING"
        );
    }
    let answers = agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.eq(question))
        .all(&app.db)
        .await
        .expect("read");
    assert_eq!(answers.len(), 3, "{answers:?}");
    let stored = agent_questions::Entity::find_by_id(question)
        .one(&app.db)
        .await
        .expect("read")
        .expect("the question");
    assert_eq!(
        (stored.answers_in, stored.status),
        (3, agent_questions::QuestionStatus::Answered)
    );
    // The bounty of 100 is split 33, 33, 34: each part charged once and its author's share
    // held until that answer's own verdict.
    let charged: Vec<i64> = entity::budget_entries::Entity::find()
        .filter(entity::budget_entries::Column::QuestionId.eq(question))
        .filter(
            entity::budget_entries::Column::Kind
                .eq(entity::budget_entries::BudgetEntryKind::Charge),
        )
        .all(&app.db)
        .await
        .expect("read")
        .into_iter()
        .map(|e| e.amount_minor)
        .collect();
    let mut parts = charged.clone();
    parts.sort_unstable();
    assert_eq!(parts, [33, 33, 34], "{charged:?}");
    let events = entity::revenue_events::Entity::find()
        .filter(entity::revenue_events::Column::QuestionId.eq(question))
        .all(&app.db)
        .await
        .expect("read");
    assert_eq!(events.len(), 3, "one revenue event per answer");
    let shares = entity::allocations::Entity::find()
        .filter(
            entity::allocations::Column::RevenueEventId
                .is_in(events.iter().map(|e| e.id).collect::<Vec<_>>()),
        )
        .filter(
            entity::allocations::Column::UserId
                .is_in(people.iter().map(|p| p.id).collect::<Vec<_>>()),
        )
        .all(&app.db)
        .await
        .expect("read");
    assert_eq!(shares.len(), 3, "{shares:?}");
    assert!(
        shares
            .iter()
            .all(|a| a.status == entity::allocations::AllocationStatus::Held),
        "{shares:?}"
    );
    // A fourth, later, is refused with the reason too.
    let late = operator(&app.db, "games", "late").await;
    let refused = answer_with(&app, &late, question, "full").await;
    assert_eq!(
        refused["errors"][0]["extensions"]["reason"], "ANSWERS_COMPLETE",
        "{refused}"
    );
}

on_both_backends!(twenty_answering_three_places_at_once_leave_exactly_three);

async fn two_to_one_is_a_consensus_one_each_a_disagreement_and_a_rejection_reopens_one_place(
    app: TestApp,
) {
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    let people = operators(&app, 4).await;
    let split = ask_several(&app, "split", 3, 0.6).await;
    // No herding: before answering, a member does not see the others' choices.
    let first = answer_with(&app, &people[0], split, "ea").await;
    assert!(first["errors"].is_null(), "{first}");
    let seen = app
        .graphql(
            Some(&people[1].token),
            "query($id: ID!) { question(id: $id) { answersWanted answersIn answers { optionId withheld } consensus { optionId } } }",
            json!({"id": split.to_string()}),
        )
        .await;
    let seen = &seen["data"]["question"];
    assert_eq!(
        (seen["answersWanted"].clone(), seen["answersIn"].clone()),
        (json!(3), json!(1)),
        "{seen}"
    );
    assert_eq!(
        seen["answers"],
        json!([{"optionId": null, "withheld": true}]),
        "{seen}"
    );
    assert!(seen["consensus"].is_null());
    for (who, option) in [(&people[1], "ea"), (&people[2], "full")] {
        let answered = answer_with(&app, who, split, option).await;
        assert!(answered["errors"].is_null(), "{answered}");
    }
    let consensus = app.events_for_agent("expert_question.consensus").await;
    assert_eq!(consensus.len(), 1, "{consensus:?}");
    assert_eq!(consensus[0]["optionId"], "ea");
    assert!(
        close(&consensus[0]["agreement"], 0.6667),
        "{}",
        consensus[0]
    );
    // Nobody has a record: the weighted share is the raw one.
    assert!(
        close(&consensus[0]["weightedAgreement"], 0.6667),
        "{}",
        consensus[0]
    );
    assert_eq!(consensus[0]["answers"].as_array().map(Vec::len), Some(3));

    let apart = ask_several(&app, "apart", 3, 0.6).await;
    for (who, option) in [
        (&people[0], "ea"),
        (&people[1], "full"),
        (&people[2], "demo"),
    ] {
        let answered = answer_with(&app, who, apart, option).await;
        assert!(answered["errors"].is_null(), "{answered}");
    }
    let disagreement = app.events_for_agent("expert_question.disagreement").await;
    assert_eq!(disagreement.len(), 1, "{disagreement:?}");
    assert_eq!(disagreement[0]["questionId"], apart);
    assert!(
        close(&disagreement[0]["plurality"]["agreement"], 0.3333),
        "{}",
        disagreement[0]
    );
    let escalated = entity::audit_log::Entity::find()
        .filter(entity::audit_log::Column::Action.eq("question.disagreement"))
        .all(&app.db)
        .await
        .expect("read");
    assert_eq!(escalated.len(), 1);

    // Rejecting one of the three gives back its place: the question waits for one more answer.
    let rejected_one = agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.eq(apart))
        .filter(agent_answers::Column::UserId.eq(people[2].id))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the answer");
    let rejected = app
        .graphql(
            Some(&root.token),
            "mutation($id: ID!) { rejectContribution(id: $id, note: \"No demo date exists.\") { status } }",
            json!({"id": rejected_one.contribution_event_id.expect("a contribution").to_string()}),
        )
        .await;
    assert!(rejected["errors"].is_null(), "{rejected}");
    let reopened = agent_questions::Entity::find_by_id(apart)
        .one(&app.db)
        .await
        .expect("read")
        .expect("the question");
    assert_eq!(
        (
            reopened.status,
            reopened.answers_in,
            reopened.research_round
        ),
        (agent_questions::QuestionStatus::Open, 2, 0),
        "one place reopens, not the question"
    );
    let again = answer_with(&app, &people[3], apart, "ea").await;
    assert!(again["errors"].is_null(), "{again}");
    let consensus = app.events_for_agent("expert_question.consensus").await;
    assert_eq!(consensus.len(), 2, "{consensus:?}");
    assert_eq!(consensus[1]["questionId"], apart);

    // The lookup shows every answer and the consensus.
    let looked = app
        .post_signed(
            "/api/v1/internal/expert-questions/lookup",
            &json!({"nicheSlug": "games", "externalIds": ["split"]}).to_string(),
        )
        .await;
    let looked: Value = looked.json().await.expect("JSON");
    let several = &looked["questions"][0]["several"];
    assert_eq!(
        several["answers"].as_array().map(Vec::len),
        Some(3),
        "{looked}"
    );
    assert_eq!(several["consensus"]["optionId"], "ea", "{looked}");
    assert_eq!(several["consensus"]["reached"], true, "{looked}");

    // Admins read the niche's agreement. Both questions' standing answers are ea, ea, 1.0 (the
    // rejected "demo" does not stand). By hand, Krippendorff's nominal alpha: each unit adds
    // o(ea,ea) = 1, o(ea,1.0) = o(1.0,ea) = 1; n_ea = 4, n_1.0 = 2, n = 6; alpha = 1 - (n - 1) *
    // 4 / (2 * 4 * 2) = 1 - 20/16 = -0.25 (worse than chance: the same split twice).
    let agreement = "{ niche(slug: \"games\") { agreement { alpha questions people { handle answers agreed } } } }";
    let read = app.graphql(Some(&root.token), agreement, json!({})).await;
    let read = &read["data"]["niche"]["agreement"];
    assert!(close(&read["alpha"], -0.25), "{read}");
    assert_eq!(read["questions"], 2);
    assert_eq!(
        read["people"],
        json!([
            {"handle": "op0", "answers": 2, "agreed": 2},
            {"handle": "op1", "answers": 2, "agreed": 1},
            {"handle": "op2", "answers": 1, "agreed": 0},
            {"handle": "op3", "answers": 1, "agreed": 1},
        ])
    );
    let hidden = app
        .graphql(Some(&people[0].token), agreement, json!({}))
        .await;
    assert!(hidden["data"]["niche"]["agreement"].is_null(), "{hidden}");
}

on_both_backends!(
    two_to_one_is_a_consensus_one_each_a_disagreement_and_a_rejection_reopens_one_place
);

async fn several_answers_are_refused_where_they_cannot_agree(app: TestApp) {
    open_niche(&app.db, "games").await;
    let refuse = |mut body: Value, answers: Value| {
        body["payload"]["answers"] = answers;
        body
    };
    let cases = [
        (
            refuse(question_body("games", "a"), json!({"wanted": 8})),
            "from 1 to 7",
        ),
        (
            refuse(
                question_body("games", "b"),
                json!({"wanted": 3, "agreement": 0.4}),
            ),
            "0.5 to 1.0",
        ),
        (
            refuse(
                question_body("games", "c"),
                json!({"wanted": 3, "quorum": 2}),
            ),
            "quorum",
        ),
        (
            refuse(question_body("games", "d"), json!(3)),
            "must be an object",
        ),
        (
            {
                let mut body = refuse(question_body("games", "e"), json!({"wanted": 2}));
                body["payload"]["options"] = json!([{"id": "only", "label": "Only one"}]);
                body
            },
            "at least two options",
        ),
    ];
    for (body, says) in cases {
        let response = app
            .post_signed("/api/v1/internal/expert-questions", &body.to_string())
            .await;
        assert_eq!(response.status(), 400, "{body}");
        let error: Value = response.json().await.expect("JSON");
        assert!(
            error.to_string().contains(says),
            "{error} should say {says}"
        );
    }
    let stored = agent_questions::Entity::find()
        .all(&app.db)
        .await
        .expect("read");
    assert!(stored.is_empty(), "nothing was stored: {stored:?}");
}

on_both_backends!(several_answers_are_refused_where_they_cannot_agree);

/// In a real Chromium: a several-answer question's card says how many answers are in and asks
/// how sure (a value outside 50–100 is refused in the form); the confidence chosen is stored;
/// the standing shows the record and its calibration chart; axe-core finds nothing serious at
/// 1280 and 390 px on either page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_asks_how_sure_and_counts_answers_and_the_standing_charts_calibration() {
    use askloop_tests::browser::{button_in, labelled_in};
    use askloop_tests::pages::{require_built_dashboard, signed_in};
    require_built_dashboard();
    let app = TestApp::spawn(askloop_tests::Backend::Sqlite)
        .await
        .expect("an app");
    open_niche(&app.db, "games").await;
    let mara = operator(&app.db, "games", "mara").await;
    let ben = operator(&app.db, "games", "ben").await;
    let mut history = vec![(Some(80), true); 4];
    history.push((Some(95), true));
    history.push((Some(60), false));
    seed_history(&app, "games", &mara, &history).await;
    let cara = operator(&app.db, "games", "cara").await;
    let question = ask_several(&app, "browser-several", 3, 0.6).await;
    for who in [&ben, &cara] {
        let first = answer_with(&app, who, question, "ea").await;
        assert!(first["errors"].is_null(), "{first}");
    }

    let mut browser = signed_in(
        &app,
        "mara",
        &format!("/dashboard/niches/games/questions/{question}"),
    )
    .await;
    let card = "document.querySelector('section.act')";
    browser
        .wait_for(
            &format!("{card} && {card}.querySelector('.several')"),
            "the several-answers line",
        )
        .await;
    let several = browser
        .eval(&format!("{card}.querySelector('.several').innerText"))
        .await;
    assert!(
        several
            .as_str()
            .unwrap_or_default()
            .contains("2 of 3 answers in"),
        "{several}"
    );
    for (width, height, mobile) in [(1280, 800, false), (390, 844, true)] {
        browser.viewport(width, height, mobile).await;
        crate::review_pages::assert_accessible(
            &mut browser,
            &format!("a several-answer question's card at {width} px"),
        )
        .await;
    }
    browser.viewport(1280, 800, false).await;
    browser.screenshot("several-answers-card").await;
    browser.click(&labelled_in(card, "1.0")).await;
    let how_sure = labelled_in(card, "How sure?");
    let pick = |value: &str| {
        format!(
            "(el => {{ el.value = '{value}'; el.dispatchEvent(new Event('change', {{bubbles: true}})); return true; }})({how_sure})"
        )
    };
    browser.eval(&pick("other")).await;
    let other = labelled_in(card, "How sure, 50 to 100 %");
    browser
        .wait_for(&other, "the field for another value")
        .await;
    browser.fill(&other, "40").await;
    browser.click(&button_in(card, "Answer")).await;
    browser
        .wait_for(
            &format!("{card}.querySelector('.form-error').textContent.includes('from 50 to 100')"),
            "the refusal of 40 %",
        )
        .await;
    browser.eval(&pick("80")).await;
    browser.click(&button_in(card, "Answer")).await;
    browser
        .wait_for(
            "document.querySelector('main p.notice[role=status]')",
            "the notice",
        )
        .await;
    let stored = agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.eq(question))
        .filter(agent_answers::Column::UserId.eq(mara.id))
        .one(&app.db)
        .await
        .expect("read")
        .expect("mara's answer");
    assert_eq!(
        (stored.option_id.as_deref(), stored.confidence),
        (Some("full"), Some(80))
    );

    // The standing: 5 of 6 verified, and the chart's three bins.
    browser.goto(&app.url("/dashboard")).await;
    browser
        .wait_for(
            "document.querySelector('table.calibration tbody tr')",
            "the calibration chart",
        )
        .await;
    let record = browser
        .eval("document.querySelector('section.record').innerText")
        .await;
    let record = record.as_str().unwrap_or_default().to_owned();
    assert!(record.contains("5 of 6 verified"), "{record}");
    let rows = browser
        .eval(
            "[...document.querySelectorAll('table.calibration tbody th')].map(t => t.textContent)",
        )
        .await;
    assert_eq!(rows, json!(["60–69 %", "80–89 %", "90–100 %"]));
    for (width, height, mobile) in [(1280, 800, false), (390, 844, true)] {
        browser.viewport(width, height, mobile).await;
        crate::review_pages::assert_accessible(
            &mut browser,
            &format!("the standing with its chart at {width} px"),
        )
        .await;
    }
    browser.screenshot("calibration-chart").await;
}
