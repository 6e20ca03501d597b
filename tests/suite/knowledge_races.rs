//! Knowledge under races, hostile words and several answers (docs/contract.md#knowledge), on
//! both stores: a reuse racing its entry's retraction is either refused or given back; two
//! admins verifying one question's answers at once both succeed; a word of thousands of letters
//! is no search term and breaks nothing; a several-answer question becomes knowledge only once
//! its places are filled; and settling a question from knowledge is an answer like any other —
//! reviewed unless its author is trusted, never trusted when it points at their own entry, and
//! refused when the entry chose an option the question does not offer.

use askloop_tests::answers::answer_input;
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::people::{Person, operator, person};
use askloop_tests::{TestApp, error_code, on_both_backends};
use entity::agents::WebhookScheme;
use entity::allocations::{self, AllocationStatus};
use entity::contribution_events::{self, ContributionStatus};
use entity::knowledge_entries::{self, KnowledgeStatus};
use entity::knowledge_reuses::{self, ReuseKind};
use entity::revenue_events;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};

use crate::agents::{post_as, register};
use crate::weighing::{ask_several, seed_history};

const REUSE_PATH: &str = "/api/v1/internal/knowledge/reuse";

const BUDGET: &str = r#"mutation($slug: String!) {
  setNicheBudget(nicheSlug: $slug, monthlyBudgetMinor: 1000000, bountyMinor: 100, maxBountyMinor: 500, reusePriceMinor: 100) {
    reusePriceMinor
  }
}"#;

const SPEND: &str = r#"query($slug: String!) {
  budget(nicheSlug: $slug) { reuseSpendMinor }
}"#;

const SEARCH: &str = r#"query($slug: String!, $search: String) {
  knowledge(nicheSlug: $slug, search: $search) { edges { node { id optionId } } }
}"#;

const QUESTION_ENTRY: &str = r#"query($id: ID!) {
  question(id: $id) { status knowledgeEntry { id optionId } similarKnowledge { id } }
}"#;

const PROPOSE: &str = r#"mutation($input: KnowledgeCorrectionInput!) {
  proposeKnowledgeCorrection(input: $input) { id }
}"#;

/// Question `question` as `who` reads it: its status, knowledge entry and similar knowledge.
async fn question_as(app: &TestApp, who: &Person, question: i64) -> Value {
    let read = app
        .graphql(
            Some(&who.token),
            QUESTION_ENTRY,
            json!({"id": question.to_string()}),
        )
        .await;
    assert!(read["errors"].is_null(), "{read}");
    read
}

/// The newest entry of question `question`, if any.
async fn entry_of(app: &TestApp, question: i64) -> Option<knowledge_entries::Model> {
    knowledge_entries::Entity::find()
        .filter(knowledge_entries::Column::QuestionId.eq(question))
        .order_by_desc(knowledge_entries::Column::Version)
        .one(&app.db)
        .await
        .expect("read")
}

/// The contribution of `who`'s answer to `question`.
async fn contribution_of(app: &TestApp, question: i64, who: &Person) -> i64 {
    let answer = entity::agent_answers::Entity::find()
        .filter(entity::agent_answers::Column::QuestionId.eq(question))
        .filter(entity::agent_answers::Column::UserId.eq(who.id))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the answer");
    answer.contribution_event_id.expect("a contribution")
}

/// Asserts that no response of `bodies` is an internal error.
fn none_internal<'a>(bodies: impl IntoIterator<Item = &'a Value>) {
    for body in bodies {
        assert_ne!(error_code(body), Some("INTERNAL"), "{body}");
        assert_ne!(body["code"], "INTERNAL", "{body}");
    }
}

