//! Adopted subscriptions (docs/architecture.md#adopted-subscriptions): a websocket subscription
//! to a queue whose selection is [shared](super::shared) is started by the library as any other
//! (parsed, validated, the subscriber's rights checked), then handed over to the socket, which
//! serves it from then on without the library's per-subscription state (its execution stream
//! and its copy of the document, about half of what an idle subscriber costs).
//!
//! - **Tag.** The socket writes a tag into every `subscribe` message's `extensions`, naming the
//!   operation's id under a random per-process nonce ([`tagged`]); [`Tagging`] moves it into
//!   the request's data. A client cannot forge one, and any it sends is removed.
//! - **Hand-over.** A queue resolver that finds a tag, the connection's [`Adoptions`] and a
//!   shareable single-field operation gives its stream of changes to the connection and returns
//!   an empty one. The library then completes the operation; the socket swallows that
//!   `complete` and serves the handed-over stream under the same id.
//! - **Serving.** A change whose payload is already resolved for its (event, class, selection)
//!   is sent as that shared JSON text. Any other — the first of its key, an error, a payload
//!   that raised errors — is resolved by a one-shot run of the subscription's own document
//!   through the library, with the connection's data, for that one change ([`OneShot`]): the
//!   same fields, errors, codes and error door as a subscription the library serves.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextPrepareRequest,
};
use async_graphql::http::WebSocketProtocols;
use async_graphql::parser::types::Selection;
use async_graphql::{Context, Data, Name, Request, Response, ServerError, ServerResult, Value};
use async_graphql::{Variables, futures_util::task};
use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};
use prometheus_client::metrics::gauge::Gauge;

use super::AskloopSchema;
use super::queue_change::kind_of;
use super::shared::{Class, Resolved, SharedPayloads, Sharing};
use crate::error::ServiceError;
use crate::service::subscriptions::Change;

/// The key of the tag in a `subscribe` message's `extensions`.
pub const TAG_KEY: &str = "askloopOperation";

/// The most subscription templates [`Tagging`] keeps; when full, it starts over.
const TEMPLATES: usize = 256;

/// This process's nonce for tags: random, never sent to anyone.
fn nonce() -> &'static str {
    static NONCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NONCE.get_or_init(|| hex::encode(rand::random::<[u8; 16]>()))
}

/// A `subscribe` (or legacy `start`) message from the peer with this socket's tag written into
/// its payload's `extensions` (replacing any the peer wrote), or `None` when it has no string id
/// and object payload to tag: the library then answers it as it is.
pub fn tagged(text: &str) -> Option<String> {
    let mut message: serde_json::Value = serde_json::from_str(text).ok()?;
    let id = message.get("id")?.as_str()?.to_owned();
    let payload = message.get_mut("payload")?.as_object_mut()?;
    let extensions = payload
        .entry("extensions")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    if extensions.is_null() {
        *extensions = serde_json::Value::Object(Default::default());
    }
    extensions.as_object_mut()?.insert(
        TAG_KEY.to_owned(),
        serde_json::Value::String(format!("{}:{id}", nonce())),
    );
    serde_json::to_string(&message).ok()
}

/// What a subscription needs to run again for one change: its document and variables.
struct Template {
    query: String,
    variables: Variables,
    operation_name: Option<String>,
}

/// A tagged request's operation: its id on the connection, and its template.
struct Tag {
    id: String,
    template: Arc<Template>,
}

/// Templates by (query text, variables, operation name).
type Templates = Mutex<HashMap<(String, String, Option<String>), Arc<Template>>>;

/// The extension that turns a socket's tag into a [`Tag`] in the request's data.
#[derive(Default)]
pub struct Tagging {
    templates: Arc<Templates>,
}

impl ExtensionFactory for Tagging {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(TaggingExtension {
            templates: self.templates.clone(),
        })
    }
}

struct TaggingExtension {
    templates: Arc<Templates>,
}

