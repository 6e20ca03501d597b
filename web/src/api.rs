//! The GraphQL client: typed operations posted to `/graphql` on the same origin.

use gloo_net::http::Request;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A failed call: the server's `extensions.code` when it sent one, and its message.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// `BAD_USER_INPUT`, `UNAUTHENTICATED`, … or `NETWORK`.
    pub code: String,
    /// For people.
    pub message: String,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Matched on the code, never on the server's wording.
        match self.code.as_str() {
            "NETWORK" => write!(f, "askloop could not be reached ({})", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ApiError {}

#[derive(Deserialize)]
struct GraphqlResponse<T> {
    data: Option<T>,
    #[serde(default)]
    errors: Vec<GraphqlError>,
}

#[derive(Deserialize)]
struct GraphqlError {
    message: String,
    #[serde(default)]
    extensions: Value,
}

fn network(err: impl std::fmt::Display) -> ApiError {
    ApiError {
        code: "NETWORK".into(),
        message: err.to_string(),
    }
}

/// Run `query` with `variables` and decode its `data`.
async fn run<T: DeserializeOwned>(query: &str, variables: Value) -> Result<T, ApiError> {
    let response = Request::post("/graphql")
        .json(&json!({ "query": query, "variables": variables }))
        .map_err(network)?
        .send()
        .await
        .map_err(network)?;
    let body: GraphqlResponse<T> = response.json().await.map_err(network)?;
    if let Some(first) = body.errors.into_iter().next() {
        let code = first.extensions["code"]
            .as_str()
            .unwrap_or("INTERNAL")
            .to_owned();
        return Err(ApiError {
            code,
            message: first.message,
        });
    }
    body.data.ok_or_else(|| network("the server sent no data"))
}

/// A niche as the dashboard shows it.
#[derive(Debug, Clone, Deserialize)]
pub struct Niche {
    /// Unique slug.
    pub slug: String,
    /// Display name.
    pub name: String,
    /// Lifecycle status.
    pub status: String,
}

#[derive(Deserialize)]
struct NichesData {
    niches: Vec<Niche>,
}

/// The niches the caller can see.
pub async fn niches() -> Result<Vec<Niche>, ApiError> {
    run::<NichesData>("query Niches { niches { slug name status } }", json!({}))
        .await
        .map(|data| data.niches)
}
