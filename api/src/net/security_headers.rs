//! The headers every response carries so a browser keeps askloop's pages to themselves: a
//! Content-Security-Policy the dashboard runs under (its scripts are files of its own origin;
//! WebAssembly needs `'wasm-unsafe-eval'`, nothing needs inline script or `eval`), no framing,
//! no MIME sniffing and no referrer sent to other sites. See docs/security.md.

use axum::Router;
use axum::http::{HeaderName, HeaderValue, header};
use tower_http::set_header::SetResponseHeaderLayer;

/// The policy of every page askloop serves (the dashboard included).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; \
     script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// The policy of the GraphiQL explorer (only served with `ASKLOOP_GRAPHIQL=1`): its page is
/// inline script and loads React and GraphiQL from unpkg.com.
pub const GRAPHIQL_CONTENT_SECURITY_POLICY: &str = "default-src 'self'; \
     script-src 'self' 'unsafe-inline' https://unpkg.com; \
     style-src 'self' 'unsafe-inline' https://unpkg.com; img-src 'self' data: https://unpkg.com; \
     font-src 'self' data: https://unpkg.com; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Add the headers to every response of `router` that does not set them itself.
pub fn apply<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    let headers: [(HeaderName, &'static str); 4] = [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
    ];
    headers.into_iter().fold(router, |router, (name, value)| {
        router.layer(SetResponseHeaderLayer::if_not_present(
            name,
            HeaderValue::from_static(value),
        ))
    })
}
