//! A name resolver the test controls, for askloop's outbound webhooks: a fixed map from names to
//! addresses, so a test can make `hook.example.test` resolve to 127.0.0.1 without real DNS. A
//! name it does not know fails to resolve, as an unknown name would.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use askloop::outbound::NameResolver;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Names and the addresses they resolve to.
struct FixedNames(HashMap<String, Vec<IpAddr>>);

impl Resolve for FixedNames {
    fn resolve(&self, name: Name) -> Resolving {
        let found = self.0.get(&name.as_str().to_ascii_lowercase()).cloned();
        let name = name.as_str().to_owned();
        Box::pin(async move {
            let addresses = found.ok_or_else(|| format!("{name} is not a name this test knows"))?;
            let addrs: Vec<SocketAddr> = addresses
                .into_iter()
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// A resolver answering each `(name, address)` pair, and nothing else.
pub fn fixed_names(pairs: &[(&str, &str)]) -> NameResolver {
    let mut names: HashMap<String, Vec<IpAddr>> = HashMap::new();
    for (name, address) in pairs {
        names
            .entry(name.to_ascii_lowercase())
            .or_default()
            .push(address.parse().expect("an IP address"));
    }
    NameResolver::new(Arc::new(FixedNames(names)))
}
