//! Shared fan-out (docs/architecture.md#the-live-change-feed): a queue change is resolved and
//! serialised once per (event, visibility class, selection) and the result is handed to every
//! subscriber in that class, instead of once per subscriber.
//!
//! - **Selection.** A subscription's selection is fingerprinted once, when its request is
//!   prepared ([`Roots::of`], from the parsed document through the library's public parser
//!   types): a SHA-256 of the root field's selection set, the fragments it spreads and a
//!   canonical text of the request's variables ([`canonical`]: object keys sorted, every value
//!   tagged by its kind).
//!   Only a selection made entirely of [class-determined](shareable) fields gets one; any other
//!   (one that reads something personal, such as a niche's question list, which depends on who
//!   asks) is resolved per subscriber, as before.
//! - **Class.** What a class-determined field shows depends only on how the question changed for
//!   the subscriber (ADDED / UPDATED / REMOVED) and whether they administer askloop (a question's
//!   `deliveries` are for admins). Who may receive the event at all is decided before, per
//!   subscriber, by `service::reach::subscriptions`; sharing never widens it.
//! - **Once.** The first subscriber of a key resolves it; the others wait for that result. A
//!   resolution that raised any error (a field refused, a query failed) is not shared: each
//!   subscriber then resolves its own, with its own errors.
//! - **Serialised once.** Sharing is done by the socket that serves a subscription itself
//!   (`adopt`): it sends the shared JSON text as it is. A subscription the library serves (an
//!   operation with several root fields, an unshareable selection) resolves
//!   its own payload, errors and all; no marker is ever written into a message to be replaced.
//! - **Counted.** [`Serving`] is held by every subscription stream registered with the live hub,
//!   and `askloop_live_subscriptions_served` is how many are held (`docs/architecture.md`).
//!
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use std::sync::{Arc, Mutex};

use async_graphql::parser::types::{
    Directive, DocumentOperations, Field, FragmentDefinition, OperationType, Selection,
    SelectionSet,
};
use async_graphql::{Context, Name, Positioned, Request, Value, Variables};
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

/// How many resolved payloads are kept: a few events' worth of every class and selection in use.
/// A subscriber whose key was dropped resolves its own copy; nothing is lost.
const KEPT: usize = 4096;

/// The fingerprint of a shareable selection.
pub type Fingerprint = [u8; 32];

/// Who sees the same payload for one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Class {
    /// How the question changed for them (`QueueChangeKind` as a small number).
    pub change: u8,
    /// Whether they administer askloop.
    pub admin: bool,
}

type Key = (i64, Class, Fingerprint);

/// A payload resolved once: its JSON text.
pub(super) struct Resolved {
    pub(super) json: Arc<str>,
}

/// The payloads resolved for recent events, shared by every subscriber of this instance.
pub struct SharedPayloads {
    entries: Mutex<Entries>,
    /// How many payloads were resolved, and how many times one was handed out: the ratio is the
    /// sharing (`/metrics`).
    pub(super) resolved: Counter,
    pub(super) shared: Counter,
    /// How many subscriptions websockets serve themselves (`adopt`).
    pub(super) served: Gauge,
}

#[derive(Default)]
struct Entries {
    cells: HashMap<Key, Arc<OnceCell<Option<Resolved>>>>,
    order: VecDeque<Key>,
}

impl std::fmt::Debug for SharedPayloads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedPayloads")
            .field("resolved", &self.resolved.get())
            .field("shared", &self.shared.get())
            .finish_non_exhaustive()
    }
}

impl SharedPayloads {
    /// A store counting into `resolved` (payloads resolved for sharing) and `shared` (payloads
    /// handed out from it), with `served` the gauge of subscriptions websockets serve.
    pub fn new((resolved, shared, served): (Counter, Counter, Gauge)) -> Self {
        Self {
            entries: Mutex::new(Entries::default()),
            resolved,
            shared,
            served,
        }
    }

