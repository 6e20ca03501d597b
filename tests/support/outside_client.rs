//! An official client of another project (the MCP TypeScript SDK, the A2A Python SDK) driven
//! against askloop: its script prints one line per step, `<step> <json>`; some steps say that it
//! now waits for a person, who acts here meanwhile; at the end its exit code says whether every
//! check of its own passed, and the test reads the steps it printed.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

use crate::TestApp;
use crate::answers::early_access;

/// An operator sends a question back for research.
const SEND_BACK: &str = "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: NEEDS_RESEARCH}) { notice } }";

/// What a person does when the script prints a step: the steps' names.
pub struct PersonActs<'a> {
    /// Steps after which the operator sends the question (`questionId` in the step's JSON) back
    /// for research.
    pub send_back_on: &'a [&'a str],
    /// Steps after which the operator answers it: option `ea`, "Ship early access.".
    pub answer_on: &'a [&'a str],
}

/// The lines a script printed.
pub struct Steps(Vec<String>);

impl Steps {
    /// The JSON of step `name` (its first line), or a failure that shows every line printed.
    pub fn step(&self, name: &str) -> Value {
        self.0
            .iter()
            .find_map(|line| line.strip_prefix(&format!("{name} ")))
            .and_then(|json| serde_json::from_str(json).ok())
            .unwrap_or_else(|| panic!("no step {name} in {:#?}", self.0))
    }
}

/// Run `child` (spawned with piped stdout and stderr) to its end within `limit`, the operator
/// whose session is `operator_token` acting as `acts` says; fail unless it exits 0.
pub async fn drive(
    app: &TestApp,
    operator_token: &str,
    mut child: Child,
    acts: PersonActs<'_>,
    limit: Duration,
) -> Steps {
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut printed = Vec::new();
    let driven = async {
        while let Some(line) = lines.next_line().await.expect("a line") {
            printed.push(line.clone());
            let Some((name, rest)) = line.split_once(' ') else {
                continue;
            };
            let acting = |names: &[&str]| names.contains(&name);
            if !acting(acts.send_back_on) && !acting(acts.answer_on) {
                continue;
            }
            let id = serde_json::from_str::<Value>(rest).expect("JSON")["questionId"]
                .as_i64()
                .expect("a question id");
            let done = if acting(acts.send_back_on) {
                app.graphql(
                    Some(operator_token),
                    SEND_BACK,
                    json!({"id": id.to_string()}),
                )
                .await
            } else {
                app.answer(operator_token, early_access(id, Some("Ship early access.")))
                    .await
            };
            assert!(done["errors"].is_null(), "{name}: {done}");
        }
    };
    tokio::time::timeout(limit, driven)
        .await
        .unwrap_or_else(|_| panic!("the script did not finish; it printed {printed:#?}"));
    let output = child.wait_with_output().await.expect("the script finishes");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "the client's checks failed: {stderr}\n{printed:#?}"
    );
    Steps(printed)
}
