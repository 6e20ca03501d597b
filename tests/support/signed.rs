//! Requests signed as the agent signs them: the `X-Chovy-Signature` header made with the test
//! [`SECRET`], signed POSTs (or ones with a chosen signature, or none), and asking a question
//! through the signed intake route.

use askloop::domain::signing::{SIGNATURE_HEADER, sign};

use crate::{SECRET, TestApp, fixtures};

impl TestApp {
    /// A signature header for `body`, made now with the test secret.
    pub fn signature(&self, body: &str) -> String {
        sign(SECRET, body.as_bytes(), chrono::Utc::now().timestamp())
    }

    /// POST `body` to `path` signed with the test secret.
    pub async fn post_signed(&self, path: &str, body: &str) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, self.signature(body))
            .body(body.to_owned())
            .send()
            .await
            .expect("the request is sent")
    }

    /// POST `body` to `path` with a chosen signature header (or none).
    pub async fn post_with_signature(
        &self,
        path: &str,
        body: &str,
        signature: Option<&str>,
    ) -> reqwest::Response {
        let mut request = self
            .client
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(signature) = signature {
            request = request.header(SIGNATURE_HEADER, signature);
        }
        request.send().await.expect("the request is sent")
    }

    /// Ask a question through the signed intake route; returns its id.
    pub async fn ask(&self, slug: &str, external_id: &str) -> i64 {
        self.ask_with(fixtures::question_body(slug, external_id), |_| {})
            .await
    }

    /// Ask `body` (an intake body, e.g. [`fixtures::question_body`]) after `change` has altered
    /// its payload, through the signed intake route, which must take it; returns its id.
    pub async fn ask_with(
        &self,
        mut body: serde_json::Value,
        change: impl FnOnce(&mut serde_json::Value),
    ) -> i64 {
        change(&mut body["payload"]);
        let response = self
            .post_signed("/api/v1/internal/expert-questions", &body.to_string())
            .await;
        assert!(
            response.status().is_success(),
            "intake: {}",
            response.status()
        );
        let body: serde_json::Value = response.json().await.expect("JSON");
        body["question"]["id"].as_i64().expect("a question id")
    }
}
