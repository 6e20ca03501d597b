//! Reuse pays the contributor, and a withdrawal reaches everyone who relied on it
//! (docs/contract.md#knowledge), on both stores: an agent's reuse is booked once per external
//! id, charged from the niche's budget (402 with nothing booked when it cannot be) and paid to
//! the entry's author; an operator settles a waiting question from an entry once however many
//! try at once; when the entry is retracted the asker, every reuser and the question settled
//! from it each receive one signed `knowledge.retracted`, the reuse charges are given back and
//! the author's reuse money is reversed, or clawed back once paid out.

use std::collections::HashMap;

use askloop::service::money::payouts;
use askloop_tests::answers::answer_input;
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::mcp::{McpClient, agent_with_token};
use askloop_tests::people::{Person, operator, person};
use askloop_tests::receiver::{Receiver, reserve_port};
use askloop_tests::standard_webhooks::verify_with_library;
use askloop_tests::{TestApp, error_code, on_both_backends};
use entity::agents::WebhookScheme;
use entity::allocations::{self, AllocationStatus};
use entity::knowledge_reuses::{self, ReuseKind};
use entity::{contribution_events, contribution_types, revenue_events};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

use crate::agents::{WAIT, post_as, register};

const REUSE_PATH: &str = "/api/v1/internal/knowledge/reuse";

const BUDGET: &str = r#"mutation($slug: String!, $price: Int) {
  setNicheBudget(nicheSlug: $slug, monthlyBudgetMinor: 2000, bountyMinor: 100, maxBountyMinor: 500, reusePriceMinor: $price) {
    reusePriceMinor reuseSpendMinor spentMinor
  }
}"#;

const SPEND: &str = r#"query($slug: String!) {
  budget(nicheSlug: $slug) { spentMinor reservedMinor reuseSpendMinor reusePriceMinor }
}"#;

const ENTRY: &str = r#"query($id: ID!) {
  knowledgeEntry(id: $id) { entry { id status reuseCount nicheSlug } }
}"#;

/// Niche `games` with a monthly budget of 2000, bounties of 100 and reuses at `price`; its
/// operator ana (who writes the entry), its admin root.
async fn games(app: &TestApp, price: i64) -> (Person, Person) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let set = app
        .graphql(
            Some(&root.token),
            BUDGET,
            json!({"slug": "games", "price": price}),
        )
        .await;
    assert_eq!(
        set["data"]["setNicheBudget"]["reusePriceMinor"], price,
        "{set}"
    );
    (ana, root)
}