async fn a_reuse_racing_a_retraction_is_refused_or_given_back(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let set = app
        .graphql(Some(&root.token), BUDGET, json!({"slug": "games"}))
        .await;
    assert!(set["errors"].is_null(), "{set}");
    let mut agents = Vec::new();
    for i in 0..12 {
        let slug = format!("reuser-{i}");
        let secret = register(&app, &slug, &["games"], None, WebhookScheme::Chovy).await;
        agents.push((slug, secret));
    }
    const ROUNDS: usize = 20;
    for round in 0..ROUNDS {
        let question = app.ask("games", &format!("round-{round}")).await;
        let answered = app
            .answer(
                &ana.token,
                answer_input(question, "ANSWERED", Some("ea"), Some("Early access.")),
            )
            .await;
        assert!(answered["errors"].is_null(), "{answered}");
        let contribution = contribution_of(&app, question, &ana).await;
        let verified = app.verify(&root.token, &contribution.to_string()).await;
        assert!(verified["errors"].is_null(), "{verified}");
        let entry = entry_of(&app, question).await.expect("an entry").id;

        // Twelve agents reuse it while the admin reverses the answer it came from.
        let reuses = agents.iter().map(|(slug, secret)| {
            let app = &app;
            async move {
                let response = post_as(
                    app,
                    slug,
                    secret,
                    REUSE_PATH,
                    &json!({"entryId": entry, "externalId": format!("r-{round}-{slug}")}),
                )
                .await;
                let status = response.status().as_u16();
                (status, response.json::<Value>().await.expect("JSON"))
            }
        });
        let reverse = app.graphql(
            Some(&root.token),
            "mutation($id: ID!) { reverseContribution(id: $id, note: \"wrong\") { status } }",
            json!({"id": contribution.to_string()}),
        );
        let (reused, reversed) = tokio::join!(futures::future::join_all(reuses), reverse);
        assert!(reversed["errors"].is_null(), "{reversed}");
        for (status, body) in &reused {
            assert!(
                matches!(status, 201 | 409),
                "a reuse is booked or refused as not current: {status} {body}"
            );
            if *status == 409 {
                assert_eq!(body["reason"], "KNOWLEDGE_NOT_CURRENT", "{body}");
            }
        }
        none_internal(reused.iter().map(|(_, body)| body));
        assert_eq!(
            entry_of(&app, question).await.expect("the entry").status,
            KnowledgeStatus::Retracted
        );

        // Every reuse booked is given back, whichever side of the retraction it fell on.
        let booked = knowledge_reuses::Entity::find()
            .filter(knowledge_reuses::Column::EntryId.eq(entry))
            .all(&app.db)
            .await
            .expect("read");
        let (kept, refunds): (Vec<_>, Vec<_>) =
            booked.iter().partition(|r| r.kind == ReuseKind::Reuse);
        for reuse in &kept {
            assert!(
                refunds.iter().any(|r| r.refunds == Some(reuse.id)),
                "round {round}: reuse {} of a retracted entry was not given back",
                reuse.id
            );
        }
        let spend = app
            .graphql(Some(&root.token), SPEND, json!({"slug": "games"}))
            .await;
        assert_eq!(
            spend["data"]["budget"]["reuseSpendMinor"], 0,
            "round {round}: {spend}"
        );
    }
    // Nothing paid for any reuse stands: every allocation of every reuse's revenue is reversed.
    let events = revenue_events::Entity::find()
        .filter(revenue_events::Column::SourceType.eq("knowledge_reuse"))
        .all(&app.db)
        .await
        .expect("read");
    for event in events {
        let parts = allocations::Entity::find()
            .filter(allocations::Column::RevenueEventId.eq(event.id))
            .all(&app.db)
            .await
            .expect("read");
        let standing: i64 = parts
            .iter()
            .filter(|a| a.status != AllocationStatus::Reversed)
            .map(|a| a.amount_minor)
            .sum();
        assert_eq!(standing, 0, "reuse revenue {} still pays", event.id);
    }
}

async fn two_admins_verifying_one_questions_answers_at_once_both_succeed(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    let root = person(&app.db, "root", true).await;
    let rita = person(&app.db, "rita", true).await;
    for round in 0..6 {
        let question = ask_several(&app, &format!("pair-{round}"), 2, 0.5).await;
        for who in [&ana, &bob] {
            let answered = app
                .answer(
                    &who.token,
                    answer_input(question, "ANSWERED", Some("ea"), Some("Early access.")),
                )
                .await;
            assert!(answered["errors"].is_null(), "{answered}");
        }
        let (a, b) = (
            contribution_of(&app, question, &ana).await.to_string(),
            contribution_of(&app, question, &bob).await.to_string(),
        );
        let (first, second) =
            tokio::join!(app.verify(&root.token, &a), app.verify(&rita.token, &b));
        assert!(first["errors"].is_null(), "round {round}: {first}");
        assert!(second["errors"].is_null(), "round {round}: {second}");
        let entries = knowledge_entries::Entity::find()
            .filter(knowledge_entries::Column::QuestionId.eq(question))
            .all(&app.db)
            .await
            .expect("read");
        assert_eq!(entries.len(), 1, "round {round}: one piece of knowledge");
        assert_eq!(entries[0].status, KnowledgeStatus::Current);
    }
}

/// A word of `len` letters and digits that does not compress (a pasted token, a hash): one
/// letter repeated would compress to a few bytes and fit any index.
fn scrambled(len: usize) -> String {
    let alphabet: Vec<char> = ('a'..='z').chain('0'..='9').collect();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            alphabet[(state % alphabet.len() as u64) as usize]
        })
        .collect()
}

