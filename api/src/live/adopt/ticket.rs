//! The ticket of an adoptable subscription (docs/architecture.md#adopted-subscriptions): what
//! the socket writes into the data of each `subscribe` it runs, and [`Adoptable`], the schema's
//! extension that gives a subscription request its [`Roots`] and, with a ticket, its [`Tag`].
//! The schema is built with the extension, so it needs nothing of the hand-over that runs the
//! schema (`live::adopt`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextPrepareRequest,
};
use async_graphql::{Request, ServerResult, Variables};

use crate::live::shared::Roots;

/// The most subscription templates [`Adoptable`] keeps; when full, it starts over.
const TEMPLATES: usize = 256;

/// What the socket writes into the data of each `subscribe` it runs: the operation's id and the
/// socket's serial number for that subscribe.
pub struct Ticket {
    /// The operation's id on the connection.
    pub id: String,
    /// The socket's serial number for the subscribe.
    pub serial: u64,
}

/// What a subscription needs to run again for one change: its document and variables.
pub(super) struct Template {
    pub(super) query: String,
    pub(super) variables: Variables,
    pub(super) operation_name: Option<String>,
}

/// A ticketed request's operation: its id on the connection, the socket's serial number for
/// the subscribe that started it, and its template.
pub(super) struct Tag {
    pub(super) id: String,
    pub(super) serial: u64,
    pub(super) template: Arc<Template>,
}

/// Templates by (query text, variables, operation name).
type Templates = Mutex<HashMap<(String, String, Option<String>), Arc<Template>>>;

/// The extension that gives a subscription request its [`Roots`], and one with the socket's
/// [`Ticket`] its [`Tag`].
#[derive(Default)]
pub struct Adoptable {
    templates: Arc<Templates>,
}

impl ExtensionFactory for Adoptable {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(AdoptableExtension {
            templates: self.templates.clone(),
        })
    }
}

struct AdoptableExtension {
    templates: Arc<Templates>,
}

impl AdoptableExtension {
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
impl Extension for AdoptableExtension {
    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        mut request: Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<Request> {
        // Queries and mutations carry nothing more: only a subscription has roots.
        let Some(roots) = Roots::of(&mut request) else {
            return next.run(ctx, request).await;
        };
        request.data.insert(roots);
        let ticket = request
            .data
            .get(&std::any::TypeId::of::<Ticket>())
            .and_then(|ticket| ticket.downcast_ref::<Ticket>())
            .map(|ticket| (ticket.id.clone(), ticket.serial));
        if let Some((id, serial)) = ticket {
            let template = self.template(&request);
            request.data.insert(Tag {
                id,
                serial,
                template,
            });
        }
        next.run(ctx, request).await
    }
}