/// The entry id of question `external_id` asked by `agent` (signed with `secret`), answered by
/// `ana` and verified by `root`; and the question's id.
async fn entry_asked_by(
    app: &TestApp,
    (agent, secret): (&str, &str),
    external_id: &str,
    (ana, root): (&Person, &Person),
) -> (i64, i64) {
    let mut body = question_body("games", external_id);
    body["payload"]["title"] = json!("Which release date counts for a festival?");
    let asked = post_as(
        app,
        agent,
        secret,
        "/api/v1/internal/expert-questions",
        &body,
    )
    .await;
    assert_eq!(asked.status(), 201);
    let asked: Value = asked.json().await.expect("JSON");
    let question = asked["question"]["id"].as_i64().expect("an id");
    let answered = app
        .answer(
            &ana.token,
            answer_input(
                question,
                "ANSWERED",
                Some("ea"),
                Some("The early-access date: festivals go by the storefront."),
            ),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;
    let entry = entity::knowledge_entries::Entity::find()
        .filter(entity::knowledge_entries::Column::QuestionId.eq(question))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the verified answer is an entry");
    (entry.id, question)
}

/// `agent` reuses `entry` under `external_id`: the status and body.
async fn reuse(
    app: &TestApp,
    (agent, secret): (&str, &str),
    entry: Value,
    external_id: &str,
) -> (u16, Value) {
    let response = post_as(
        app,
        agent,
        secret,
        REUSE_PATH,
        &json!({"entryId": entry, "externalId": external_id}),
    )
    .await;
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

async fn reuse_rows(app: &TestApp, kind: ReuseKind) -> Vec<knowledge_reuses::Model> {
    knowledge_reuses::Entity::find()
        .filter(knowledge_reuses::Column::Kind.eq(kind))
        .all(&app.db)
        .await
        .expect("read")
}

async fn spend(app: &TestApp, root: &Person) -> Value {
    let body = app
        .graphql(Some(&root.token), SPEND, json!({"slug": "games"}))
        .await;
    assert!(body["errors"].is_null(), "{body}");
    body["data"]["budget"].clone()
}

/// The reuse revenue events (askloop's own ids for them) with their allocations.
async fn reuse_events(app: &TestApp) -> Vec<(revenue_events::Model, Vec<allocations::Model>)> {
    let events = revenue_events::Entity::find()
        .filter(revenue_events::Column::SourceType.eq("knowledge_reuse"))
        .all(&app.db)
        .await
        .expect("read");
    let mut out = Vec::new();
    for event in events {
        let parts = allocations::Entity::find()
            .filter(allocations::Column::RevenueEventId.eq(event.id))
            .all(&app.db)
            .await
            .expect("read");
        out.push((event, parts));
    }
    out
}

on_both_backends!(
    a_reuse_books_once_charges_the_budget_pays_the_author_and_refuses_what_it_may_not,
    a_question_settled_from_knowledge_is_settled_once_and_names_its_entry,
    a_retraction_reaches_everyone_who_relied_on_it_and_gives_the_money_back,
);

async fn a_reuse_books_once_charges_the_budget_pays_the_author_and_refuses_what_it_may_not(
    app: TestApp,
) {
    let (ana, root) = games(&app, 300).await;
    let asker = register(&app, "agent-asker", &["games"], None, WebhookScheme::Chovy).await;
    let (entry, _) = entry_asked_by(&app, ("agent-asker", &asker), "q-1", (&ana, &root)).await;
    let a = register(&app, "agent-a", &["games"], None, WebhookScheme::Chovy).await;
    let b = register(&app, "agent-b", &["games"], None, WebhookScheme::Chovy).await;

    // The same external id three times (as a number, then as a string) books once.
    let (first, body) = reuse(&app, ("agent-a", &a), json!(entry), "r-1").await;
    assert_eq!(first, 201, "{body}");
    assert_eq!(body["entryId"], entry);
    assert_eq!(body["status"], "current");
    assert_eq!(body["chargedMinor"], 300);
    assert_eq!(body["verification"], "review");
    assert_eq!(body["duplicate"], false);
    assert_eq!(
        body["answer"],
        "The early-access date: festivals go by the storefront."
    );
    for _ in 0..2 {
        let (again, replay) = reuse(&app, ("agent-a", &a), json!(entry.to_string()), "r-1").await;
        assert_eq!(again, 200, "{replay}");
        assert_eq!(replay["reuseId"], body["reuseId"]);
        assert_eq!(replay["duplicate"], true);
    }
    assert_eq!(reuse_rows(&app, ReuseKind::Reuse).await.len(), 1);
    let events = reuse_events(&app).await;
    assert_eq!(events.len(), 1, "one revenue event for one reuse");
    let (event, parts) = &events[0];
    assert_eq!(event.gross_minor, 300);
    assert_eq!(parts.iter().map(|p| p.amount_minor).sum::<i64>(), 300);
    let author = parts
        .iter()
        .find(|p| p.user_id == Some(ana.id))
        .expect("the entry's author has a part");
    assert!(author.amount_minor > 0, "{author:?}");
    assert_eq!(author.status, AllocationStatus::Accrued);
    let audited = entity::audit_log::Entity::find()
        .filter(entity::audit_log::Column::Action.eq("knowledge.reused"))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(audited, 1);
    // Spent this month: the first question's bounty (100) and the reuse (300).
    let budget = spend(&app, &root).await;
    assert_eq!(
        (
            budget["spentMinor"].as_i64(),
            budget["reuseSpendMinor"].as_i64()
        ),
        (Some(400), Some(300)),
        "{budget}"
    );

    // Another agent may not take the id; it reuses under its own.
    let (taken, refused) = reuse(&app, ("agent-b", &b), json!(entry), "r-1").await;
    assert_eq!(
        (taken, refused["reason"].as_str()),
        (409, Some("EXTERNAL_ID_TAKEN")),
        "{refused}"
    );
    for (i, external) in ["r-2", "r-3", "r-4", "r-5"].iter().enumerate() {
        let (status, body) = reuse(&app, ("agent-b", &b), json!(entry), external).await;
        assert_eq!(status, 201, "reuse {i}: {body}");
    }
    // 100 + 5 × 300 = 1600 of 2000 spent: one more reuse does not fit, and books nothing.
    let before = (
        reuse_rows(&app, ReuseKind::Reuse).await.len(),
        reuse_events(&app).await.len(),
        spend(&app, &root).await,
    );
    let (_, fits) = reuse(&app, ("agent-b", &b), json!(entry), "r-6").await;
    let (over, refused) = reuse(&app, ("agent-b", &b), json!(entry), "r-7").await;
    assert_eq!(fits["chargedMinor"], 300, "{fits}");
    assert_eq!(over, 402, "{refused}");
    assert_eq!(refused["remainingMinor"], 100, "{refused}");
    let after = (
        reuse_rows(&app, ReuseKind::Reuse).await.len(),
        reuse_events(&app).await.len(),
        spend(&app, &root).await,
    );
    assert_eq!(
        after.0,
        before.0 + 1,
        "only the reuse that fitted is booked"
    );
    assert_eq!(after.1, before.1 + 1);
    assert_eq!(after.2["reuseSpendMinor"], 1800, "{}", after.2);

    // The entry shows its reuses (and its niche); its author's standing counts them.
    let shown = app
        .graphql(Some(&ana.token), ENTRY, json!({"id": entry.to_string()}))
        .await;
    assert_eq!(
        shown["data"]["knowledgeEntry"]["entry"]["reuseCount"], 6,
        "{shown}"
    );
    assert_eq!(
        shown["data"]["knowledgeEntry"]["entry"]["nicheSlug"],
        "games"
    );
    let standing = app
        .graphql(
            Some(&ana.token),
            "{ viewer { memberships { niche { slug } reuseCount } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        standing["data"]["viewer"]["memberships"][0]["reuseCount"], 6,
        "{standing}"
    );

    // Bad input changes nothing and says what is wrong.
    let rows = reuse_rows(&app, ReuseKind::Reuse).await.len();
    for (body, what) in [
        (json!({"externalId": "x"}), "entryId is required"),
        (
            json!({"entryId": "abc", "externalId": "x"}),
            "entryId must be",
        ),
        (json!({"entryId": -4, "externalId": "x"}), "entryId must be"),
        (json!({"entryId": entry}), "externalId is required"),
        (
            json!({"entryId": entry, "externalId": 7}),
            "externalId must be a string",
        ),
        (
            json!({"entryId": entry, "externalId": "x".repeat(201)}),
            "longer than 200",
        ),
    ] {
        let response = post_as(&app, "agent-b", &b, REUSE_PATH, &body).await;
        assert_eq!(response.status(), 400, "{body}");
        let refused: Value = response.json().await.expect("JSON");
        assert!(
            refused["error"].as_str().is_some_and(|m| m.contains(what)),
            "{body} → {refused}"
        );
    }
    let (missing, _) = reuse(&app, ("agent-b", &b), json!(entry + 1000), "r-8").await;
    assert_eq!(missing, 404);
    // An agent of another niche may neither reuse nor find the entry.
    open_niche(&app.db, "roofing").await;
    let c = register(&app, "agent-c", &["roofing"], None, WebhookScheme::Chovy).await;
    let (forbidden, refused) = reuse(&app, ("agent-c", &c), json!(entry), "r-9").await;
    assert_eq!(forbidden, 403, "{refused}");
    let search = post_as(
        &app,
        "agent-c",
        &c,
        "/api/v1/internal/knowledge/search",
        &json!({"nicheSlug": "games", "query": "festival release date"}),
    )
    .await;
    assert_eq!(search.status(), 403);
    assert_eq!(reuse_rows(&app, ReuseKind::Reuse).await.len(), rows);

    // The same through MCP's use_knowledge, with the id as a string, as models send it.
    let token = agent_with_token(&app, "games-bot", &["games"]).await;
    let client = McpClient::new(&app, Some(&token));
    client.initialize().await;
    // The budget is spent: the tool refuses as the route does.
    let over = client
        .refused(
            "use_knowledge",
            json!({"entryId": entry.to_string(), "externalId": "m-1"}),
        )
        .await;
    assert_eq!(over["code"], "OVER_BUDGET", "{over}");
    let free = app
        .graphql(
            Some(&root.token),
            BUDGET,
            json!({"slug": "games", "price": 0}),
        )
        .await;
    assert!(free["errors"].is_null(), "{free}");
    let used = client
        .ok(
            "use_knowledge",
            json!({"entryId": entry.to_string(), "externalId": "m-1"}),
        )
        .await;
    assert_eq!(
        (used["entryId"].as_i64(), used["chargedMinor"].as_i64()),
        (Some(entry), Some(0)),
        "{used}"
    );
    let again = client
        .ok(
            "use_knowledge",
            json!({"entryId": entry, "externalId": "m-1"}),
        )
        .await;
    assert_eq!(
        (again["reuseId"].clone(), again["duplicate"].clone()),
        (used["reuseId"].clone(), json!(true))
    );
    let zero = reuse_rows(&app, ReuseKind::Reuse)
        .await
        .into_iter()
        .filter(|r| r.amount_minor == 0)
        .count();
    assert_eq!(zero, 1, "a free reuse is still a ledger row");
    let unknown = client
        .refused(
            "use_knowledge",
            json!({"entryId": entry, "externalId": "m-2", "extra": 1}),
        )
        .await;
    assert_eq!(unknown["code"], "BAD_USER_INPUT", "{unknown}");
    let roofer = agent_with_token(&app, "roof-bot", &["roofing"]).await;
    let other = McpClient::new(&app, Some(&roofer));
    other.initialize().await;
    let forbidden = other
        .refused(
            "use_knowledge",
            json!({"entryId": entry, "externalId": "m-3"}),
        )
        .await;
    assert_eq!(forbidden["code"], "FORBIDDEN", "{forbidden}");
}

async fn a_question_settled_from_knowledge_is_settled_once_and_names_its_entry(app: TestApp) {
    let (ana, root) = games(&app, 40).await;
    let asker = register(&app, "agent-asker", &["games"], None, WebhookScheme::Chovy).await;
    let (entry, _) = entry_asked_by(&app, ("agent-asker", &asker), "q-1", (&ana, &root)).await;
    let again = register(&app, "agent-again", &["games"], None, WebhookScheme::Chovy).await;
    let asked = post_as(
        &app,
        "agent-again",
        &again,
        "/api/v1/internal/expert-questions",
        &question_body("games", "q-2"),
    )
    .await;
    let asked: Value = asked.json().await.expect("JSON");
    let question = asked["question"]["id"].as_i64().expect("an id");
    let from = |entry: Value| json!({"questionId": question.to_string(), "kind": "FROM_KNOWLEDGE", "entryId": entry});

    // What cannot settle it changes nothing.
    let bob = operator(&app.db, "games", "bob").await;
    let no_entry = app
        .answer(
            &bob.token,
            json!({"questionId": question.to_string(), "kind": "FROM_KNOWLEDGE"}),
        )
        .await;
    assert_eq!(error_code(&no_entry), Some("BAD_USER_INPUT"), "{no_entry}");
    let mut with_words = from(json!(entry.to_string()));
    with_words["body"] = json!("my own words");
    let refused = app.answer(&bob.token, with_words).await;
    assert_eq!(error_code(&refused), Some("BAD_USER_INPUT"), "{refused}");
    let mut stray = answer_input(question, "ANSWERED", Some("ea"), None);
    stray["entryId"] = json!(entry.to_string());
    let refused = app.answer(&bob.token, stray).await;
    assert_eq!(error_code(&refused), Some("BAD_USER_INPUT"), "{refused}");
    let missing = app
        .answer(&bob.token, from(json!((entry + 99).to_string())))
        .await;
    assert_eq!(error_code(&missing), Some("NOT_FOUND"), "{missing}");
    let not_an_id = app.answer(&bob.token, from(json!("seven"))).await;
    assert_eq!(
        error_code(&not_an_id),
        Some("BAD_USER_INPUT"),
        "{not_an_id}"
    );

    // Twenty operators point to the entry at once: one settles the question.
    let mut people = Vec::new();
    for i in 0..20 {
        people.push(operator(&app.db, "games", &format!("op{i}")).await);
    }
    let tries = people
        .iter()
        .map(|p| app.answer(&p.token, from(json!(entry.to_string()))));
    let results = futures::future::join_all(tries).await;
    let won: Vec<&Value> = results.iter().filter(|r| r["errors"].is_null()).collect();
    assert_eq!(won.len(), 1, "{results:?}");
    let settled = &won[0]["data"]["answerQuestion"];
    assert_eq!(settled["points"], 1, "{settled}");
    // An answer like any other: a new operator's pointer waits for review.
    assert_eq!(settled["contributionStatus"], "PENDING");
    assert_eq!(settled["question"]["status"], "ANSWERED");
    assert_eq!(settled["answer"]["optionId"], "ea");
    for lost in results.iter().filter(|r| !r["errors"].is_null()) {
        assert_eq!(
            lost["errors"][0]["extensions"]["reason"], "QUESTION_SETTLED",
            "{lost}"
        );
    }
    let pointer = contribution_types::Entity::find()
        .filter(contribution_types::Column::Key.eq("knowledge_pointer"))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the pointer's type");
    let pointers = contribution_events::Entity::find()
        .filter(contribution_events::Column::TypeId.eq(pointer.id))
        .all(&app.db)
        .await
        .expect("read");
    assert_eq!(pointers.len(), 1);
    assert_eq!(pointers[0].points, 1);
    // The author is credited as for a reuse: one reuse row for the answer, 40 of its bounty
    // charged, the rest released.
    let reuses = reuse_rows(&app, ReuseKind::Reuse).await;
    assert_eq!(reuses.len(), 1, "{reuses:?}");
    assert_eq!(
        (
            reuses[0].question_id,
            reuses[0].amount_minor,
            reuses[0].entry_id
        ),
        (Some(question), 40, entry)
    );
    let budget = spend(&app, &root).await;
    assert_eq!(budget["reuseSpendMinor"], 40, "{budget}");
    assert_eq!(
        budget["spentMinor"], 140,
        "the first bounty and the reuse: {budget}"
    );
    assert_eq!(budget["reservedMinor"], 0, "{budget}");

    // The agent's event names the entry, its version and its verdict; so does its lookup.
    let told = app.events_for_agent("expert_answer.created").await;
    let event = told
        .iter()
        .find(|e| e["externalId"] == "q-2")
        .unwrap_or_else(|| panic!("the answer's event: {told:?}"));
    assert_eq!(event["entryId"], entry, "{event}");
    assert_eq!(event["version"], 1);
    assert_eq!(event["verdict"], "review");
    assert_eq!(event["review"], "pending");
    assert_eq!(event["optionLabel"], "Early access");
    let lookup = post_as(
        &app,
        "agent-again",
        &again,
        "/api/v1/internal/expert-questions/lookup",
        &json!({"nicheSlug": "games", "externalIds": ["q-2"]}),
    )
    .await;
    let lookup: Value = lookup.json().await.expect("JSON");
    let knowledge = &lookup["questions"][0]["answer"]["knowledge"];
    assert_eq!(knowledge["entryId"], entry, "{lookup}");
    assert_eq!(knowledge["fromKnowledge"], true);
    assert_eq!(knowledge["status"], "current");

    // A task is not settled from knowledge, and an entry no longer current settles nothing.
    let task = post_as(
        &app,
        "agent-again",
        &again,
        "/api/v1/internal/expert-questions",
        &json!({"payload": {"nicheSlug": "games", "externalId": "t-1", "kind": "task",
            "title": "Check three prices", "question": "Fetch the prices.", "budgetLimitMinor": 50}}),
    )
    .await;
    let task: Value = task.json().await.expect("JSON");
    let task_id = task["question"]["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("{task}"));
    let refused = app
        .answer(
            &bob.token,
            json!({"questionId": task_id.to_string(), "kind": "FROM_KNOWLEDGE", "entryId": entry.to_string()}),
        )
        .await;
    assert_eq!(error_code(&refused), Some("BAD_USER_INPUT"), "{refused}");
    let asked = post_as(
        &app,
        "agent-again",
        &again,
        "/api/v1/internal/expert-questions",
        &question_body("games", "q-3"),
    )
    .await;
    let asked: Value = asked.json().await.expect("JSON");
    let third = asked["question"]["id"].as_i64().expect("an id");
    let ana_answer = contribution_events::Entity::find()
        .filter(contribution_events::Column::UserId.eq(ana.id))
        .one(&app.db)
        .await
        .expect("read")
        .expect("ana's contribution");
    let reversed = app
        .graphql(
            Some(&root.token),
            "mutation($id: ID!) { reverseContribution(id: $id, note: \"wrong date\") { status } }",
            json!({"id": ana_answer.id.to_string()}),
        )
        .await;
    assert!(reversed["errors"].is_null(), "{reversed}");
    let stale = app
        .answer(
            &bob.token,
            json!({"questionId": third.to_string(), "kind": "FROM_KNOWLEDGE", "entryId": entry.to_string()}),
        )
        .await;
    assert_eq!(
        stale["errors"][0]["extensions"]["reason"], "KNOWLEDGE_NOT_CURRENT",
        "{stale}"
    );
}

async fn a_retraction_reaches_everyone_who_relied_on_it_and_gives_the_money_back(app: TestApp) {
    let (ana, root) = games(&app, 200).await;
    // Four agents with real endpoints: the asker, two reusers (one on each signature scheme)
    // and one whose question is settled from the entry.
    let mut endpoints = HashMap::new();
    let mut secrets = HashMap::new();
    for (slug, scheme) in [
        ("agent-asker", WebhookScheme::Chovy),
        ("agent-a", WebhookScheme::Chovy),
        ("agent-b", WebhookScheme::Standard),
        ("agent-p", WebhookScheme::Chovy),
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
        endpoints.insert(
            slug,
            Receiver::start_verifying(addr, &secret, Vec::new()).await,
        );
        secrets.insert(slug, secret);
    }
    let secret = |slug: &str| secrets[slug].clone();
    let (entry, _) = entry_asked_by(
        &app,
        ("agent-asker", &secret("agent-asker")),
        "q-1",
        (&ana, &root),
    )
    .await;
    let (a, _) = reuse(&app, ("agent-a", &secret("agent-a")), json!(entry), "a-1").await;
    let (b, _) = reuse(&app, ("agent-b", &secret("agent-b")), json!(entry), "b-1").await;
    assert_eq!((a, b), (201, 201));
    let asked = post_as(
        &app,
        "agent-p",
        &secret("agent-p"),
        "/api/v1/internal/expert-questions",
        &question_body("games", "p-1"),
    )
    .await;
    let asked: Value = asked.json().await.expect("JSON");
    let pointed = asked["question"]["id"].as_i64().expect("an id");
    let bob = operator(&app.db, "games", "bob").await;
    let settled = app
        .answer(
            &bob.token,
            json!({"questionId": pointed.to_string(), "kind": "FROM_KNOWLEDGE", "entryId": entry.to_string()}),
        )
        .await;
    assert!(settled["errors"].is_null(), "{settled}");
    // bob's pointer is reviewed like an answer; verified, ana's credit from it is owed.
    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;
    // Three reuses paid ana; the money of the first is paid out before the retraction.
    let paid_parts: Vec<i64> = reuse_events(&app)
        .await
        .iter()
        .flat_map(|(_, parts)| {
            parts
                .iter()
                .filter(|p| p.user_id == Some(ana.id))
                .map(|p| p.id)
        })
        .collect();
    assert_eq!(paid_parts.len(), 3, "{paid_parts:?}");
    payouts::set_address(&app.db, &ana.viewer(), "acct-ana", chrono::Utc::now())
        .await
        .expect("address");
    payouts::verify_address(
        &app.db,
        Some(&root.viewer()),
        "ana",
        "acct-ana",
        chrono::Utc::now(),
    )
    .await
    .expect("verified");
    let payout = payouts::schedule(
        &app.db,
        Some(&root.viewer()),
        "ana",
        "USD",
        chrono::Utc::now(),
    )
    .await
    .expect("a payout of what ana is owed");
    payouts::mark_paid(
        &app.db,
        Some(&root.viewer()),
        payout.id,
        "bank-ref-1",
        chrono::Utc::now(),
    )
    .await
    .expect("paid");

    // Reversing ana's verified answer retracts the entry.
    let ana_answer = contribution_events::Entity::find()
        .filter(contribution_events::Column::UserId.eq(ana.id))
        .one(&app.db)
        .await
        .expect("read")
        .expect("ana's contribution");
    let reversed = app
        .graphql(
            Some(&root.token),
            "mutation($id: ID!) { reverseContribution(id: $id, note: \"the 1.0 date counts\") { status } }",
            json!({"id": ana_answer.id.to_string()}),
        )
        .await;
    assert!(reversed["errors"].is_null(), "{reversed}");

    let retracted = |received: &[askloop_tests::receiver::Received]| {
        received
            .iter()
            .filter(|r| r.envelope["type"] == "knowledge.retracted")
            .cloned()
            .collect::<Vec<_>>()
    };
    for endpoint in endpoints.values() {
        endpoint
            .wait_until(WAIT, "knowledge.retracted", |r| !retracted(r).is_empty())
            .await;
    }
    for (slug, endpoint) in &endpoints {
        let got = retracted(&endpoint.received());
        assert_eq!(got.len(), 1, "{slug}: {got:?}");
        let got = &got[0];
        assert!(got.verified, "{slug}: the signature verifies");
        let payload = &got.envelope["payload"];
        assert_eq!(payload["entryId"], entry, "{slug}: {payload}");
        assert_eq!(payload["reason"], "the 1.0 date counts");
        match *slug {
            "agent-asker" => assert_eq!(payload["externalId"], "q-1", "{payload}"),
            "agent-a" => assert_eq!(payload["reuses"], json!(["a-1"]), "{payload}"),
            "agent-b" => {
                assert_eq!(payload["reuses"], json!(["b-1"]), "{payload}");
                assert!(verify_with_library(&secret("agent-b"), got, &got.body).is_ok());
            }
            _ => assert_eq!(payload["questions"][0]["externalId"], "p-1", "{payload}"),
        }
    }

    // Every reuse is given back once: the budget's reuse spending is 0 again, the parts not yet
    // paid are reversed and the paid one is clawed back.
    let refunds = reuse_rows(&app, ReuseKind::Refund).await;
    assert_eq!(refunds.len(), 3, "{refunds:?}");
    let budget = spend(&app, &root).await;
    assert_eq!(budget["reuseSpendMinor"], 0, "{budget}");
    let parts = allocations::Entity::find()
        .filter(allocations::Column::Id.is_in(paid_parts.clone()))
        .all(&app.db)
        .await
        .expect("read");
    let clawbacks = allocations::Entity::find()
        .filter(allocations::Column::ClawsBack.is_in(paid_parts))
        .all(&app.db)
        .await
        .expect("read");
    for part in &parts {
        let clawed = clawbacks.iter().find(|c| c.claws_back == Some(part.id));
        match part.status {
            AllocationStatus::Reversed => assert!(clawed.is_none(), "{part:?}"),
            AllocationStatus::Scheduled | AllocationStatus::Paid => {
                let clawed = clawed.unwrap_or_else(|| panic!("paid out, so clawed back: {part:?}"));
                assert_eq!(clawed.amount_minor, -part.amount_minor);
            }
            other => panic!("a reuse part of a retracted entry is {other:?}"),
        }
    }
    assert_eq!(
        clawbacks.len(),
        3,
        "every reuse part was paid out with ana's payout, so each is clawed back: {clawbacks:?}"
    );
    // A replay of a reuse says what became of it; a new one is refused.
    let (replayed, body) = reuse(&app, ("agent-a", &secret("agent-a")), json!(entry), "a-1").await;
    assert_eq!(replayed, 200);
    assert_eq!(
        (body["status"].as_str(), body["refunded"].as_bool()),
        (Some("retracted"), Some(true)),
        "{body}"
    );
    let (stale, body) = reuse(&app, ("agent-a", &secret("agent-a")), json!(entry), "a-2").await;
    assert_eq!(
        (stale, body["reason"].as_str()),
        (409, Some("KNOWLEDGE_NOT_CURRENT")),
        "{body}"
    );
}