    pub(super) fn cell(&self, key: Key) -> Arc<OnceCell<Option<Resolved>>> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cell) = entries.cells.get(&key) {
            return cell.clone();
        }
        let cell = Arc::new(OnceCell::new());
        entries.cells.insert(key, cell.clone());
        entries.order.push_back(key);
        while entries.order.len() > KEPT {
            if let Some(old) = entries.order.pop_front() {
                entries.cells.remove(&old);
            }
        }
        cell
    }
}

/// What a subscription stream holds while it is registered with the live hub: one in
/// `askloop_live_subscriptions_served`, given back when the stream is dropped.
pub struct Serving(Gauge);

impl Serving {
    /// Count one more subscription stream in `payloads`' gauge, until this is dropped.
    pub fn start(payloads: &SharedPayloads) -> Self {
        payloads.served.inc();
        Self(payloads.served.clone())
    }
}

impl Serving {
    /// A place for the subscription stream `ctx` has just registered with the hub (none when
    /// the schema has no store: the SDL export).
    pub fn of(ctx: &Context<'_>) -> Option<Self> {
        ctx.data_opt::<Arc<SharedPayloads>>()
            .map(|payloads| Self::start(payloads))
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The root fields of a subscription request, read once from its parsed document when the
/// request is prepared: each one's response key and, when its selection is shareable, its
/// fingerprint. Resolvers find it in the request's data (`adopt::Adoptable` puts it there).
#[derive(Debug)]
pub struct Roots {
    fields: Vec<(Name, Option<Fingerprint>)>,
    /// Whether the operation's selection is exactly one field (no fragment at the root).
    single: bool,
}

impl Roots {
    /// The roots of `request` when it runs a subscription, or `None` (a query, a mutation, or a
    /// document that does not parse: the library refuses that one itself).
    pub fn of(request: &mut Request) -> Option<Self> {
        let variables = canonical_variables(&request.variables);
        let operation_name = request.operation_name.clone();
        let document = request.parsed_query().ok()?;
        let operation = match (&document.operations, operation_name.as_deref()) {
            (DocumentOperations::Single(operation), _) => operation,
            (DocumentOperations::Multiple(operations), Some(name)) => operations.get(name)?,
            (DocumentOperations::Multiple(operations), None) if operations.len() == 1 => {
                operations.values().next()?
            }
            (DocumentOperations::Multiple(_), None) => return None,
        };
        if operation.node.ty != OperationType::Subscription {
            return None;
        }
        let items = &operation.node.selection_set.node.items;
        let fields = items
            .iter()
            .filter_map(|item| match &item.node {
                Selection::Field(field) => Some((
                    field.node.response_key().node.clone(),
                    fingerprint(&field.node.selection_set, &document.fragments, &variables),
                )),
                Selection::FragmentSpread(_) | Selection::InlineFragment(_) => None,
            })
            .collect();
        Some(Self {
            single: matches!(items.as_slice(), [root] if matches!(root.node, Selection::Field(_))),
            fields,
        })
    }

    /// The fingerprint of the root field answering under `key`, when it is shareable.
    pub fn fingerprint_of(&self, key: &str) -> Option<Fingerprint> {
        self.fields
            .iter()
            .find(|(name, _)| name.as_str() == key)
            .and_then(|(_, print)| *print)
    }

    /// The response key of the operation's one root field, when it selects exactly one.
    pub fn single_key(&self) -> Option<&Name> {
        match self.fields.as_slice() {
            [(key, _)] if self.single => Some(key),
            _ => None,
        }
    }
}

/// The response key of the field `ctx` resolves (its alias, or its name).
pub fn response_key<'a>(ctx: &'a Context<'_>) -> &'a str {
    let field = ctx.field();
    field.alias().unwrap_or_else(|| field.name())
}

/// A canonical text of a request's variables: the same values print the same whatever order
/// their object keys came in (`Variables` sorts only the top level; objects inside keep the
/// client's order).
fn canonical_variables(variables: &Variables) -> String {
    let mut text = String::new();
    text.push('{');
    for (name, value) in variables.iter() {
        canonical_string(&mut text, name.as_str());
        text.push(':');
        canonical(&mut text, value);
        text.push(',');
    }
    text.push('}');
    text
}

/// Write `value` canonically: object keys sorted, strings JSON-quoted, enums and binary tagged so
/// no value of one kind prints as another.
fn canonical(text: &mut String, value: &Value) {
    match value {
        Value::Null => text.push_str("null"),
        Value::Boolean(b) => text.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let _ = write!(text, "{n}");
        }
        Value::String(s) => canonical_string(text, s),
        Value::Enum(name) => {
            text.push('#');
            text.push_str(name.as_str());
        }
        Value::Binary(bytes) => {
            text.push_str("0x");
            text.push_str(&hex::encode(bytes));
        }
        Value::List(items) => {
            text.push('[');
            for item in items {
                canonical(text, item);
                text.push(',');
            }
            text.push(']');
        }
        Value::Object(fields) => {
            let mut sorted: Vec<_> = fields.iter().collect();
            sorted.sort_by(|(a, _), (b, _)| a.as_str().cmp(b.as_str()));
            text.push('{');
            for (name, value) in sorted {
                canonical_string(text, name.as_str());
                text.push(':');
                canonical(text, value);
                text.push(',');
            }
            text.push('}');
        }
    }
}

fn canonical_string(text: &mut String, s: &str) {
    match serde_json::to_string(s) {
        Ok(quoted) => text.push_str(&quoted),
        // Serialising a string cannot fail; were it to, `!` is no JSON text, so it matches none.
        Err(_) => text.push('!'),
    }
}

/// What a subscription needs to share: the store, and its selection's fingerprint.
#[derive(Clone)]
pub struct Sharing {
    pub(super) payloads: Arc<SharedPayloads>,
    pub(super) fingerprint: Fingerprint,
    pub(super) admin: bool,
}

impl Sharing {
    /// Sharing for the subscription `ctx` is starting, when its selection is shareable and the
    /// schema has a store.
    pub fn for_subscription(ctx: &Context<'_>, admin: bool) -> Option<Self> {
        let payloads = ctx.data_opt::<Arc<SharedPayloads>>()?.clone();
        let fingerprint = ctx.data_opt::<Roots>()?.fingerprint_of(response_key(ctx))?;
        Some(Self {
            payloads,
            fingerprint,
            admin,
        })
    }
}

/// The fingerprint of a queue change's selection, or `None` when it reads anything that is not
/// class-determined. It is taken over a canonical text of the selection (fragments spelled out,
/// no positions or whitespace), so the same selection written under another root field, in
/// another layout or through differently named fragments prints the same.
fn fingerprint(
    selection: &Positioned<SelectionSet>,
    fragments: &HashMap<Name, Positioned<FragmentDefinition>>,
    variables: &str,
) -> Option<Fingerprint> {
    let mut walk = Walk {
        fragments,
        text: String::new(),
        spreads: 0,
    };
    if !walk.selection(Shape::QueueChange, selection, 0) {
        return None;
    }
    let mut hash = Sha256::new();
    hash.update(walk.text.as_bytes());
    hash.update(b"\0variables\0");
    hash.update(variables.as_bytes());
    Some(hash.finalize().into())
}

/// The object types a shareable selection may walk through.
#[derive(Clone, Copy)]
enum Shape {
    QueueChange,
    Question,
    Niche,
    /// An object whose every field is plain data about the question (options, answers, timeline,
    /// budget entries, deliveries without their attempts).
    Plain,
}

/// A walk over a selection that writes its canonical text and checks every field is
/// class-determined.
struct Walk<'a> {
    fragments: &'a HashMap<Name, Positioned<FragmentDefinition>>,
    text: String,
    spreads: usize,
}

