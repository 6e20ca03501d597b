//! Connection handling, between the socket and the transports: serving connections
//! ([`serve`]), admitting them against the caps ([`admission`]), the client address behind
//! trusted proxies ([`client_address`]), the sign-in throttle ([`login_throttle`]) and the
//! security headers every response carries ([`security_headers`]). Each sits in its own layer
//! (docs/architecture.md); the folder keeps what one connection goes through in one place.

pub mod admission;
pub mod client_address;
pub mod login_throttle;
pub mod security_headers;
pub mod serve;
