//! One table: anonymous, a signed-in non-member, an observer, a suspended member, an active
//! operator and an admin × every query, mutation and REST route of the operator loop, with the
//! exact outcome of each cell. Questions never reach anyone who is not an active member of their
//! niche or an admin. Each test checks one surface's rows over the whole cast and reports every
//! cell that differs, not only the first.

use askloop_tests::fixtures::open_niche;
use askloop_tests::people::{Person, member, person};
use askloop_tests::{Backend, TestApp, error_code};
use entity::niche_members::{MemberRole, MemberStatus};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Anonymous,
    NonMember,
    Observer,
    Suspended,
    Operator,
    Admin,
}

const EVERYONE: [Who; 6] = [
    Who::Anonymous,
    Who::NonMember,
    Who::Observer,
    Who::Suspended,
    Who::Operator,
    Who::Admin,
];

/// What a cell must produce.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// GraphQL data without errors.
    Data,
    /// A GraphQL error with this `extensions.code`.
    Code(&'static str),
    /// An HTTP status.
    Status(u16),
    /// A 303 whose Location contains this text.
    Redirect(&'static str),
}

use Outcome::{Code, Data, Redirect, Status};

struct Cast {
    non_member: Person,
    observer: Person,
    suspended: Person,
    operator: Person,
    admin: Person,
}

impl Cast {
    fn token(&self, who: Who) -> Option<&str> {
        match who {
            Who::Anonymous => None,
            Who::NonMember => Some(&self.non_member.token),
            Who::Observer => Some(&self.observer.token),
            Who::Suspended => Some(&self.suspended.token),
            Who::Operator => Some(&self.operator.token),
            Who::Admin => Some(&self.admin.token),
        }
    }
}

/// Who gets what, in cast order.
type Row = Vec<(Who, Outcome)>;

/// The expected row for: anonymous, non-member, observer, suspended, operator, admin.
fn row(outcomes: [Outcome; 6]) -> Row {
    EVERYONE.into_iter().zip(outcomes).collect()
}

fn graphql_outcome(body: &Value) -> Outcome {
    match error_code(body) {
        Some(code) => Code(match code {
            "UNAUTHENTICATED" => "UNAUTHENTICATED",
            "FORBIDDEN" => "FORBIDDEN",
            "NOT_FOUND" => "NOT_FOUND",
            "CONFLICT" => "CONFLICT",
            "BAD_USER_INPUT" => "BAD_USER_INPUT",
            _ => "OTHER",
        }),
        None if body["errors"].is_null() && !body["data"].is_null() => Data,
        None => Code("OTHER"),
    }
}

async fn rest(
    app: &TestApp,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: Option<Value>,
    form: Option<&[(&str, &str)]>,
) -> reqwest::Response {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let mut request = match method {
        "GET" => client.get(app.url(path)),
        _ => client.post(app.url(path)),
    };
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    if let Some(form) = form {
        request = request.form(form);
    }
    request.send().await.expect("sent")
}

fn redirect_outcome(response: &reqwest::Response) -> Outcome {
    let location = response
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if response.status() != 303 {
        return Status(response.status().as_u16());
    }
    for marker in ["/login?", "notice=", "error="] {
        if location.contains(marker) {
            return Redirect(match marker {
                "/login?" => "/login?",
                "notice=" => "notice=",
                _ => "error=",
            });
        }
    }
    Status(303)
}

/// The cast in place in `games`, with one question they all may try to read.
struct Table {
    app: TestApp,
    cast: Cast,
    question: i64,
    failures: Vec<String>,
}

async fn the_cast_and_a_question() -> Table {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let cast = Cast {
        non_member: person(&app.db, "stranger", false).await,
        observer: person(&app.db, "watcher", false).await,
        suspended: person(&app.db, "benched", false).await,
        operator: person(&app.db, "ana", false).await,
        admin: person(&app.db, "root", true).await,
    };
    // Only for the admin's addMember cell, so that no one in the cast changes role mid-table.
    person(&app.db, "newcomer", false).await;
    member(
        &app.db,
        "games",
        &cast.observer,
        MemberRole::Observer,
        MemberStatus::Active,
    )
    .await;
    member(
        &app.db,
        "games",
        &cast.suspended,
        MemberRole::Operator,
        MemberStatus::Suspended,
    )
    .await;
    member(
        &app.db,
        "games",
        &cast.operator,
        MemberRole::Operator,
        MemberStatus::Active,
    )
    .await;
    let question = app.ask("games", "shared").await;
    Table {
        app,
        cast,
        question,
        failures: Vec::new(),
    }
}

/// Whether `who` must never see a question's title or research.
fn kept_from_questions(who: Who) -> bool {
    matches!(who, Who::Anonymous | Who::NonMember | Who::Suspended)
}

impl Table {
    /// Run each GraphQL operation as everyone in its row and note every cell that differs (and
    /// any question text shown to someone who may not see it).
    async fn graphql_rows(&mut self, rows: &[(&str, String, Row)]) {
        for (name, query, expected) in rows {
            for (who, outcome) in expected {
                let query = query.replace("WHO", &format!("{who:?}").to_lowercase());
                let body = self
                    .app
                    .graphql(self.cast.token(*who), &query, json!({}))
                    .await;
                let got = graphql_outcome(&body);
                if got != *outcome {
                    self.failures.push(format!(
                        "{name} as {who:?}: expected {outcome:?}, got {got:?}: {body}"
                    ));
                }
                if kept_from_questions(*who) && (name.starts_with("niche") || *name == "question") {
                    let text = body.to_string();
                    if text.contains("Steam lists") || text.contains("Which date?") {
                        self.failures
                            .push(format!("{name} leaked the question to {who:?}: {body}"));
                    }
                }
            }
        }
    }

    /// Acting changes a question, so each cell acts on its own, as everyone in the row.
    async fn acting_row(&mut self, name: &str, mutation: &str, expected: Row) {
        for (who, outcome) in expected {
            let id = self.app.ask("games", &format!("{name}-{who:?}")).await;
            let body = self
                .app
                .graphql(
                    self.cast.token(who),
                    mutation,
                    json!({"id": id.to_string()}),
                )
                .await;
            let got = graphql_outcome(&body);
            if got != outcome {
                self.failures.push(format!(
                    "{name} as {who:?}: expected {outcome:?}, got {got:?}: {body}"
                ));
            }
        }
    }

    /// A form post to `/dashboard/questions/<own question>/<action>` as everyone in the row.
    async fn form_row(&mut self, action: &str, form: &[(&str, &str)], expected: Row) {
        for (who, outcome) in expected {
            let id = self
                .app
                .ask("games", &format!("form-{action}-{who:?}"))
                .await;
            let response = rest(
                &self.app,
                self.cast.token(who),
                "POST",
                &format!("/dashboard/questions/{id}/{action}"),
                None,
                Some(form),
            )
            .await;
            let got = redirect_outcome(&response);
            if got != outcome {
                self.failures.push(format!(
                    "form {action} as {who:?}: expected {outcome:?}, got {got:?}"
                ));
            }
        }
    }

    /// Fail with every cell that differed.
    fn assert_every_cell_matches(self) {
        assert!(
            self.failures.is_empty(),
            "{} cells differ:\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn graphql_reads_show_questions_only_to_active_members_and_admins() {
    let mut table = the_cast_and_a_question().await;
    let q = table.question.to_string();
    let reads: Vec<(&str, String, Row)> = vec![
        (
            "viewer",
            "{ viewer { user { handle } } }".into(),
            row([Data, Data, Data, Data, Data, Data]),
        ),
        (
            "niche.questions",
            "{ niche(slug: \"games\") { questions { edges { node { id title context } } } } }"
                .into(),
            row([
                Code("UNAUTHENTICATED"),
                Code("FORBIDDEN"),
                Data,
                Code("FORBIDDEN"),
                Data,
                Data,
            ]),
        ),
        (
            "question",
            format!(
                "{{ question(id: \"{q}\") {{ title context answers {{ kind }} timeline {{ action }} }} }}"
            ),
            row([
                Code("UNAUTHENTICATED"),
                Code("FORBIDDEN"),
                Data,
                Code("FORBIDDEN"),
                Data,
                Data,
            ]),
        ),
        (
            "awaitingMe",
            "{ awaitingMe { edges { node { id } } } }".into(),
            row([Code("UNAUTHENTICATED"), Data, Data, Data, Data, Data]),
        ),
        (
            "myContributions",
            "{ myContributions { id } }".into(),
            row([Code("UNAUTHENTICATED"), Data, Data, Data, Data, Data]),
        ),
        (
            "tiers",
            "{ tiers { name } }".into(),
            row([Data, Data, Data, Data, Data, Data]),
        ),
        (
            "niches",
            "{ niches { slug } }".into(),
            row([Data, Data, Data, Data, Data, Data]),
        ),
        (
            "reviewQueue",
            "{ reviewQueue { id } }".into(),
            row([
                Code("UNAUTHENTICATED"),
                Code("FORBIDDEN"),
                Code("FORBIDDEN"),
                Code("FORBIDDEN"),
                Code("FORBIDDEN"),
                Data,
            ]),
        ),
    ];
    table.graphql_rows(&reads).await;
    table.assert_every_cell_matches();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn graphql_admin_mutations_are_for_admins_and_api_keys_for_anyone_signed_in() {
    let mut table = the_cast_and_a_question().await;
    let mutations: Vec<(&str, String, Row)> = vec![
        ("createApiKey", "mutation { createApiKey(name: \"ci\") { token } }".into(),
            row([Code("UNAUTHENTICATED"), Data, Data, Data, Data, Data])),
        ("createNiche", "mutation { createNiche(input: {slug: \"roofing-WHO\", name: \"Roofing\"}) { slug } }".into(),
            row([Code("UNAUTHENTICATED"), Code("FORBIDDEN"), Code("FORBIDDEN"), Code("FORBIDDEN"), Code("FORBIDDEN"), Data])),
        ("updateNiche", "mutation { updateNiche(slug: \"games\", input: {description: \"Indie games\"}) { slug } }".into(),
            row([Code("UNAUTHENTICATED"), Code("FORBIDDEN"), Code("FORBIDDEN"), Code("FORBIDDEN"), Code("FORBIDDEN"), Data])),
        ("addMember", "mutation { addMember(nicheSlug: \"games\", handle: \"newcomer\", role: OBSERVER) { status } }".into(),
            row([Code("UNAUTHENTICATED"), Code("FORBIDDEN"), Code("FORBIDDEN"), Code("FORBIDDEN"), Code("FORBIDDEN"), Data])),
        ("suspendMember", "mutation { suspendMember(nicheSlug: \"games\", handle: \"benched\") { status } }".into(),
            row([Code("UNAUTHENTICATED"), Code("FORBIDDEN"), Code("FORBIDDEN"), Code("FORBIDDEN"), Code("FORBIDDEN"), Data])),
        ("adjustContribution", "mutation { adjustContribution(nicheSlug: \"games\", handle: \"ana\", points: 1, note: \"n\") { id } }".into(),
            row([Code("UNAUTHENTICATED"), Code("FORBIDDEN"), Code("FORBIDDEN"), Code("FORBIDDEN"), Code("FORBIDDEN"), Data])),
        ("verifyContribution", "mutation { verifyContribution(id: \"999999\") { id } }".into(),
            row([Code("UNAUTHENTICATED"), Code("FORBIDDEN"), Code("FORBIDDEN"), Code("FORBIDDEN"), Code("FORBIDDEN"), Code("NOT_FOUND")])),
    ];
    table.graphql_rows(&mutations).await;
    table.assert_every_cell_matches();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn only_active_operators_answer_and_operators_or_admins_dismiss_over_graphql() {
    let mut table = the_cast_and_a_question().await;
    table
        .acting_row(
            "answerQuestion",
            "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: INSUFFICIENT_CONTEXT}) { notice } }",
            row([
                Code("UNAUTHENTICATED"),
                Code("FORBIDDEN"),
                Code("FORBIDDEN"),
                Code("FORBIDDEN"),
                Data,
                Code("FORBIDDEN"),
            ]),
        )
        .await;
    table
        .acting_row(
            "dismissQuestion",
            "mutation($id: ID!) { dismissQuestion(id: $id) { status } }",
            row([
                Code("UNAUTHENTICATED"),
                Code("FORBIDDEN"),
                Code("FORBIDDEN"),
                Code("FORBIDDEN"),
                Data,
                Data,
            ]),
        )
        .await;
    table.assert_every_cell_matches();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_rest_question_list_is_only_for_active_members_and_admins() {
    let mut table = the_cast_and_a_question().await;
    let list = row([
        Status(401),
        Status(403),
        Status(200),
        Status(403),
        Status(200),
        Status(200),
    ]);
    for (who, outcome) in list {
        let response = rest(
            &table.app,
            table.cast.token(who),
            "GET",
            "/api/v1/niches/games/questions",
            None,
            None,
        )
        .await;
        let got = Status(response.status().as_u16());
        let text = response.text().await.unwrap_or_default();
        if got != outcome {
            table.failures.push(format!(
                "GET questions as {who:?}: expected {outcome:?}, got {got:?}: {text}"
            ));
        }
        if kept_from_questions(who) && text.contains("Steam lists") {
            table
                .failures
                .push(format!("GET questions leaked to {who:?}"));
        }
    }
    table.assert_every_cell_matches();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_rest_answer_route_is_only_for_active_operators() {
    let mut table = the_cast_and_a_question().await;
    let rest_answer = row([
        Status(401),
        Status(403),
        Status(403),
        Status(403),
        Status(200),
        Status(403),
    ]);
    for (who, outcome) in rest_answer {
        let id = table.app.ask("games", &format!("rest-{who:?}")).await;
        let response = rest(
            &table.app,
            table.cast.token(who),
            "POST",
            &format!("/api/v1/niches/games/questions/{id}/answer"),
            Some(json!({"kind": "insufficient_context"})),
            None,
        )
        .await;
        let got = Status(response.status().as_u16());
        if got != outcome {
            table.failures.push(format!(
                "POST answer as {who:?}: expected {outcome:?}, got {got:?}"
            ));
        }
    }
    table.assert_every_cell_matches();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_answer_form_sends_strangers_to_login_and_refuses_all_but_active_operators() {
    let mut table = the_cast_and_a_question().await;
    let form = [
        ("kind", "answered"),
        ("option_id", "ea"),
        ("next", "/dashboard/niches/games/questions"),
    ];
    let expected = row([
        Redirect("/login?"),
        Redirect("error="),
        Redirect("error="),
        Redirect("error="),
        Redirect("notice="),
        Redirect("error="),
    ]);
    table.form_row("answer", &form, expected).await;
    table.assert_every_cell_matches();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_dismiss_form_sends_strangers_to_login_and_lets_operators_and_admins_dismiss() {
    let mut table = the_cast_and_a_question().await;
    let form = [("next", "/dashboard/niches/games/questions")];
    let expected = row([
        Redirect("/login?"),
        Redirect("error="),
        Redirect("error="),
        Redirect("error="),
        Redirect("notice="),
        Redirect("notice="),
    ]);
    table.form_row("dismiss", &form, expected).await;
    table.assert_every_cell_matches();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn anyone_may_log_out_signed_in_or_not() {
    let mut table = the_cast_and_a_question().await;
    table
        .graphql_rows(&[(
            "logout",
            "mutation { logout }".into(),
            row([Data, Data, Data, Data, Data, Data]),
        )])
        .await;
    table.assert_every_cell_matches();
}
