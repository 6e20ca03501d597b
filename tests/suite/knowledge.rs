//! Niche knowledge (docs/contract.md#knowledge), on both stores: a verified answer is a current
//! entry, searchable the moment it is verified; a reversed one is retracted (gone from search,
//! still there by id with its status); the reopened question's next verified answer is the next
//! version, naming the one it replaces. The agent's context is never searched. Odd search text
//! answers with results or a 400, never a 500, and an agent searches only the niches it may ask
//! in.

use askloop_tests::answers::answer_input;
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::mcp::{McpClient, agent_with_token};
use askloop_tests::people::{Person, operator, person};
use askloop_tests::{TestApp, error_code, on_both_backends};
use entity::agents::WebhookScheme;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

use crate::agents::{post_as, register};

const SEARCH_PATH: &str = "/api/v1/internal/knowledge/search";

/// A word only the question's context holds.
const CONTEXT_ONLY: &str = "quixotically";

const KNOWLEDGE: &str = r#"query($slug: String!, $search: String, $status: KnowledgeStatus) {
  knowledge(nicheSlug: $slug, search: $search, status: $status, first: 10) {
    edges { node { id version replaces status title optionLabel answer answeredBy verifiedBy verification endedReason score } }
    pageInfo { hasNextPage }
  }
}"#;

const ENTRY: &str = r#"query($id: ID!) {
  knowledgeEntry(id: $id) {
    entry { id status version endedReason }
    versions { id version status replaces }
  }
}"#;

/// Ask `external_id` in `slug` with a context holding [`CONTEXT_ONLY`]; the question's id.
async fn ask(app: &TestApp, slug: &str, external_id: &str, title: &str) -> i64 {
    app.ask_with(question_body(slug, external_id), |payload| {
        payload["title"] = json!(title);
        payload["context"] = json!(format!("The agent read this {CONTEXT_ONLY} somewhere."));
    })
    .await
}