async fn a_word_of_thousands_of_letters_is_no_term_and_breaks_nothing(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    let root = person(&app.db, "root", true).await;
    let long = scrambled(3_001);
    let mut body = question_body("games", "long-word");
    body["payload"]["question"] = json!(format!("Early access or 1.0? {long} roofing"));
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    assert_eq!(response.status(), 201);
    let stored: Value = response.json().await.expect("JSON");
    let question = stored["question"]["id"].as_i64().expect("an id");
    let answered = app
        .answer(
            &ana.token,
            answer_input(
                question,
                "ANSWERED",
                Some("ea"),
                Some(&format!("Early access. {long}")),
            ),
        )
        .await;
    none_internal([&answered]);
    assert!(answered["errors"].is_null(), "{answered}");
    let contribution = contribution_of(&app, question, &ana).await;
    let verified = app.verify(&root.token, &contribution.to_string()).await;
    none_internal([&verified]);
    assert!(verified["errors"].is_null(), "{verified}");
    let entry = entry_of(&app, question).await.expect("an entry");

    // A correction with the same word, and its verification.
    let proposed = app
        .graphql(
            Some(&bob.token),
            PROPOSE,
            json!({"input": {"entryId": entry.id.to_string(), "optionId": "full",
                "answer": format!("1.0 after all. {long}"), "note": scrambled(1_999)}}),
        )
        .await;
    none_internal([&proposed]);
    assert!(proposed["errors"].is_null(), "{proposed}");
    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;
    let current = entry_of(&app, question).await.expect("the new version");
    assert_eq!(current.version, 2);
    assert_eq!(current.option_id.as_deref(), Some("full"));

    // Searching for the word finds nothing and fails nowhere; the entry's real words find it.
    let searched = app
        .graphql(
            Some(&ana.token),
            SEARCH,
            json!({"slug": "games", "search": scrambled(999)}),
        )
        .await;
    none_internal([&searched]);
    assert_eq!(
        searched["data"]["knowledge"]["edges"],
        json!([]),
        "{searched}"
    );
    let searched = app
        .graphql(
            Some(&ana.token),
            SEARCH,
            json!({"slug": "games", "search": format!("roofing {}", scrambled(900))}),
        )
        .await;
    assert_eq!(
        searched["data"]["knowledge"]["edges"][0]["node"]["id"],
        current.id.to_string(),
        "{searched}"
    );
    // An agent's similar-at-intake with the word asks and offers without failing.
    let mut again = question_body("games", "long-word-again");
    again["payload"]["question"] = json!(format!("{long} roofing"));
    again["payload"]["similar"] = json!(true);
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &again.to_string())
        .await;
    assert_eq!(response.status(), 201);
}

/// A question taking two answers, its first answered by ana, whom the niche trusts.
async fn half_answered_by_a_trusted_member(app: &TestApp) -> (Person, Person, i64) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    seed_history(app, "games", &ana, &[(None, true); 40]).await;
    let question = ask_several(app, "several", 2, 0.5).await;
    let answered = app
        .answer(
            &ana.token,
            answer_input(question, "ANSWERED", Some("ea"), Some("Early access.")),
        )
        .await;
    assert_eq!(
        answered["data"]["answerQuestion"]["contributionStatus"], "VERIFIED",
        "{answered}"
    );
    (ana, bob, question)
}

