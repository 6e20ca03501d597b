//! GraphQL over HTTP as a test sends it: [`TestApp::graphql`] runs one operation with an
//! optional bearer, and [`error_code`] reads the `extensions.code` every askloop error carries.

use serde_json::Value;

use crate::TestApp;

impl TestApp {
    /// Apply `mutation` (`verifyContribution`, `rejectContribution`, `reverseContribution`) with
    /// `note` to the newest contribution, as `token`; the response must carry no error.
    pub async fn decide_newest_contribution(
        &self,
        token: &str,
        mutation: &str,
        note: Option<&str>,
    ) {
        use sea_orm::{EntityTrait, QueryOrder};
        let id = entity::contribution_events::Entity::find()
            .order_by_desc(entity::contribution_events::Column::Id)
            .one(&self.db)
            .await
            .expect("query")
            .expect("a contribution")
            .id;
        let body = self
            .graphql(
                Some(token),
                &format!(
                    "mutation($id: ID!, $note: String) {{ {mutation}(id: $id, note: $note) {{ status }} }}"
                ),
                serde_json::json!({"id": id.to_string(), "note": note}),
            )
            .await;
        assert!(body["errors"].is_null(), "{body}");
    }

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
