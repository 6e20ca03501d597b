//! The one text rule (docs/security.md#text) on every surface, on both stores: a text input
//! holding NUL (or another control character it does not allow) is refused with
//! `BAD_USER_INPUT` (400 on REST) naming the field, and nothing is stored — every table keeps
//! exactly the rows it had, and on GraphQL no resolver runs at all. One table per surface:
//! GraphQL (each mutation that used to store a NUL, or fail on PostgreSQL with `INTERNAL`), the
//! REST member routes, forms and links, and the command line.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use askloop_tests::people::{operator, person};
use askloop_tests::{TestApp, askloop_binary, error_code, on_both_backends};
use sea_orm::{ConnectionTrait, DbBackend, Statement};
use serde_json::{Value, json};

use crate::money::budgeted_niche;
use crate::tasks::a_task;

/// How many rows every table of the app's database holds.
async fn row_counts(app: &TestApp) -> BTreeMap<String, i64> {
    let db = &app.db;
    let backend = db.get_database_backend();
    let tables = match backend {
        DbBackend::Postgres => {
            "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'"
        }
        _ => "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    };
    let mut counts = BTreeMap::new();
    for row in db
        .query_all_raw(Statement::from_string(backend, tables))
        .await
        .expect("the tables")
    {
        let table: String = row.try_get("", "name").expect("a name");
        let count = db
            .query_one_raw(Statement::from_string(
                backend,
                format!("SELECT COUNT(*) AS n FROM \"{table}\""),
            ))
            .await
            .expect("a count")
            .expect("a row");
        counts.insert(table, count.try_get::<i64>("", "n").expect("a number"));
    }
    counts
}

/// Whether `body`'s first error is `BAD_USER_INPUT` naming `field` as a control character.
fn names_the_field(body: &Value, field: &str) -> bool {
    error_code(body) == Some("BAD_USER_INPUT")
        && body["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with(&format!("{field} contains a control character")))
}

async fn every_graphql_text_input_refuses_a_nul_naming_the_field_and_stores_nothing(app: TestApp) {
    // `games` with a budget, its operator ana and a task for her to complete.
    let (ana, task) = a_task(&app).await;
    let root = person(&app.db, "root", true).await;
    let created = app
        .graphql(
            Some(&root.token),
            "mutation { createAgent(input: {slug: \"agent-a\", name: \"Agent A\", niches: [\"games\"]}) { secret } }",
            json!({}),
        )
        .await;
    assert!(created["errors"].is_null(), "{created}");
    let question = app.ask("games", "q-1").await;

    let answer = "mutation($input: AnswerInput!) { answerQuestion(input: $input) { points } }";
    let cases: Vec<(&str, &str, Value, &str)> = vec![
        (
            &root.token,
            "mutation($input: CreateAgentInput!) { createAgent(input: $input) { secret } }",
            json!({"input": {"slug": "agent-b", "name": "Agent\u{0}B", "niches": ["games"]}}),
            "input.name",
        ),
        (
            &root.token,
            "mutation($endpoint: AgentEndpointInput!) { setAgentEndpoint(slug: \"agent-a\", endpoint: $endpoint) { slug } }",
            json!({"endpoint": {"url": "https://agent.example/\u{0}hooks"}}),
            "endpoint.url",
        ),
        (
            &ana.token,
            "mutation($url: String!) { registerOperatorWebhook(nicheSlug: \"games\", url: $url) { webhook { id } } }",
            json!({"url": "https://hooks.example/\u{0}"}),
            "url",
        ),
        (
            &ana.token,
            "mutation($name: String!) { createApiKey(name: $name) { token } }",
            json!({"name": "laptop\u{0}"}),
            "name",
        ),
        (
            &ana.token,
            "mutation($address: String!) { setPayoutAddress(address: $address) { address } }",
            json!({"address": "acct\u{0}1"}),
            "address",
        ),
        (
            &ana.token,
            answer,
            json!({"input": {"questionId": task.to_string(), "kind": "ANSWERED", "body": "done\u{0}", "actualCostMinor": 100}}),
            "input.body",
        ),
        (
            &ana.token,
            answer,
            json!({"input": {"questionId": question.to_string(), "kind": "ANSWERED", "body": "early\u{0}access"}}),
            "input.body",
        ),
        (
            &ana.token,
            "mutation($slug: String!) { setNotificationPreference(nicheSlug: $slug, enabled: true, immediate: [HIGH], digest: DAILY) { enabled } }",
            json!({"slug": "ga\u{0}mes"}),
            "nicheSlug",
        ),
        // Written into the document rather than passed as a variable; another C0 control.
        (
            &ana.token,
            "mutation { createApiKey(name: \"ring\\u0007\") { token } }",
            json!({}),
            "name",
        ),
        (
            &ana.token,
            "mutation($input: AnswerInput!) { answerQuestion(input: $input) { points } }",
            json!({"input": {"questionId": question.to_string(), "kind": "ANSWERED", "optionId": "ea\u{1b}"}}),
            "input.optionId",
        ),
    ];
    for (token, mutation, variables, field) in cases {
        let before = row_counts(&app).await;
        let refused = app.graphql(Some(token), mutation, variables.clone()).await;
        assert!(names_the_field(&refused, field), "{field}: {refused}");
        assert!(refused["data"].is_null(), "no resolver ran: {refused}");
        assert_eq!(
            row_counts(&app).await,
            before,
            "{field}: something was stored"
        );
    }

    // A one-line text refuses a line break too, named by its field.
    let before = row_counts(&app).await;
    let refused = app
        .graphql(
            Some(&ana.token),
            "mutation($name: String!) { createApiKey(name: $name) { token } }",
            json!({"name": "two\nlines"}),
        )
        .await;
    assert!(names_the_field(&refused, "name"), "{refused}");
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("U+000A; it is one line")),
        "{refused}"
    );
    assert_eq!(row_counts(&app).await, before);

    // Tab and line breaks are text where text may run over lines.
    let answered = app
        .graphql(
            Some(&ana.token),
            answer,
            json!({"input": {"questionId": question.to_string(), "kind": "ANSWERED", "body": "early access:\r\n\tthe date on the store page"}}),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
}

/// One field of a form: its name and value.
type Field<'a> = (&'a str, &'a str);

/// A client that shows redirects instead of following them.
fn not_following_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client")
}

