//! askloop's metrics registry: one per running app (no global recorder), rendered at `/metrics`.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: String,
}

/// The counters and histograms askloop keeps.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
    intake: Family<OutcomeLabels, Counter>,
    payloads_resolved: Counter,
    payloads_shared: Counter,
    subscriptions_served: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with askloop's metrics in it.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("askloop");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests by route and status",
            requests.clone(),
        );
        let latency = Family::<RouteLabels, Histogram>::new_with_constructor(|| {
            // 0.5 ms .. ~16 s
            Histogram::new(exponential_buckets(0.0005, 2.0, 16))
        });
        registry.register(
            "http_request_duration_seconds",
            "HTTP request latency by route",
            latency.clone(),
        );
        let intake = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "intake_outcomes",
            "Question intakes by outcome (created, duplicate, or why refused)",
            intake.clone(),
        );
        let payloads_resolved = Counter::default();
        registry.register(
            "live_payloads_resolved",
            "Queue changes resolved and serialised once for every subscriber of their class",
            payloads_resolved.clone(),
        );
        let payloads_shared = Counter::default();
        registry.register(
            "live_payloads_shared",
            "Queue changes handed to a subscriber from the shared resolution",
            payloads_shared.clone(),
        );
        let subscriptions_served = Gauge::default();
        registry.register(
            "live_subscriptions_served",
            "Live subscription streams (one per root field) registered with the hub and still held",
            subscriptions_served.clone(),
        );
        Self {
            registry,
            requests,
            latency,
            intake,
            payloads_resolved,
            payloads_shared,
            subscriptions_served,
        }
    }

    /// The counters the shared fan-out keeps (resolved once, handed out) and the gauge of
    /// subscriptions websockets serve themselves.
    pub fn live_payloads(&self) -> (Counter, Counter, Gauge) {
        (
            self.payloads_resolved.clone(),
            self.payloads_shared.clone(),
            self.subscriptions_served.clone(),
        )
    }

    /// Count one intake outcome.
    pub fn intake_outcome(&self, outcome: &str) {
        self.intake
            .get_or_create(&OutcomeLabels {
                outcome: outcome.to_owned(),
            })
            .inc();
    }

    fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_owned(),
                route: route.to_owned(),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels {
                method: method.to_owned(),
                route: route.to_owned(),
            })
            .observe(seconds);
    }

    /// The metrics in the text exposition format.
    pub fn render(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// The method as a label from a fixed set: a client can send any token as its method, and each
/// distinct label value would be a new series kept for the life of the process.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Middleware: time every request and count it under its route template (never the raw path,
/// which would let callers mint unbounded label values).
pub async fn track(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(request.method()).to_owned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let response = next.run(request).await;
    metrics.observe(
        &method,
        &route,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::method_label;
    use axum::http::Method;

    #[test]
    fn invented_methods_share_one_label() {
        assert_eq!(method_label(&Method::POST), "POST");
        let invented = Method::from_bytes(b"FROBNICATE").expect("a token");
        assert_eq!(method_label(&invented), "other");
    }
}
