//! Where outbound webhooks may go (docs/security.md#outbound): how their host names become
//! addresses, and the check that keeps a member's webhook on public ones.
//!
//! The delivery worker's HTTP client asks a [`NameResolver`] for every host it connects to
//! (reqwest's `dns::Resolve`); for a member's webhook that resolver is wrapped in
//! [`PublicOnly`], which hands the connector only public addresses
//! ([`crate::domain::addresses`]), so the address checked is the one connected to — on every
//! attempt, whatever the name resolved to at registration. A literal address never reaches a
//! resolver, so [`literal_host_refused`] checks it before connecting.

use std::net::SocketAddr;
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::domain::addresses::{NOT_PUBLIC, is_public};

pub use crate::config::NameResolver;

impl NameResolver {
    /// This resolver, keeping only public addresses (for members' webhooks).
    pub fn public_only(&self) -> Arc<dyn Resolve> {
        Arc::new(PublicOnly(self.resolver()))
    }
}

/// The refusal a [`PublicOnly`] resolver answers with when a name has no public address.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("{}", NOT_PUBLIC)]
pub struct NotPublic;

/// A resolver that passes on only the public addresses another one found, and refuses a name
/// that has none.
pub struct PublicOnly(Arc<dyn Resolve>);

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let found = self.0.resolve(name);
        Box::pin(async move {
            let public: Vec<SocketAddr> = found.await?.filter(|a| is_public(a.ip())).collect();
            if public.is_empty() {
                return Err(Box::new(NotPublic) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

/// Whether `err` (or anything under it) is a [`NotPublic`] refusal.
pub fn is_not_public(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(err);
    while let Some(err) = cause {
        if err.downcast_ref::<NotPublic>().is_some() {
            return true;
        }
        cause = err.source();
    }
    false
}

/// Whether `url` names its host by an address that is not public (or names none): such a URL
/// never goes through a resolver, so a member's webhook is checked here before connecting.
pub fn literal_host_refused(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return true;
    };
    // The URL parser writes an address host in its one normal form (`2130706433` and `0x7f.1`
    // are 127.0.0.1; an IPv6 address is bracketed), so parsing what it wrote sees every spelling.
    let Some(host) = parsed.host_str() else {
        return true;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => !is_public(ip),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers every name with `addrs`.
    struct Fixed(Vec<SocketAddr>);

    impl Resolve for Fixed {
        fn resolve(&self, _: Name) -> Resolving {
            let addrs = self.0.clone();
            Box::pin(async move { Ok(Box::new(addrs.into_iter()) as Addrs) })
        }
    }

    fn addr(text: &str) -> SocketAddr {
        text.parse().expect("an address")
    }

    async fn through_public_only(addrs: &[&str]) -> Result<Vec<SocketAddr>, String> {
        let inner = NameResolver::new(Arc::new(Fixed(addrs.iter().map(|a| addr(a)).collect())));
        let name: Name = "hook.example.test".parse().expect("a name");
        match inner.public_only().resolve(name).await {
            Ok(found) => Ok(found.collect()),
            Err(err) => Err(if is_not_public(err.as_ref()) {
                NOT_PUBLIC.to_owned()
            } else {
                err.to_string()
            }),
        }
    }

    #[tokio::test]
    async fn a_name_with_only_private_addresses_is_refused_as_not_public() {
        assert_eq!(
            through_public_only(&["127.0.0.1:0", "[::1]:0", "[::ffff:10.0.0.1]:0"]).await,
            Err(NOT_PUBLIC.to_owned())
        );
    }

    #[tokio::test]
    async fn only_the_public_addresses_of_a_name_are_passed_on() {
        assert_eq!(
            through_public_only(&["10.0.0.1:0", "93.184.216.34:0", "[fd00::1]:0"]).await,
            Ok(vec![addr("93.184.216.34:0")])
        );
    }

    #[test]
    fn a_literal_address_is_checked_before_connecting() {
        for refused in [
            "http://127.0.0.1:9/x",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[64:ff9b::a00:1]/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://198.18.0.1/",
        ] {
            assert!(literal_host_refused(refused), "{refused}");
        }
        for allowed in ["https://93.184.216.34/", "https://hooks.example.com/x"] {
            assert!(!literal_host_refused(allowed), "{allowed}");
        }
    }
}