async fn every_rest_text_input_refuses_a_nul_naming_the_field_and_stores_nothing(app: TestApp) {
    budgeted_niche(&app, "games", Some(1000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    let question = app.ask("games", "q-1").await;
    let client = not_following_redirects();
    let answer_route = format!("/api/v1/niches/games/questions/{question}/answer");

    // The member routes: 400 with the JSON error naming the field.
    let json_cases: Vec<(reqwest::RequestBuilder, &str)> = vec![
        (
            client
                .post(app.url(&answer_route))
                .json(&json!({"kind": "answered", "body": "early\u{0}access"})),
            "body",
        ),
        (
            client.post(app.url(&answer_route)).json(
                &json!({"kind": "answered", "optionId": "ea", "body": {"nested": ["\u{1}"]}}),
            ),
            "body.nested[0]",
        ),
        (
            client.post(app.url(&format!(
                "/api/v1/niches/ga%00mes/questions/{question}/answer"
            ))),
            "the path",
        ),
        (
            client.get(app.url("/api/v1/niches/games%00/questions")),
            "the path",
        ),
        (
            client.get(app.url("/api/v1/niches/games/questions?status=open&after=x%00y")),
            "query parameter 'after'",
        ),
        (
            client.get(app.url("/api/v1/niches/games/questions?status=op%0Aen")),
            "query parameter 'status'",
        ),
        (
            client.get(app.url("/email/verify?token=abc%00def")),
            "query parameter 'token'",
        ),
        (
            client.post(app.url("/notifications/unsubscribe?token=%7F")),
            "query parameter 'token'",
        ),
    ];
    for (request, field) in json_cases {
        let before = row_counts(&app).await;
        let response = request.bearer_auth(&ana.token).send().await.expect("sent");
        assert_eq!(response.status(), 400, "{field}");
        let body: Value = response.json().await.expect("a JSON error");
        assert_eq!(body["code"], "BAD_USER_INPUT", "{field}: {body}");
        assert!(
            body["error"]
                .as_str()
                .is_some_and(|e| e.starts_with(&format!("{field} contains a control character"))),
            "{field}: {body}"
        );
        assert_eq!(
            row_counts(&app).await,
            before,
            "{field}: something was stored"
        );
    }

    // The plain HTML forms answer with a 303 back to the page, the error naming the field.
    let form_cases: [(&str, &[Field], &str); 2] = [
        (
            "answer",
            &[
                ("kind", "answered"),
                ("body", "early\u{0}access"),
                ("next", "/dashboard/niches/games"),
            ],
            "body",
        ),
        (
            "dismiss",
            &[("reason", "spam\u{0}"), ("next", "/dashboard/niches/games")],
            "reason",
        ),
    ];
    for (action, fields, field) in form_cases {
        let before = row_counts(&app).await;
        let response = client
            .post(app.url(&format!("/dashboard/questions/{question}/{action}")))
            .bearer_auth(&ana.token)
            .form(&fields)
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 303, "{action}");
        let location = response.headers()["location"]
            .to_str()
            .expect("text")
            .to_owned();
        assert!(
            location.starts_with(&format!(
                "/dashboard/niches/games?error={field}+contains+a+control+character"
            )),
            "{action}: {location}"
        );
        assert_eq!(
            row_counts(&app).await,
            before,
            "{action}: something was stored"
        );
    }

    // Tab and line breaks pass, on the same route.
    let answered = client
        .post(app.url(&answer_route))
        .bearer_auth(&ana.token)
        .json(&json!({"kind": "answered", "optionId": "ea", "body": "the store page:\r\n\tearly access"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(answered.status(), 200);
}

/// `askloop <args>` on the app's database, with `stdin` as its input.
fn askloop(app: &TestApp, args: &[&str], stdin: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(askloop_binary())
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &app.database_url)
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("askloop runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("written");
    child.wait_with_output().expect("askloop ends")
}

async fn every_command_line_text_input_refuses_a_control_character_naming_it(app: TestApp) {
    budgeted_niche(&app, "games", Some(1000), 0).await;
    // An argument cannot hold NUL (the operating system ends it there); the others it can.
    let cases: Vec<(Vec<&str>, &[u8], &str)> = vec![
        (
            vec![
                "niche",
                "create",
                "--slug",
                "roofing",
                "--name",
                "Roof\u{1b}[2Jing",
            ],
            b"",
            "--name contains a control character (U+001B",
        ),
        (
            vec!["apikey", "create", "--user", "nobody", "--name", "cli\u{7}"],
            b"",
            "--name contains a control character (U+0007",
        ),
        (
            vec!["agent", "rotate", "agent\u{1}a"],
            b"",
            "<slug> contains a control character (U+0001",
        ),
        (
            vec![
                "user",
                "create",
                "--handle",
                "bea",
                "--email",
                "bea@example.com",
            ],
            b"long enough\x00password\n",
            "the password contains a control character (U+0000",
        ),
    ];
    for (args, stdin, says) in cases {
        let before = row_counts(&app).await;
        let output = askloop(&app, &args, stdin);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(
            row_counts(&app).await,
            before,
            "{args:?}: something was stored"
        );
    }
    // The same command with plain text does what it says.
    let output = askloop(
        &app,
        &["niche", "create", "--slug", "roofing", "--name", "Roofing"],
        b"",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

on_both_backends!(
    every_graphql_text_input_refuses_a_nul_naming_the_field_and_stores_nothing,
    every_rest_text_input_refuses_a_nul_naming_the_field_and_stores_nothing,
    every_command_line_text_input_refuses_a_control_character_naming_it,
);
