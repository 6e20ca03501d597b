//! GraphQL over HTTP as a test sends it: [`TestApp::graphql`] runs one operation with an
//! optional bearer, and [`error_code`] reads the `extensions.code` every askloop error carries.

use serde_json::Value;

use crate::TestApp;

impl TestApp {
    /// Run a GraphQL operation as `token` (a bearer), returning the whole response body.
    pub async fn graphql(&self, token: Option<&str>, query: &str, variables: Value) -> Value {
        let mut request = self
            .client
            .post(self.url("/graphql"))
            .json(&serde_json::json!({ "query": query, "variables": variables }));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("a JSON body")
    }
}

/// The GraphQL error code of a response, if it failed.
pub fn error_code(body: &Value) -> Option<&str> {
    body["errors"][0]["extensions"]["code"].as_str()
}
