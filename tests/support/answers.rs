//! Acting as a person through GraphQL, the way every test does it: signing in, answering a
//! question ([`TestApp::answer`] with an [`answer_input`]) and verifying a contribution.

use serde_json::{Value, json};

use crate::TestApp;
use crate::people::PASSWORD;

/// The `answerQuestion` mutation, selecting everything the suite reads of its result.
pub const ANSWER: &str = r#"mutation($input: AnswerInput!) {
  answerQuestion(input: $input) {
    points contributionStatus notice
    answer { kind optionId body answeredBy }
    question { status }
  }
}"#;

/// The sign-in mutation, with the handle as `$h` and the password as `$p`.
pub const LOGIN: &str = "mutation($h: String!, $p: String!) { login(handle: $h, password: $p) { token user { handle } } }";

/// An `AnswerInput` for question `question`: `kind` (`ANSWERED`, `INSUFFICIENT_CONTEXT`, …),
/// the option chosen and the body written, if any.
pub fn answer_input(question: i64, kind: &str, option: Option<&str>, body: Option<&str>) -> Value {
    json!({"questionId": question.to_string(), "kind": kind, "optionId": option, "body": body})
}

/// An answer to question `question` choosing option `ea` (early access) with `body`.
pub fn early_access(question: i64, body: Option<&str>) -> Value {
    answer_input(question, "ANSWERED", Some("ea"), body)
}

impl TestApp {
    /// Answer with `input` (an `AnswerInput`, see [`answer_input`]) as `token`; the whole
    /// GraphQL response, errors included.
    pub async fn answer(&self, token: &str, input: Value) -> Value {
        self.graphql(Some(token), ANSWER, json!({ "input": input }))
            .await
    }

    /// Verify contribution `id` as `token`; the whole GraphQL response, errors included.
    pub async fn verify(&self, token: &str, id: &str) -> Value {
        self.graphql(
            Some(token),
            "mutation($id: ID!) { verifyContribution(id: $id) { status } }",
            json!({ "id": id }),
        )
        .await
    }
}

/// Sign `handle` in through GraphQL with [`PASSWORD`], saying it is `user_agent`; the session
/// token.
pub async fn sign_in(app: &TestApp, handle: &str, user_agent: &str) -> String {
    let body: Value = reqwest::Client::new()
        .post(app.url("/graphql"))
        .header("user-agent", user_agent)
        .json(&json!({"query": LOGIN, "variables": {"h": handle, "p": PASSWORD}}))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    body["data"]["login"]["token"]
        .as_str()
        .unwrap_or_else(|| panic!("signed in: {body}"))
        .to_owned()
}