impl TaggingExtension {
    /// The template of `request`: every subscriber with the same text and variables shares one.
    fn template(&self, request: &Request) -> Arc<Template> {
        let variables = serde_json::to_string(&request.variables).unwrap_or_default();
        let key = (
            request.query.clone(),
            variables,
            request.operation_name.clone(),
        );
        let mut kept = self.templates.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(template) = kept.get(&key) {
            return template.clone();
        }
        if kept.len() >= TEMPLATES {
            kept.clear();
        }
        let template = Arc::new(Template {
            query: request.query.clone(),
            variables: request.variables.clone(),
            operation_name: request.operation_name.clone(),
        });
        kept.insert(key, template.clone());
        template
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for TaggingExtension {
    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        mut request: Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<Request> {
        // Whatever is under the key goes: only a tag with this process's nonce counts.
        if let Some(Value::String(tag)) = request.extensions.remove(TAG_KEY)
            && let Some(id) = tag
                .strip_prefix(nonce())
                .and_then(|rest| rest.strip_prefix(':'))
        {
            let template = self.template(&request);
            request.data.insert(Tag {
                id: id.to_owned(),
                template,
            });
        }
        next.run(ctx, request).await
    }
}

/// A handed-over subscription as the socket serves it: the protocol messages to send.
pub type Served = Pin<Box<dyn Stream<Item = String> + Send>>;

/// One connection's hand-overs: what its queue resolvers handed over, waiting for the socket to
/// claim them when the library completes their operations.
#[derive(Clone)]
pub struct Adoptions(Arc<Inner>);

struct Inner {
    schema: AskloopSchema,
    handed: Mutex<Vec<(String, Served)>>,
}

impl Adoptions {
    /// The hand-overs of a connection speaking `protocol`, run again through `schema`: only
    /// `graphql-transport-ws` (what current clients speak) hands over; the legacy protocol's
    /// subscriptions stay with the library.
    pub fn new(schema: AskloopSchema, protocol: WebSocketProtocols) -> Option<Self> {
        (protocol == WebSocketProtocols::GraphQLWS).then(|| {
            Self(Arc::new(Inner {
                schema,
                handed: Mutex::new(Vec::new()),
            }))
        })
    }

    /// When `text` (a message the library is sending) completes an operation that was handed
    /// over: its id and the stream to serve in its place. The message is then not sent.
    pub fn claim(this: Option<&Self>, text: &str) -> Option<(String, Served)> {
        let mut handed = this?.0.handed.lock().unwrap_or_else(|p| p.into_inner());
        if handed.is_empty() || !text.contains("\"complete\"") {
            return None;
        }
        #[derive(serde::Deserialize)]
        struct Complete<'a> {
            #[serde(rename = "type")]
            kind: &'a str,
            id: String,
        }
        let complete = serde_json::from_str::<Complete<'_>>(text).ok()?;
        if complete.kind != "complete" {
            return None;
        }
        let at = handed.iter().position(|(id, _)| *id == complete.id)?;
        Some(handed.swap_remove(at))
    }

    /// Drop whatever was handed over and not claimed (the connection is ending): a hand-over
    /// holds the connection's data, which holds this.
    pub fn clear(&self) {
        self.0
            .handed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

/// The one change a one-shot run resolves (taken by the resolver it reaches).
struct OneShot(Mutex<Option<Result<Change, ServiceError>>>);

/// When this resolver runs as a one-shot: the change it is to resolve, once.
pub(super) fn one_shot(ctx: &Context<'_>) -> Option<Result<Change, ServiceError>> {
    let shot = ctx.data_opt::<OneShot>()?;
    shot.0.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// Whether this resolver runs as a one-shot (whose payload is never shared: the adopted
/// stream that asked for it does the sharing).
pub(super) fn is_one_shot(ctx: &Context<'_>) -> bool {
    ctx.data_opt::<OneShot>().is_some()
}

/// Hand `changes` over to the connection when the subscription `ctx` is starting may be
/// adopted: started over a websocket with a tag, a shareable selection, and this field the
/// operation's only root selection. Otherwise `changes` comes back.
pub(super) fn hand_over<S>(
    ctx: &Context<'_>,
    sharing: Option<&Sharing>,
    changes: S,
) -> Result<(), S>
where
    S: Stream<Item = Result<Change, ServiceError>> + Send + 'static,
{
    let (Some(sharing), Some(adoptions), Some(tag)) =
        (sharing, ctx.data_opt::<Adoptions>(), ctx.data_opt::<Tag>())
    else {
        return Err(changes);
    };
    let roots = &ctx.query_env.operation.node.selection_set.node.items;
    if !matches!(roots.as_slice(), [root] if matches!(root.node, Selection::Field(_))) {
        return Err(changes);
    }
    let plan = Arc::new(Plan {
        id: tag.id.clone(),
        key: ctx.item.node.response_key().node.clone(),
        sharing: sharing.clone(),
        template: tag.template.clone(),
        session: ctx.query_env.session_data.clone(),
        adoptions: adoptions.clone(),
    });
    let served: Served = changes
        .then(move |change| plan.clone().message(change))
        .boxed();
    adoptions
        .0
        .handed
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((tag.id.clone(), served));
    Ok(())
}

/// What serving one handed-over subscription takes.
struct Plan {
    id: String,
    /// The root field's response key.
    key: Name,
    sharing: Sharing,
    template: Arc<Template>,
    /// The connection's data (the caller and the rest), for one-shot runs.
    session: Arc<Data>,
    adoptions: Adoptions,
}

impl Plan {
    /// The protocol message for one change. Boxed: the stream keeps this future inline while
    /// it runs, and every idle subscriber would be sized for it.
    fn message(
        self: Arc<Self>,
        change: Result<Change, ServiceError>,
    ) -> BoxFuture<'static, String> {
        async move {
            let change = match change {
                Ok(change) => change,
                Err(error) => return self.response_message(&self.run(Err(error)).await),
            };
            let class = Class {
                change: kind_of(change.kind) as u8,
                admin: self.sharing.admin,
            };
            let payloads = &self.sharing.payloads;
            let cell = payloads.cell((change.event, class, self.sharing.fingerprint));
            let mut own = None;
            let resolved = cell
                .get_or_init(|| async {
                    let response = self.run(Ok(change.clone())).await;
                    let shared = self.shareable(&response);
                    if shared.is_some() {
                        payloads.resolved.inc();
                    }
                    own = Some(response);
                    shared
                })
                .await;
            match (own, resolved) {
                (_, Some(resolved)) => {
                    payloads.shared.inc();
                    self.shared_message(&resolved.json)
                }
                // This subscriber resolved it and it could not be shared: its own response.
                (Some(response), None) => self.response_message(&response),
                // Someone else's resolution could not be shared: resolve our own.
                (None, None) => self.response_message(&self.run(Ok(change)).await),
            }
        }
        .boxed()
    }

    /// Run the subscription's document for one change, with the connection's data.
    async fn run(&self, change: Result<Change, ServiceError>) -> Response {
        let mut request = Request::new(self.template.query.clone())
            .variables(self.template.variables.clone())
            .data(OneShot(Mutex::new(Some(change))));
        if let Some(name) = &self.template.operation_name {
            request = request.operation_name(name.clone());
        }
        let mut responses = self
            .adoptions
            .0
            .schema
            .execute_stream_with_session_data(request, self.session.clone());
        match responses.next().await {
            Some(response) => response,
            None => {
                tracing::error!("a one-shot subscription run gave no response");
                let mut error = ServerError::new("internal error", None);
                error
                    .extensions
                    .get_or_insert_with(Default::default)
                    .set("code", Value::from(super::error_door::INTERNAL));
                Response::from_errors(vec![error])
            }
        }
    }

    /// The root field's value of a response without errors, resolved for sharing.
    fn shareable(&self, response: &Response) -> Option<Resolved> {
        if !response.errors.is_empty() {
            return None;
        }
        let Value::Object(data) = &response.data else {
            return None;
        };
        let value = data.get(&self.key)?;
        let json = serde_json::to_string(value).ok()?;
        Some(Resolved {
            value: value.clone(),
            json: json.into(),
        })
    }

    /// A data message carrying an already serialised root value.
    fn shared_message(&self, json: &str) -> String {
        format!(
            r#"{{"type":"next","id":{},"payload":{{"data":{{{}:{json}}}}}}}"#,
            quoted(&self.id),
            quoted(self.key.as_str()),
        )
    }

    /// A data message carrying a whole response.
    fn response_message(&self, response: &Response) -> String {
        let payload = serde_json::to_string(response).unwrap_or_else(|_| "{}".to_owned());
        format!(
            r#"{{"type":"next","id":{},"payload":{payload}}}"#,
            quoted(&self.id),
        )
    }
}

/// `text` as a JSON string.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// The subscriptions a socket serves itself, by operation id.
pub struct Adopted {
    streams: HashMap<String, Served>,
    /// How many subscriptions every socket serves (`/metrics`).
    gauge: Option<Gauge>,
}

impl Adopted {
    /// What a connection with `adoptions` serves.
    pub fn new(adoptions: Option<&Adoptions>) -> Self {
        Self {
            streams: HashMap::new(),
            gauge: adoptions.and_then(|adoptions| {
                adoptions
                    .0
                    .schema
                    .data::<Arc<SharedPayloads>>()
                    .map(|payloads| payloads.served.clone())
            }),
        }
    }

    fn count(&self, by: i64) {
        if let Some(gauge) = &self.gauge {
            gauge.inc_by(by);
        }
    }

    /// Serve `stream` as operation `id` (replacing any served under that id).
    pub fn insert(&mut self, id: String, stream: Served) {
        if self.streams.insert(id, stream).is_none() {
            self.count(1);
        }
    }

    /// Stop serving operation `id`: whether it was served here.
    pub fn remove(&mut self, id: &str) -> bool {
        let removed = self.streams.remove(id).is_some();
        if removed {
            self.count(-1);
        }
        removed
    }

    /// Whether nothing is served here.
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// The next message of any served operation: its id and the message, or `None` when that
    /// operation's stream ended (it is then no longer served).
    pub async fn next(&mut self) -> (String, Option<String>) {
        futures::future::poll_fn(|cx: &mut task::Context<'_>| {
            let mut ended = None;
            for (id, stream) in &mut self.streams {
                match stream.poll_next_unpin(cx) {
                    std::task::Poll::Ready(Some(message)) => {
                        return std::task::Poll::Ready((id.clone(), Some(message)));
                    }
                    std::task::Poll::Ready(None) => {
                        ended = Some(id.clone());
                        break;
                    }
                    std::task::Poll::Pending => {}
                }
            }
            match ended {
                Some(id) => {
                    self.remove(&id);
                    std::task::Poll::Ready((id, None))
                }
                None => std::task::Poll::Pending,
            }
        })
        .await
    }
}

impl Drop for Adopted {
    fn drop(&mut self) {
        self.count(-(self.streams.len() as i64));
    }
}

/// The `complete` message for operation `id`.
pub fn complete_message(id: &str) -> String {
    format!(r#"{{"type":"complete","id":{}}}"#, quoted(id))
}