/// Ask `external_id` in `slug` titled `title`, have `expert` answer it with `option` and `words`
/// and `admin` verify it: the question's id, now known.
async fn known(
    app: &TestApp,
    (expert, admin): (&Person, &Person),
    (slug, external_id, title): (&str, &str, &str),
    option: Option<&str>,
    words: &str,
) -> i64 {
    let question = ask(app, slug, external_id, title).await;
    let answered = app
        .answer(
            &expert.token,
            answer_input(question, "ANSWERED", option, Some(words)),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    app.decide_newest_contribution(&admin.token, "verifyContribution", None)
        .await;
    question
}

/// The entries `token` finds in `slug` for `search` of `status` (current when `None`).
async fn found(
    app: &TestApp,
    token: &str,
    slug: &str,
    search: Option<&str>,
    status: Option<&str>,
) -> Vec<Value> {
    let body = app
        .graphql(
            Some(token),
            KNOWLEDGE,
            json!({"slug": slug, "search": search, "status": status}),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    body["data"]["knowledge"]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|edge| edge["node"].clone())
        .collect()
}

on_both_backends!(
    a_verified_answer_is_knowledge_at_once_a_reversal_retracts_it_and_the_next_answer_is_the_next_version,
    odd_searches_answer_or_refuse_and_agents_search_only_their_niches,
    a_question_asked_with_similar_is_stored_and_offered_the_entries_like_it,
    an_export_verifies_and_a_changed_byte_names_its_line,
    paraphrases_find_their_originals_entry_in_the_first_three,
    a_correction_one_member_proposes_and_another_verifies_becomes_the_current_version,
);

async fn a_verified_answer_is_knowledge_at_once_a_reversal_retracts_it_and_the_next_answer_is_the_next_version(
    app: TestApp,
) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    let root = person(&app.db, "root", true).await;
    let question = ask(&app, "games", "q-1", "Which release date counts?").await;

    let answered = app
        .answer(
            &ana.token,
            answer_input(
                question,
                "ANSWERED",
                Some("ea"),
                Some("Count the early-access date: storefronts show it first."),
            ),
        )
        .await;
    assert_eq!(
        answered["data"]["answerQuestion"]["contributionStatus"], "PENDING",
        "{answered}"
    );
    // Pending review, it is nobody's knowledge yet.
    assert!(
        found(&app, &ana.token, "games", Some("storefronts"), None)
            .await
            .is_empty()
    );

    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;
    let hits = found(&app, &bob.token, "games", Some("storefronts"), None).await;
    assert_eq!(hits.len(), 1, "{hits:?}");
    // The niche's word counts took the entry in the same transaction: once in the total, once
    // under each of its words (by rough stem), never under a word of the context.
    let counts: std::collections::HashMap<String, i64> = app
        .db
        .reads()
        .query_all_raw(sea_orm::Statement::from_string(
            app.db.reads().get_database_backend(),
            "SELECT term, entries FROM knowledge_terms",
        ))
        .await
        .expect("read")
        .iter()
        .map(|row| {
            (
                row.try_get::<String>("", "term").expect("term"),
                row.try_get::<i64>("", "entries").expect("entries"),
            )
        })
        .collect();
    assert_eq!(counts.get(""), Some(&1), "{counts:?}");
    assert_eq!(counts.get("storefront"), Some(&1), "{counts:?}");
    assert!(!counts.contains_key(CONTEXT_ONLY), "{counts:?}");
    let first = &hits[0];
    assert_eq!(first["status"], "CURRENT");
    assert_eq!(first["version"], 1);
    assert!(first["replaces"].is_null());
    assert_eq!(first["title"], "Which release date counts?");
    assert_eq!(first["optionLabel"], "Early access");
    assert_eq!(first["answeredBy"], "ana");
    assert_eq!(first["verifiedBy"], "root");
    assert_eq!(first["verification"], "REVIEW");
    assert!(first["score"].as_f64().expect("a score") > 0.0, "{first}");
    // The stemmed form and the option's label find it too; the context never does.
    assert_eq!(
        found(&app, &bob.token, "games", Some("storefront"), None)
            .await
            .len(),
        1
    );
    assert_eq!(
        found(&app, &bob.token, "games", Some("\"early access\""), None)
            .await
            .len(),
        1
    );
    assert!(
        found(&app, &bob.token, "games", Some("storefronts -early"), None)
            .await
            .is_empty()
    );
    assert!(
        found(&app, &bob.token, "games", Some(CONTEXT_ONLY), None)
            .await
            .is_empty()
    );
    // Without a search, the niche's current entries are listed.
    assert_eq!(found(&app, &bob.token, "games", None, None).await.len(), 1);
    let first_id = first["id"].as_str().expect("an id").to_owned();

    // Reversed: retracted, out of every current search, still readable by id with its reason.
    app.decide_newest_contribution(
        &root.token,
        "reverseContribution",
        Some("the 1.0 date counts"),
    )
    .await;
    assert!(
        found(&app, &bob.token, "games", Some("storefronts"), None)
            .await
            .is_empty()
    );
    let retracted = found(
        &app,
        &bob.token,
        "games",
        Some("storefronts"),
        Some("RETRACTED"),
    )
    .await;
    assert_eq!(retracted.len(), 1, "{retracted:?}");
    assert_eq!(retracted[0]["endedReason"], "the 1.0 date counts");
    // The agent that received it hears so once, through the outbox.
    let told = entity::deliveries::Entity::find()
        .filter(entity::deliveries::Column::EventType.eq("knowledge.retracted"))
        .all(&app.db)
        .await
        .expect("read");
    assert_eq!(told.len(), 1, "{told:?}");
    let body: Value = serde_json::from_str(&told[0].body).expect("JSON");
    assert_eq!(body["payload"]["entryId"].to_string(), first_id, "{body}");
    assert_eq!(body["payload"]["externalId"], "q-1");
    assert_eq!(body["payload"]["reason"], "the 1.0 date counts");
    let by_id = app
        .graphql(Some(&bob.token), ENTRY, json!({"id": first_id}))
        .await;
    assert_eq!(
        by_id["data"]["knowledgeEntry"]["entry"]["status"], "RETRACTED",
        "{by_id}"
    );

    // The reopened question's next verified answer is version 2, replacing the retracted one.
    let again = app
        .answer(
            &bob.token,
            answer_input(
                question,
                "ANSWERED",
                Some("full"),
                Some("The 1.0 launch is the date."),
            ),
        )
        .await;
    assert!(again["errors"].is_null(), "{again}");
    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;
    let now = found(&app, &ana.token, "games", Some("launch"), None).await;
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0]["version"], 2);
    assert_eq!(now[0]["replaces"], first_id.as_str());
    assert_eq!(now[0]["answeredBy"], "bob");
    let second_id = now[0]["id"].as_str().expect("an id").to_owned();
    let lines = app
        .graphql(Some(&ana.token), ENTRY, json!({"id": second_id}))
        .await;
    let versions = lines["data"]["knowledgeEntry"]["versions"]
        .as_array()
        .unwrap_or_else(|| panic!("versions: {lines}"));
    let statuses: Vec<(i64, &str)> = versions
        .iter()
        .map(|v| {
            (
                v["version"].as_i64().unwrap_or(0),
                v["status"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(statuses, [(1, "RETRACTED"), (2, "CURRENT")]);

    // Someone outside the niche reads none of it.
    let eve = person(&app.db, "eve", false).await;
    let refused = app
        .graphql(Some(&eve.token), KNOWLEDGE, json!({"slug": "games"}))
        .await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"), "{refused}");
    let hidden = app
        .graphql(Some(&eve.token), ENTRY, json!({"id": second_id}))
        .await;
    assert_eq!(error_code(&hidden), Some("NOT_FOUND"), "{hidden}");
}

async fn odd_searches_answer_or_refuse_and_agents_search_only_their_niches(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let roofer = operator(&app.db, "roofing", "rita").await;
    known(
        &app,
        (&ana, &root),
        ("games", "q-1", "Which release date counts?"),
        Some("ea"),
        "Storefronts show early access.",
    )
    .await;
    known(
        &app,
        (&roofer, &root),
        ("roofing", "r-1", "Flashing for a chimney?"),
        Some("ea"),
        "Step flashing, storefronts aside.",
    )
    .await;

    let long = "storefronts ".repeat(500);
    for odd in [
        "\"",
        "-",
        "(",
        ")",
        "*",
        "NEAR(",
        "a:b",
        "'",
        "\\",
        "or",
        "-storefronts",
        long.as_str(),
    ] {
        let body = app
            .graphql(
                Some(&ana.token),
                KNOWLEDGE,
                json!({"slug": "games", "search": odd}),
            )
            .await;
        let code = error_code(&body);
        assert!(
            code.is_none() || code == Some("BAD_USER_INPUT"),
            "{odd:?}: {body}"
        );
    }
    // A NUL is refused at the edge; 5,000 characters is over the limit.
    for refused in ["store\0fronts", long.as_str()] {
        let body = app
            .graphql(
                Some(&ana.token),
                KNOWLEDGE,
                json!({"slug": "games", "search": refused}),
            )
            .await;
        assert_eq!(error_code(&body), Some("BAD_USER_INPUT"), "{body}");
    }

    // Bad paging and ids are the caller's input, never a fault.
    let page = |tail: &str| {
        format!("{{ knowledge(nicheSlug: \"games\"{tail}) {{ edges {{ cursor }} }} }}")
    };
    let first_question = question_id_of_games(&app).await;
    for query in [
        page(", after: \"nope\""),
        page(", after: \"k99999999\""),
        page(", first: 0"),
        page(", first: 51"),
        "{ knowledgeEntry(id: \"abc\") { entry { id } } }".to_owned(),
        format!(
            "{{ question(id: \"{first_question}\") {{ similarKnowledge(first: 4) {{ id }} }} }}"
        ),
    ] {
        let body = app.graphql(Some(&ana.token), &query, json!({})).await;
        assert_eq!(error_code(&body), Some("BAD_USER_INPUT"), "{query}: {body}");
    }
    let missing = app
        .graphql(
            Some(&ana.token),
            "{ knowledge(nicheSlug: \"nowhere\") { edges { cursor } } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&missing), Some("NOT_FOUND"), "{missing}");

    // A registered agent of games only: it finds games' entry by any word, never roofing's.
    let secret = register(&app, "scout", &["games"], None, WebhookScheme::Chovy).await;
    let search = |niche: &str, query: &str| json!({"nicheSlug": niche, "query": query});
    let games = post_as(
        &app,
        "scout",
        &secret,
        SEARCH_PATH,
        &search("games", "which storefronts chimney"),
    )
    .await;
    assert_eq!(games.status(), 200);
    let games: Value = games.json().await.expect("JSON");
    let results = games["results"].as_array().expect("results");
    assert_eq!(results.len(), 1, "{games}");
    assert_eq!(results[0]["title"], "Which release date counts?");
    assert_eq!(results[0]["version"], 1);
    assert_eq!(results[0]["optionLabel"], "Early access");
    assert!(results[0]["entryId"].as_i64().is_some(), "{games}");
    let context = post_as(
        &app,
        "scout",
        &secret,
        SEARCH_PATH,
        &search("games", CONTEXT_ONLY),
    )
    .await;
    let context: Value = context.json().await.expect("JSON");
    assert_eq!(context["results"], json!([]), "{context}");
    let other = post_as(
        &app,
        "scout",
        &secret,
        SEARCH_PATH,
        &search("roofing", "chimney"),
    )
    .await;
    assert_eq!(other.status(), 403);
    let other: Value = other.json().await.expect("JSON");
    assert_eq!(other["code"], "FORBIDDEN", "{other}");
    for (body, status) in [
        (json!({"nicheSlug": "games"}), 400),
        (
            json!({"nicheSlug": "games", "query": "x", "first": 21}),
            400,
        ),
        (
            json!({"nicheSlug": "games", "query": "x".repeat(1001)}),
            400,
        ),
        (json!({"nicheSlug": "nowhere", "query": "x"}), 404),
        (json!({"nicheSlug": "games", "query": "\" ( - *"}), 200),
    ] {
        let response = post_as(&app, "scout", &secret, SEARCH_PATH, &body).await;
        assert_eq!(response.status().as_u16(), status, "{body}");
    }
}

/// Ask in `slug` with `title` and `question` (context holding [`CONTEXT_ONLY`]) and `similar`;
/// the status and body.
async fn ask_similar(
    app: &TestApp,
    slug: &str,
    id: &str,
    title: &str,
    question: &str,
    similar: Value,
) -> (u16, Value) {
    let mut body = question_body(slug, id);
    body["payload"]["title"] = json!(title);
    body["payload"]["question"] = json!(question);
    body["payload"]["context"] = json!(format!("Only the context says {CONTEXT_ONLY}."));
    body["payload"]["similar"] = similar;
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

async fn a_question_asked_with_similar_is_stored_and_offered_the_entries_like_it(app: TestApp) {
    open_niche(&app.db, "roofing").await;
    let rita = operator(&app.db, "roofing", "rita").await;
    let root = person(&app.db, "root", true).await;
    let (status, first) = ask_similar(
        &app,
        "roofing",
        "r-1",
        "Flat roof leaking after heavy rain",
        "Water comes through the ceiling of a flat roof after heavy rain. What fixes it?",
        json!(true),
    )
    .await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["similar"], json!([]), "nothing is known yet: {first}");
    let question = first["question"]["id"].as_i64().expect("an id");
    let answered = app
        .answer(
            &rita.token,
            answer_input(
                question,
                "ANSWERED",
                Some("ea"),
                Some("Reseal the membrane seams."),
            ),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;

    // A paraphrase finds it, with how much of the question the entry holds.
    let (status, asked) = ask_similar(
        &app,
        "roofing",
        "r-2",
        "Leaks in a flat roof when it rains",
        "My flat roof leaks whenever the rain is heavy.",
        json!(true),
    )
    .await;
    assert_eq!(status, 201, "{asked}");
    let similar = asked["similar"].as_array().expect("similar");
    assert_eq!(similar.len(), 1, "{asked}");
    assert_eq!(similar[0]["title"], "Flat roof leaking after heavy rain");
    assert_eq!(similar[0]["answer"], "Reseal the membrane seams.");
    let likeness = similar[0]["likeness"].as_f64().expect("a likeness");
    assert!((0.3..=1.0).contains(&likeness), "{likeness}");
    // The question pages: the paraphrase is offered its original ("Already answered?"); the
    // original links to its own entry and is never offered itself.
    let pages = |id: i64| {
        app.graphql(
            Some(&rita.token),
            "query($id: ID!) { question(id: $id) { knowledgeEntry { id version status } \
             similarKnowledge { id title } } }",
            json!({"id": id.to_string()}),
        )
    };
    let paraphrase = pages(asked["question"]["id"].as_i64().expect("an id")).await;
    let offered = &paraphrase["data"]["question"]["similarKnowledge"];
    assert_eq!(offered.as_array().map(Vec::len), Some(1), "{paraphrase}");
    assert_eq!(offered[0]["id"], similar[0]["entryId"].to_string());
    assert!(paraphrase["data"]["question"]["knowledgeEntry"].is_null());
    let original = pages(question).await;
    assert_eq!(
        original["data"]["question"]["knowledgeEntry"]["id"].to_string(),
        format!("\"{}\"", similar[0]["entryId"]),
        "{original}"
    );
    assert_eq!(
        original["data"]["question"]["similarKnowledge"],
        json!([]),
        "{original}"
    );
    // Without asking, nothing is looked up; unlike questions and the context's words find
    // nothing.
    let (_, plain) = ask_similar(
        &app,
        "roofing",
        "r-3",
        "Flat roof leaks",
        "Heavy rain.",
        json!(false),
    )
    .await;
    assert!(plain.get("similar").is_none(), "{plain}");
    let (_, unlike) = ask_similar(
        &app,
        "roofing",
        "r-4",
        "Chimney flashing",
        "Which lead code?",
        json!(true),
    )
    .await;
    assert_eq!(unlike["similar"], json!([]), "{unlike}");
    let (_, context) = ask_similar(
        &app,
        "roofing",
        "r-5",
        CONTEXT_ONLY,
        CONTEXT_ONLY,
        json!(true),
    )
    .await;
    assert_eq!(context["similar"], json!([]), "{context}");
    // A `similar` that is not a boolean is refused, and nothing is stored.
    let (status, refused) =
        ask_similar(&app, "roofing", "r-6", "Flat roof", "Rain.", json!("yes")).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["code"], "BAD_USER_INPUT");
    let stored = entity::agent_questions::Entity::find()
        .filter(entity::agent_questions::Column::ExternalId.eq("r-6"))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(stored, 0);

    // The same through MCP: search_knowledge, and ask_expert with checkSimilar.
    let token = agent_with_token(&app, "roofer-bot", &["roofing"]).await;
    let client = McpClient::new(&app, Some(&token));
    client.initialize().await;
    let found = client
        .ok(
            "search_knowledge",
            json!({"niche": "roofing", "query": "membrane seams leaking"}),
        )
        .await;
    assert_eq!(
        found["results"][0]["entryId"].as_i64(),
        similar[0]["entryId"].as_i64(),
        "{found}"
    );
    let asked = client
        .ok(
            "ask_expert",
            json!({"niche": "roofing", "title": "Flat roof leaking in heavy rain",
                   "question": "The flat roof leaks after rain.", "checkSimilar": true}),
        )
        .await;
    assert_eq!(
        asked["similar"][0]["entryId"], similar[0]["entryId"],
        "{asked}"
    );
    let again = client
        .ok(
            "ask_expert",
            json!({"niche": "roofing", "title": "Flat roof leaking in heavy rain",
                   "question": "The flat roof leaks after rain."}),
        )
        .await;
    assert_eq!(
        again["questionId"], asked["questionId"],
        "checkSimilar names no other question"
    );
    assert_eq!(again["duplicate"], true);
    let refused = client
        .refused("search_knowledge", json!({"niche": "games", "query": "x"}))
        .await;
    assert_eq!(refused["code"], "NOT_FOUND", "{refused}");
}

/// `askloop` with `args` on the app's database.
fn askloop(app: &TestApp, args: &[&str]) -> std::process::Output {
    std::process::Command::new(askloop_tests::askloop_binary())
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &app.database_url)
        .env("RUST_LOG", "error")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("askloop runs")
}

async fn an_export_verifies_and_a_changed_byte_names_its_line(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    for (id, words) in [
        ("q-1", "The early-access date."),
        ("q-2", "The store page says so."),
    ] {
        known(
            &app,
            (&ana, &root),
            ("games", id, "Which release date counts?"),
            Some("ea"),
            words,
        )
        .await;
    }
    let dir = std::env::temp_dir().join(format!("askloop-export-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("a folder");
    let file = dir.join("games.jsonl");
    let path = file.to_str().expect("a path");
    let exported = askloop(
        &app,
        &["knowledge", "export", "--niche", "games", "--out", path],
    );
    assert!(exported.status.success(), "{exported:?}");
    let text = std::fs::read_to_string(&file).expect("the export");
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON lines"))
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["answer"], "The early-access date.");
    assert_eq!(lines[0]["answeredBy"], "ana");
    assert_eq!(lines[0]["verifiedBy"], "root");
    assert_eq!(lines[0]["optionLabel"], "Early access");
    assert_eq!(lines[0]["versions"][0]["status"], "current");
    assert!(
        lines[0].get("context").is_none(),
        "the context is not exported"
    );
    assert_eq!(lines[1]["prevHash"], lines[0]["hash"]);
    let head = lines[1]["hash"].as_str().expect("a hash").to_owned();
    let summary = String::from_utf8_lossy(&exported.stdout).to_string();
    assert!(summary.contains(&head), "{summary}");

    let verified = askloop(&app, &["knowledge", "verify", path]);
    assert!(verified.status.success(), "{verified:?}");
    assert!(String::from_utf8_lossy(&verified.stdout).contains(&head));

    // The admin download is the same file; only admins may have it.
    let download = |token: Option<&str>| {
        let mut request = app
            .client
            .get(app.url("/api/v1/niches/games/knowledge/export"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    let downloaded = download(Some(&root.token)).await.expect("sent");
    assert_eq!(downloaded.status(), 200);
    assert_eq!(downloaded.headers()["content-type"], "application/x-ndjson");
    assert_eq!(downloaded.headers()["x-askloop-chain-head"], head.as_str());
    assert_eq!(downloaded.text().await.expect("a body"), text);
    assert_eq!(
        download(Some(&ana.token)).await.expect("sent").status(),
        403
    );
    assert_eq!(download(None).await.expect("sent").status(), 401);

    // One byte changed in the first line: verify names it and fails.
    let changed = text.replacen("early-access", "early-accesS", 1);
    std::fs::write(&file, changed).expect("written");
    let refused = askloop(&app, &["knowledge", "verify", path]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert!(said.contains("line 1"), "{said}");
    // An unknown niche is an error, and leaves no file behind.
    let nowhere = dir.join("nowhere.jsonl");
    let missing = askloop(
        &app,
        &[
            "knowledge",
            "export",
            "--niche",
            "nowhere",
            "--out",
            nowhere.to_str().expect("a path"),
        ],
    );
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    assert!(!nowhere.exists());
    assert!(!dir.join("nowhere.jsonl.partial").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The retrieval fixture: questions of two niches with their answers, and how another agent
/// might ask each again.
const RECALL: &str = include_str!("../fixtures/knowledge_recall.json");

/// The share of the fixture's paraphrases whose agent search (any content word, best first)
/// puts their original's entry among the first three; printed for docs/benchmarks.md, and held
/// to the goal of 0.8.
async fn paraphrases_find_their_originals_entry_in_the_first_three(app: TestApp) {
    let fixture: Value = serde_json::from_str(RECALL).expect("the fixture is JSON");
    let root = person(&app.db, "root", true).await;
    let niches = fixture["niches"].as_object().expect("niches");
    let (mut asked, mut found) = (0_u32, 0_u32);
    for (slug, items) in niches {
        open_niche(&app.db, slug).await;
        let expert = operator(&app.db, slug, &format!("expert-{slug}")).await;
        let items = items.as_array().expect("items");
        for (i, item) in items.iter().enumerate() {
            let mut body = question_body(slug, &format!("recall-{i}"));
            body["payload"]["title"] = item["title"].clone();
            body["payload"]["question"] = item["question"].clone();
            body["payload"]
                .as_object_mut()
                .expect("a payload")
                .remove("options");
            let response = app
                .post_signed("/api/v1/internal/expert-questions", &body.to_string())
                .await;
            assert_eq!(response.status(), 201);
            let stored: Value = response.json().await.expect("JSON");
            let question = stored["question"]["id"].as_i64().expect("an id");
            let words = item["answer"].as_str().expect("an answer");
            let answered = app
                .answer(
                    &expert.token,
                    answer_input(question, "ANSWERED", None, Some(words)),
                )
                .await;
            assert!(answered["errors"].is_null(), "{answered}");
            // From the 26th on, the niche trusts its expert: verified on arrival, knowledge at
            // once, with nobody to review it.
            if answered["data"]["answerQuestion"]["contributionStatus"] == "PENDING" {
                app.decide_newest_contribution(&root.token, "verifyContribution", None)
                    .await;
            }
        }
        for item in items {
            let query = json!({"nicheSlug": slug, "query": item["paraphrase"], "first": 3});
            let response = app.post_signed(SEARCH_PATH, &query.to_string()).await;
            assert_eq!(response.status(), 200);
            let results: Value = response.json().await.expect("JSON");
            asked += 1;
            let hit = results["results"]
                .as_array()
                .expect("results")
                .iter()
                .any(|r| r["title"] == item["title"]);
            if hit {
                found += 1;
            } else {
                eprintln!("missed in {slug}: {}", item["paraphrase"]);
            }
            same_whether_walked_or_fetched(&app, slug, item["paraphrase"].as_str().unwrap_or(""))
                .await;
        }
    }
    let trusted = entity::knowledge_entries::Entity::find()
        .filter(
            entity::knowledge_entries::Column::Verification
                .eq(entity::knowledge_entries::Verification::Trust),
        )
        .count(&app.db)
        .await
        .expect("count");
    assert!(trusted > 0, "answers verified on arrival are knowledge too");
    let recall = f64::from(found) / f64::from(asked);
    eprintln!(
        "recall@3 on {:?}: {found} of {asked} = {recall:.3}",
        app.db.get_database_backend()
    );
    assert!(asked >= 50, "the fixture holds at least 50 pairs");
    assert!(
        recall >= 0.8,
        "recall@3 {recall:.3} is under the goal of 0.8"
    );
}

/// The search statement finds the same entries in the same order whether PostgreSQL walks the
/// niche's entries newest first or fetches what the GIN index finds (`walk`; on SQLite one
/// statement either way).
async fn same_whether_walked_or_fetched(app: &TestApp, slug: &str, text: &str) {
    use askloop::service::knowledge::{Looking, search_statement};
    use sea_orm::ConnectionTrait;
    let niche = entity::niches::Entity::find()
        .filter(entity::niches::Column::Slug.eq(slug))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the niche");
    let Some(looking) = Looking::like(text) else {
        return;
    };
    let mut found = Vec::new();
    for walk in [false, true] {
        let statement = search_statement(
            app.db.get_database_backend(),
            niche.id,
            &looking,
            entity::knowledge_entries::KnowledgeStatus::Current,
            walk,
            (5, 0),
        );
        let rows = app
            .db
            .query_all_raw(statement)
            .await
            .expect("the search runs");
        let ids: Vec<i64> = rows
            .iter()
            .map(|row| row.try_get::<i64>("", "id").expect("an id"))
            .collect();
        found.push(ids);
    }
    assert!(!found[0].is_empty(), "{text:?} finds entries");
    assert_eq!(found[0], found[1], "{text:?}: fetched, then walked");
}

const PROPOSE: &str = r#"mutation($input: KnowledgeCorrectionInput!) {
  proposeKnowledgeCorrection(input: $input) { id entryId contributionId status optionId answer note }
}"#;

async fn a_correction_one_member_proposes_and_another_verifies_becomes_the_current_version(
    app: TestApp,
) {
    use askloop_tests::people::member;
    use entity::niche_members::{MemberRole, MemberStatus};
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let rex = person(&app.db, "rex", true).await;
    let olga = person(&app.db, "olga", false).await;
    member(
        &app.db,
        "games",
        &olga,
        MemberRole::Observer,
        MemberStatus::Active,
    )
    .await;
    let eve = person(&app.db, "eve", false).await;
    known(
        &app,
        (&ana, &root),
        ("games", "q-1", "Which release date counts?"),
        Some("ea"),
        "Storefronts show the early-access date.",
    )
    .await;
    let v1 = found(&app, &ana.token, "games", None, None).await[0]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let propose = |token: &str, input: Value| {
        let token = token.to_owned();
        let app = &app;
        async move {
            app.graphql(Some(&token), PROPOSE, json!({ "input": input }))
                .await
        }
    };

    // What is refused changes nothing.
    for (token, input, code) in [
        (&ana.token, json!({"entryId": v1}), "BAD_USER_INPUT"),
        (
            &ana.token,
            json!({"entryId": v1, "optionId": "nope"}),
            "BAD_USER_INPUT",
        ),
        (
            &ana.token,
            json!({"entryId": v1, "answer": "x".repeat(8001)}),
            "BAD_USER_INPUT",
        ),
        (
            &ana.token,
            json!({"entryId": v1, "optionId": "ea", "answer": "Storefronts show the early-access date."}),
            "BAD_USER_INPUT",
        ),
        (
            &olga.token,
            json!({"entryId": v1, "answer": "Observers only read."}),
            "FORBIDDEN",
        ),
        (
            &eve.token,
            json!({"entryId": v1, "answer": "Not a member."}),
            "NOT_FOUND",
        ),
        (
            &ana.token,
            json!({"entryId": "999999", "answer": "No such entry."}),
            "NOT_FOUND",
        ),
        (
            &ana.token,
            json!({"entryId": "abc", "answer": "Not an id."}),
            "BAD_USER_INPUT",
        ),
        (
            &ana.token,
            json!({"entryId": v1, "answer": "Fine.", "note": "n".repeat(2001)}),
            "BAD_USER_INPUT",
        ),
    ] {
        let refused = propose(token, input.clone()).await;
        assert_eq!(error_code(&refused), Some(code), "{input}: {refused}");
    }
    let corrections = entity::knowledge_corrections::Entity::find()
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(corrections, 0);

    // Root proposes; Root may not verify it, Rex does; it becomes version 2.
    let proposed = propose(
        &root.token,
        json!({"entryId": v1, "optionId": "full", "answer": "The 1.0 date is the launch.",
               "note": "Steam counts the 1.0 date"}),
    )
    .await;
    assert!(proposed["errors"].is_null(), "{proposed}");
    let correction = &proposed["data"]["proposeKnowledgeCorrection"];
    assert_eq!(correction["status"], "pending");
    let contribution = correction["contributionId"].as_str().expect("an id");
    // Nothing changed yet.
    assert!(
        found(&app, &ana.token, "games", Some("launch"), None)
            .await
            .is_empty()
    );
    let own = app.verify(&root.token, contribution).await;
    assert_eq!(error_code(&own), Some("FORBIDDEN"), "{own}");
    assert_eq!(
        own["errors"][0]["extensions"]["reason"], "SELF_REVIEW",
        "{own}"
    );
    let verified = app.verify(&rex.token, contribution).await;
    assert!(verified["errors"].is_null(), "{verified}");

    let now = found(&app, &ana.token, "games", Some("launch"), None).await;
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0]["version"], 2);
    assert_eq!(now[0]["replaces"], v1.as_str());
    assert_eq!(now[0]["optionLabel"], "1.0");
    assert_eq!(now[0]["answeredBy"], "root");
    assert_eq!(now[0]["verifiedBy"], "rex");
    assert!(
        found(&app, &ana.token, "games", Some("storefronts"), None)
            .await
            .is_empty()
    );
    let old = found(
        &app,
        &ana.token,
        "games",
        Some("storefronts"),
        Some("SUPERSEDED"),
    )
    .await;
    assert_eq!(old.len(), 1, "{old:?}");
    assert_eq!(old[0]["id"], v1.as_str());
    // The agent that received version 1 hears it was superseded, once.
    let told = entity::deliveries::Entity::find()
        .filter(entity::deliveries::Column::EventType.eq("knowledge.superseded"))
        .all(&app.db)
        .await
        .expect("read");
    assert_eq!(told.len(), 1, "{told:?}");
    let body: Value = serde_json::from_str(&told[0].body).expect("JSON");
    assert_eq!(body["payload"]["entryId"].to_string(), v1);
    assert_eq!(
        body["payload"]["newEntryId"].to_string(),
        now[0]["id"].as_str().expect("an id")
    );
    // A correction of the superseded version is refused: only the current one is corrected.
    let stale = propose(&ana.token, json!({"entryId": v1, "answer": "Late."})).await;
    assert_eq!(error_code(&stale), Some("CONFLICT"), "{stale}");
    assert_eq!(
        stale["errors"][0]["extensions"]["reason"],
        "KNOWLEDGE_NOT_CURRENT"
    );
}

/// The id of the first question asked in the test's database.
async fn question_id_of_games(app: &TestApp) -> i64 {
    use sea_orm::QueryOrder;
    entity::agent_questions::Entity::find()
        .order_by_asc(entity::agent_questions::Column::Id)
        .one(&app.db)
        .await
        .expect("read")
        .expect("a question")
        .id
}