async fn a_several_answer_question_is_knowledge_only_once_its_places_are_filled(app: TestApp) {
    let (_ana, bob, question) = half_answered_by_a_trusted_member(&app).await;
    // bob has not answered: nothing anywhere tells him ana's choice.
    assert!(entry_of(&app, question).await.is_none());
    let read = question_as(&app, &bob, question).await;
    assert!(
        read["data"]["question"]["knowledgeEntry"].is_null(),
        "{read}"
    );
    let searched = app
        .graphql(
            Some(&bob.token),
            SEARCH,
            json!({"slug": "games", "search": "date"}),
        )
        .await;
    assert_eq!(
        searched["data"]["knowledge"]["edges"],
        json!([]),
        "{searched}"
    );
    let similar = app.ask("games", "alike").await;
    let read = question_as(&app, &bob, similar).await;
    assert_eq!(
        read["data"]["question"]["similarKnowledge"],
        json!([]),
        "{read}"
    );
    let found = app
        .post_signed(
            "/api/v1/internal/knowledge/search",
            &json!({"nicheSlug": "games", "query": "Which date"}).to_string(),
        )
        .await;
    assert_eq!(found.status(), 200);
    let found: Value = found.json().await.expect("JSON");
    assert_eq!(found["results"], json!([]), "{found}");

    // bob answers, the places are filled: the consensus is the question's knowledge.
    let answered = app
        .answer(
            &bob.token,
            answer_input(question, "ANSWERED", Some("ea"), Some("Early access too.")),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let entry = entry_of(&app, question)
        .await
        .expect("written at the conclusion");
    assert_eq!(entry.option_id.as_deref(), Some("ea"));
    assert_eq!(entry.status, KnowledgeStatus::Current);
    let read = question_as(&app, &bob, question).await;
    assert_eq!(
        read["data"]["question"]["knowledgeEntry"]["id"],
        entry.id.to_string(),
        "{read}"
    );
    // The entry's audit row names every answer it came from.
    let written = entity::audit_log::Entity::find()
        .filter(entity::audit_log::Column::Action.eq("knowledge.written"))
        .filter(entity::audit_log::Column::SubjectId.eq(entry.id.to_string()))
        .one(&app.db)
        .await
        .expect("read")
        .expect("its audit row");
    assert_eq!(
        written.detail["answers"].as_array().map(Vec::len),
        Some(2),
        "{}",
        written.detail
    );
}

async fn an_untrusted_answer_verified_while_places_are_open_is_not_yet_knowledge(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    let root = person(&app.db, "root", true).await;
    let question = ask_several(&app, "several", 2, 0.5).await;
    let answered = app
        .answer(
            &ana.token,
            answer_input(question, "ANSWERED", Some("full"), Some("1.0.")),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let verified = app
        .verify(
            &root.token,
            &contribution_of(&app, question, &ana).await.to_string(),
        )
        .await;
    assert!(verified["errors"].is_null(), "{verified}");
    assert!(entry_of(&app, question).await.is_none());
    let read = question_as(&app, &bob, question).await;
    assert!(
        read["data"]["question"]["knowledgeEntry"].is_null(),
        "{read}"
    );
    // The last place is filled: ana's verified answer agrees with the consensus.
    let answered = app
        .answer(
            &bob.token,
            answer_input(question, "ANSWERED", Some("full"), Some("1.0 too.")),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let entry = entry_of(&app, question).await.expect("written now");
    assert_eq!(entry.answered_by, ana.id);
    assert_eq!(entry.verified_by, Some(root.id));
}

async fn a_several_answer_question_that_disagrees_is_no_knowledge(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    let root = person(&app.db, "root", true).await;
    let question = ask_several(&app, "split", 2, 1.0).await;
    for (who, option) in [(&ana, "ea"), (&bob, "full")] {
        let answered = app
            .answer(
                &who.token,
                answer_input(question, "ANSWERED", Some(option), Some("Mine.")),
            )
            .await;
        assert!(answered["errors"].is_null(), "{answered}");
    }
    // Concluded in disagreement; verifying either answer still writes nothing.
    for who in [&ana, &bob] {
        let verified = app
            .verify(
                &root.token,
                &contribution_of(&app, question, who).await.to_string(),
            )
            .await;
        assert!(verified["errors"].is_null(), "{verified}");
    }
    assert!(entry_of(&app, question).await.is_none());
    let read = question_as(&app, &bob, question).await;
    assert!(
        read["data"]["question"]["knowledgeEntry"].is_null(),
        "{read}"
    );
}

/// An entry in games written by `author`, answering a question with options ea / full by ea.
async fn an_entry_by(app: &TestApp, author: &Person, root: &Person, external_id: &str) -> i64 {
    let question = app.ask("games", external_id).await;
    let answered = app
        .answer(
            &author.token,
            answer_input(question, "ANSWERED", Some("ea"), Some("Early access.")),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let contribution = contribution_of(app, question, author).await;
    let verified = app.verify(&root.token, &contribution.to_string()).await;
    assert!(verified["errors"].is_null(), "{verified}");
    entry_of(app, question).await.expect("an entry").id
}

fn from_knowledge(question: i64, entry: i64) -> Value {
    json!({"questionId": question.to_string(), "kind": "FROM_KNOWLEDGE", "entryId": entry.to_string()})
}

async fn settling_from_knowledge_is_reviewed_unless_trusted_and_never_for_ones_own_entry(
    app: TestApp,
) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    let root = person(&app.db, "root", true).await;
    let set = app
        .graphql(Some(&root.token), BUDGET, json!({"slug": "games"}))
        .await;
    assert!(set["errors"].is_null(), "{set}");
    let entry = an_entry_by(&app, &ana, &root, "source").await;

    // bob is new: his pointer waits for review, and ana's credit from it is held.
    let waiting = app.ask("games", "pointed-by-bob").await;
    let settled = app.answer(&bob.token, from_knowledge(waiting, entry)).await;
    assert_eq!(
        settled["data"]["answerQuestion"]["contributionStatus"], "PENDING",
        "{settled}"
    );
    let reuse = knowledge_reuses::Entity::find()
        .filter(knowledge_reuses::Column::QuestionId.eq(waiting))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the pointer's reuse");
    let held = |status| {
        let app = &app;
        let event = reuse.revenue_event_id.expect("a paid reuse");
        async move {
            allocations::Entity::find()
                .filter(allocations::Column::RevenueEventId.eq(event))
                .filter(allocations::Column::UserId.eq(ana.id))
                .filter(allocations::Column::Status.eq(status))
                .all(&app.db)
                .await
                .expect("read")
                .len()
        }
    };
    assert_eq!(held(AllocationStatus::Held).await, 1, "held until reviewed");
    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;
    assert_eq!(
        held(AllocationStatus::Accrued).await,
        1,
        "owed once verified"
    );

    // ana is trusted, but a pointer at her own entry is still reviewed.
    seed_history(&app, "games", &ana, &[(None, true); 40]).await;
    let own = app.ask("games", "pointed-by-ana").await;
    let settled = app.answer(&ana.token, from_knowledge(own, entry)).await;
    assert_eq!(
        settled["data"]["answerQuestion"]["contributionStatus"], "PENDING",
        "{settled}"
    );
    let pointer = contribution_events::Entity::find()
        .order_by_desc(contribution_events::Column::Id)
        .one(&app.db)
        .await
        .expect("read")
        .expect("the pointer");
    assert_eq!(pointer.status, ContributionStatus::Pending);

    // A trusted operator pointing at someone else's entry is verified on arrival.
    let other = an_entry_by(&app, &bob, &root, "bobs-source").await;
    let trusted = app.ask("games", "pointed-by-trusted-ana").await;
    let settled = app.answer(&ana.token, from_knowledge(trusted, other)).await;
    assert_eq!(
        settled["data"]["answerQuestion"]["contributionStatus"], "VERIFIED",
        "{settled}"
    );
}

async fn an_entry_whose_choice_the_question_does_not_offer_cannot_settle_it(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    let root = person(&app.db, "root", true).await;
    let entry = an_entry_by(&app, &ana, &root, "source").await;
    // Options of another question altogether: "Early access" is not among them.
    let mut body = question_body("games", "other-options");
    body["payload"]["options"] =
        json!([{"id": "tin", "label": "Tin"}, {"id": "slate", "label": "Slate"}]);
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    assert_eq!(response.status(), 201);
    let stored: Value = response.json().await.expect("JSON");
    let question = stored["question"]["id"].as_i64().expect("an id");
    let refused = app
        .answer(&bob.token, from_knowledge(question, entry))
        .await;
    assert_eq!(error_code(&refused), Some("BAD_USER_INPUT"), "{refused}");
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Early access")),
        "{refused}"
    );
    let read = question_as(&app, &bob, question).await;
    assert_eq!(read["data"]["question"]["status"], "OPEN", "{read}");
    // The same label under another id (and another case) is the same choice.
    let mut body = question_body("games", "same-label");
    body["payload"]["options"] =
        json!([{"id": "early", "label": "early ACCESS"}, {"id": "v1", "label": "1.0"}]);
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    let stored: Value = response.json().await.expect("JSON");
    let question = stored["question"]["id"].as_i64().expect("an id");
    let settled = app
        .answer(&bob.token, from_knowledge(question, entry))
        .await;
    assert!(settled["errors"].is_null(), "{settled}");
    assert_eq!(
        settled["data"]["answerQuestion"]["answer"]["optionId"], "early",
        "the agent hears its own option's id: {settled}"
    );
}

on_both_backends!(
    a_reuse_racing_a_retraction_is_refused_or_given_back,
    two_admins_verifying_one_questions_answers_at_once_both_succeed,
    a_word_of_thousands_of_letters_is_no_term_and_breaks_nothing,
    a_several_answer_question_is_knowledge_only_once_its_places_are_filled,
    an_untrusted_answer_verified_while_places_are_open_is_not_yet_knowledge,
    a_several_answer_question_that_disagrees_is_no_knowledge,
    settling_from_knowledge_is_reviewed_unless_trusted_and_never_for_ones_own_entry,
    an_entry_whose_choice_the_question_does_not_offer_cannot_settle_it,
);