/// The longest canonical text a shareable selection may have, and the most fragment spreads it
/// may follow: bounds on the walk (a document past them is simply not shared).
const MAX_TEXT: usize = 16 * 1024;
const MAX_SPREADS: usize = 64;

impl Walk<'_> {
    /// Whether every field `selection` reads of a `shape` is class-determined. Fields not listed
    /// here are not shared: a new field stays per subscriber until it is added, knowingly.
    fn selection(
        &mut self,
        shape: Shape,
        selection: &Positioned<SelectionSet>,
        depth: usize,
    ) -> bool {
        if depth > 16 || self.text.len() > MAX_TEXT {
            return false;
        }
        self.text.push('{');
        for item in &selection.node.items {
            let ok = match &item.node {
                Selection::Field(field) => self.field(shape, &field.node, depth),
                Selection::InlineFragment(inline) => {
                    self.text.push_str("...");
                    if let Some(on) = &inline.node.type_condition {
                        self.text.push_str(" on ");
                        self.text.push_str(on.node.on.node.as_str());
                    }
                    self.directives(&inline.node.directives);
                    self.selection(shape, &inline.node.selection_set, depth + 1)
                }
                Selection::FragmentSpread(spread) => {
                    self.spreads += 1;
                    let Some(fragment) = self.fragments.get(&spread.node.fragment_name.node) else {
                        return false;
                    };
                    if self.spreads > MAX_SPREADS {
                        return false;
                    }
                    // Spelled out as the inline fragment it stands for.
                    self.text.push_str("... on ");
                    self.text
                        .push_str(fragment.node.type_condition.node.on.node.as_str());
                    self.directives(&spread.node.directives);
                    self.directives(&fragment.node.directives);
                    self.selection(shape, &fragment.node.selection_set, depth + 1)
                }
            };
            if !ok {
                return false;
            }
            self.text.push(' ');
        }
        self.text.push('}');
        true
    }

    fn field(&mut self, shape: Shape, field: &Field, depth: usize) -> bool {
        let name = field.name.node.as_str();
        let next = match (shape, name) {
            (_, "__typename")
            | (Shape::QueueChange, "change" | "by")
            | (
                Shape::Question,
                "id" | "externalId" | "agentName" | "title" | "question" | "context" | "urgency"
                | "status" | "bountyMinor" | "kind" | "budgetLimitMinor" | "deliverable"
                | "researchRound" | "escalationStep" | "createdAt" | "answeredAt" | "updatedAt"
                | "expiresAt" | "answersWanted" | "answersIn" | "agreement",
            )
            | (Shape::Niche, "slug" | "name" | "status" | "description") => None,
            (Shape::QueueChange, "question") => Some(Shape::Question),
            // A several-answer question's answers are withheld from whoever has not answered
            // it: read per subscriber.
            (Shape::Question, "answers") => return false,
            (Shape::Question, "options" | "timeline" | "budgetEntries" | "deliveries") => {
                Some(Shape::Plain)
            }
            (Shape::Question, "niche") => Some(Shape::Niche),
            // Plain objects' fields, except a delivery's attempts (read per delivery).
            (Shape::Plain, "attempts") => return false,
            (Shape::Plain, _) => Some(Shape::Plain),
            _ => return false,
        };
        if let Some(alias) = &field.alias {
            self.text.push_str(alias.node.as_str());
            self.text.push(':');
        }
        self.text.push_str(name);
        for (argument, value) in &field.arguments {
            self.text
                .push_str(&format!("({}:{})", argument.node, value.node));
        }
        self.directives(&field.directives);
        match next {
            Some(shape) => self.selection(shape, &field.selection_set, depth + 1),
            None => true,
        }
    }

    fn directives(&mut self, directives: &[Positioned<Directive>]) {
        for directive in directives {
            self.text.push('@');
            self.text.push_str(directive.node.name.node.as_str());
            for (argument, value) in &directive.node.arguments {
                self.text
                    .push_str(&format!("({}:{})", argument.node, value.node));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_graphql::parser::parse_query;
    use async_graphql::parser::types::{DocumentOperations, OperationDefinition};

    fn root_field(
        query: &str,
    ) -> (
        Positioned<Field>,
        HashMap<Name, Positioned<FragmentDefinition>>,
    ) {
        let doc = parse_query(query).expect("a query");
        let op: Positioned<OperationDefinition> = match doc.operations {
            DocumentOperations::Single(op) => op,
            DocumentOperations::Multiple(ops) => ops.into_values().next().expect("one"),
        };
        let field = match &op.node.selection_set.node.items[0].node {
            Selection::Field(field) => field.clone(),
            _ => panic!("a field first"),
        };
        (field, doc.fragments)
    }

    fn print(query: &str) -> Option<Fingerprint> {
        let (field, fragments) = root_field(query);
        fingerprint(&field.node.selection_set, &fragments, "{}")
    }

    #[test]
    fn a_card_selection_is_shareable_and_the_same_text_gives_the_same_print() {
        let q = "subscription { questionQueue(nicheSlug: \"a\") { change question { id title options { id label } niche { slug } answersWanted answersIn } } }";
        let other_niche = q.replace("\"a\"", "\"b\"");
        assert!(print(q).is_some());
        assert_eq!(
            print(q),
            print(&other_niche),
            "the root's arguments are not part of it"
        );
        let more = q.replace("id title", "id title context");
        assert_ne!(print(q), print(&more), "another selection, another print");
    }

    /// The dashboard's own subscriptions, as its `.graphql` files spell them, are shared: a field
    /// added to the card but not to the list above would quietly have every open dashboard
    /// resolve and serialise its own copy of every event.
    #[test]
    fn the_dashboards_subscriptions_are_shareable() {
        for (file, operation) in [
            (
                include_str!("../../../web/graphql/queue.graphql"),
                "QueueChanges",
            ),
            (
                include_str!("../../../web/graphql/niches.graphql"),
                "AwaitingMeChanges",
            ),
        ] {
            let doc = parse_query(file).expect("the dashboard's operations parse");
            let DocumentOperations::Multiple(operations) = doc.operations else {
                panic!("{operation}: several operations in its file")
            };
            let op = &operations[&Name::new(operation)];
            let Selection::Field(field) = &op.node.selection_set.node.items[0].node else {
                panic!("{operation}: a field first")
            };
            assert!(
                fingerprint(&field.node.selection_set, &doc.fragments, "{}").is_some(),
                "{operation} is resolved per subscriber"
            );
        }
    }

    #[test]
    fn personal_fields_are_never_shared() {
        for personal in [
            "question { answers { optionId withheld } }",
            "question { niche { questions { edges { node { id } } } } }",
            "question { niche { members { handle } } }",
            "question { deliveries { attempts { id } } }",
            "question { somethingNew }",
        ] {
            let q = format!("subscription {{ awaitingMe {{ change {personal} }} }}");
            assert!(print(&q).is_none(), "{personal} must not be shared");
        }
    }

    #[test]
    fn fragments_are_followed_and_their_text_counts() {
        let q = "subscription { awaitingMe { ...C } } fragment C on QueueChange { change question { ...Q } } fragment Q on Question { id title }";
        let personal = "subscription { awaitingMe { ...C } } fragment C on QueueChange { change question { ...Q } } fragment Q on Question { id niche { members { handle } } }";
        let missing = "subscription { awaitingMe { ...C } }";
        assert!(print(q).is_some());
        assert!(print(personal).is_none());
        assert!(print(missing).is_none());
        let more = q.replace("id title }", "id title status }");
        assert_ne!(print(q), print(&more));
        let spelled_out = "subscription { questionQueue(nicheSlug: \"x\") { ... on QueueChange { change question { ... on Question { id title } } } } }";
        assert_eq!(
            print(q),
            print(spelled_out),
            "a fragment prints as what it stands for"
        );
        let laid_out = "subscription {\n  awaitingMe {\n    change\n    question { ...Q }\n  }\n}\nfragment Q on Question {\n  id\n  title\n}";
        let inline =
            "subscription { awaitingMe { change question { ... on Question { id title } } } }";
        assert_eq!(print(laid_out), print(inline), "layout does not count");
    }

    #[test]
    fn variables_are_part_of_the_print() {
        let (field, fragments) = root_field(
            "subscription($t: Boolean!) { awaitingMe { change question { title @include(if: $t) } } }",
        );
        let on = fingerprint(&field.node.selection_set, &fragments, "{t: true}");
        let off = fingerprint(&field.node.selection_set, &fragments, "{t: false}");
        assert!(on.is_some());
        assert_ne!(on, off);
    }

    fn variables(json: serde_json::Value) -> Variables {
        Variables::from_json(json)
    }

    #[test]
    fn the_variables_print_the_same_whatever_the_order_of_their_keys() {
        let one = variables(serde_json::json!({"a": {"x": 1, "y": [true, null]}, "b": "s"}));
        let other = variables(serde_json::json!({"b": "s", "a": {"y": [true, null], "x": 1}}));
        assert_eq!(canonical_variables(&one), canonical_variables(&other));
        assert_eq!(
            canonical_variables(&one),
            r#"{"a":{"x":1,"y":[true,null,],},"b":"s",}"#
        );
    }

    #[test]
    fn values_of_different_kinds_never_print_the_same() {
        let mut enum_value = Variables::default();
        enum_value.insert(Name::new("k"), Value::Enum(Name::new("ADDED")));
        let string_value = variables(serde_json::json!({"k": "ADDED"}));
        let number_text = variables(serde_json::json!({"k": "1"}));
        let number = variables(serde_json::json!({"k": 1}));
        assert_ne!(
            canonical_variables(&enum_value),
            canonical_variables(&string_value)
        );
        assert_ne!(
            canonical_variables(&number_text),
            canonical_variables(&number)
        );
    }

    fn roots(query: &str, operation: Option<&str>) -> Option<Roots> {
        let mut request = Request::new(query);
        if let Some(name) = operation {
            request = request.operation_name(name);
        }
        Roots::of(&mut request)
    }

    #[test]
    fn only_a_subscription_has_roots_and_one_field_is_single() {
        assert!(roots("{ viewer { id } }", None).is_none());
        assert!(roots("mutation { logout }", None).is_none());
        assert!(
            roots("subscription {", None).is_none(),
            "a document that does not parse"
        );
        let single = roots(
            "subscription { q: awaitingMe { change question { id } } }",
            None,
        )
        .expect("roots");
        assert_eq!(single.single_key().map(Name::as_str), Some("q"));
        assert!(single.fingerprint_of("q").is_some());
        assert!(
            single.fingerprint_of("awaitingMe").is_none(),
            "by response key"
        );
        let two = roots(
            "subscription { a: awaitingMe { change } b: awaitingMe { change } }",
            None,
        )
        .expect("roots");
        assert!(two.single_key().is_none());
        assert!(two.fingerprint_of("b").is_some());
        let named = roots(
            "query Q { viewer { id } } subscription S { awaitingMe { change } }",
            Some("S"),
        )
        .expect("the named subscription");
        assert_eq!(named.single_key().map(Name::as_str), Some("awaitingMe"));
        assert!(
            roots(
                "query Q { viewer { id } } subscription S { awaitingMe { change } }",
                None
            )
            .is_none()
        );
    }

    #[test]
    fn a_serving_stream_holds_one_place_until_it_is_dropped() {
        let payloads = SharedPayloads::new(Default::default());
        let first = Serving::start(&payloads);
        let second = Serving::start(&payloads);
        assert_eq!(payloads.served.get(), 2);
        drop(first);
        assert_eq!(payloads.served.get(), 1);
        drop(second);
        assert_eq!(payloads.served.get(), 0);
    }
}
