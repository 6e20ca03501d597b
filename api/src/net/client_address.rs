//! Who the client of a request is when askloop sits behind proxies (docs/security.md#behind-a-proxy):
//! the peers named by `ASKLOOP_TRUSTED_PROXIES` ([`TrustedProxies`]) are believed about the
//! client they forward for, everyone else is not.
//!
//! For a request whose connection comes from a trusted proxy, the client is read from
//! `Forwarded` (RFC 7239), else from `X-Forwarded-For`, walking the list from its right-hand
//! end — the hop nearest askloop, which the proxy itself wrote — leftwards past every address
//! that is itself a trusted proxy: the first address that is not is the client. What lies left
//! of it was written by that client, so it is never read. A hop that names nobody (`unknown`,
//! an obfuscated identifier, an element without `for=`) ends the walk where it stands: the client
//! is then the nearest address that is known, never anything the client could have written. A
//! header that does not parse is not believed at all: the client is the peer.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// The proxies whose forwarding headers are believed: addresses and CIDR ranges. Empty (the
/// default) trusts no one, and every request's client is its connection's peer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<Range>);

/// One address range: the network's address (no host bits set) and its prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    network: IpAddr,
    prefix: u8,
}

/// Why a list of trusted proxies was refused; each names the item at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustedProxiesError {
    /// An item is neither an address nor a range.
    #[error(
        "'{0}' is not an IP address or CIDR range (write 10.0.0.5, 10.0.0.0/8 or fd00::/8, \
         separated by commas; host names are not accepted)"
    )]
    NotAnAddress(String),
    /// A range's prefix is longer than its address.
    #[error("'{item}' has a prefix longer than /{longest}")]
    PrefixTooLong {
        /// The item as written.
        item: String,
        /// The longest prefix its family has.
        longest: u8,
    },
    /// A range has bits set past its prefix: a typo that would trust another network.
    #[error("'{item}' has bits set past its prefix; the network is {network}/{prefix}")]
    HostBitsSet {
        /// The item as written.
        item: String,
        /// The network it lies in.
        network: IpAddr,
        /// Its prefix length.
        prefix: u8,
    },
    /// Two commas with nothing between them.
    #[error("the list has an empty item (two commas in a row, or one at an end)")]
    EmptyItem,
}

impl FromStr for TrustedProxies {
    type Err = TrustedProxiesError;

    /// Comma-separated addresses (`10.0.0.5`, `::1`) and ranges (`10.0.0.0/8`, `fd00::/8`);
    /// blank is the empty list.
    fn from_str(list: &str) -> Result<Self, Self::Err> {
        if list.trim().is_empty() {
            return Ok(Self::default());
        }
        list.split(',')
            .map(|item| Range::parse(item.trim()))
            .collect::<Result<Vec<_>, _>>()
            .map(Self)
    }
}

impl fmt::Display for TrustedProxies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, range) in self.0.iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}/{}", range.network, range.prefix)?;
        }
        Ok(())
    }
}

impl Range {
    fn parse(item: &str) -> Result<Self, TrustedProxiesError> {
        if item.is_empty() {
            return Err(TrustedProxiesError::EmptyItem);
        }
        let not_an_address = || TrustedProxiesError::NotAnAddress(item.to_owned());
        let (address, prefix) = match item.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (item, None),
        };
        let address = address
            .parse::<IpAddr>()
            .map_err(|_| not_an_address())?
            .to_canonical();
        let longest = bits(address);
        let prefix = match prefix {
            None => longest,
            // Digits only: `u8::from_str` would take a `+`.
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                match p.parse::<u8>() {
                    Ok(prefix) if prefix <= longest => prefix,
                    _ => {
                        return Err(TrustedProxiesError::PrefixTooLong {
                            item: item.to_owned(),
                            longest,
                        });
                    }
                }
            }
            Some(_) => return Err(not_an_address()),
        };
        let network = masked(address, prefix);
        if network != address {
            return Err(TrustedProxiesError::HostBitsSet {
                item: item.to_owned(),
                network,
                prefix,
            });
        }
        Ok(Self { network, prefix })
    }

    fn contains(self, ip: IpAddr) -> bool {
        bits(ip) == bits(self.network) && masked(ip, self.prefix) == self.network
    }
}

fn bits(ip: IpAddr) -> u8 {
    match ip {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

/// `ip` with every bit past the first `prefix` cleared.
fn masked(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
        }
        IpAddr::V6(v6) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
        }
    }
}

/// The forwarding headers of one request, as received: every line of each, raw (a value that
/// is not text is a malformed header like any other).
#[derive(Debug, Clone, Copy, Default)]
pub struct ForwardingHeaders<'a> {
    /// Every `Forwarded` line, in order.
    pub forwarded: &'a [&'a [u8]],
    /// Every `X-Forwarded-For` line, in order.
    pub x_forwarded_for: &'a [&'a [u8]],
}

/// One hop of a forwarding chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hop {
    /// A hop that names its client's address.
    Address(IpAddr),
    /// A hop that hides or does not know it (`unknown`, `_obfuscated`, no `for=`).
    Unnamed,
}

impl TrustedProxies {
    /// Whether no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` (an IPv4 address also when written as IPv6) is a trusted proxy.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|range| range.contains(ip))
    }

    /// The client of a request that came over a connection from `peer` with `headers`: the peer
    /// itself unless it is a trusted proxy; else the right-most address of the chain that is not
    /// a trusted proxy (module docs). `Forwarded` is read when present, else `X-Forwarded-For`;
    /// a header that does not parse leaves the peer.
    pub fn client_of(&self, peer: IpAddr, headers: ForwardingHeaders<'_>) -> IpAddr {
        let peer = peer.to_canonical();
        if !self.contains(peer) {
            return peer;
        }
        let hops = if !headers.forwarded.is_empty() {
            forwarded_hops(headers.forwarded)
        } else if !headers.x_forwarded_for.is_empty() {
            x_forwarded_for_hops(headers.x_forwarded_for)
        } else {
            return peer;
        };
        let Some(hops) = hops else {
            return peer;
        };
        let mut client = peer;
        for hop in hops.iter().rev() {
            match *hop {
                Hop::Address(ip) => {
                    client = ip.to_canonical();
                    if !self.contains(client) {
                        break;
                    }
                }
                Hop::Unnamed => break,
            }
        }
        client
    }
}

/// The hops `Forwarded` lists (RFC 7239 §4), one per element with pairs, in order; `None` when
/// a line does not follow the grammar.
fn forwarded_hops(lines: &[&[u8]]) -> Option<Vec<Hop>> {
    let mut hops = Vec::new();
    for line in lines {
        let mut rest = std::str::from_utf8(line).ok()?;
        // forwarded-element *( OWS "," OWS forwarded-element ), where an element may be empty
        // (the list rule of RFC 9110 §5.6.1 lets recipients meet empty elements).
        loop {
            let mut has_pairs = false;
            let mut named: Option<Hop> = None;
            loop {
                rest = rest.trim_start_matches([' ', '\t']);
                if !(rest.is_empty() || rest.starts_with([',', ';'])) {
                    let (name, after) = split_token(rest)?;
                    let after = after.strip_prefix('=')?;
                    let (value, after) = match after.strip_prefix('"') {
                        Some(quoted) => split_quoted(quoted)?,
                        None => {
                            let (value, after) = split_token(after)?;
                            (value.to_owned(), after)
                        }
                    };
                    has_pairs = true;
                    if name.eq_ignore_ascii_case("for") {
                        // A parameter may appear once per element (RFC 7239 §4).
                        if named.is_some() {
                            return None;
                        }
                        named = Some(forwarded_node(&value)?);
                    }
                    rest = after.trim_start_matches([' ', '\t']);
                }
                match rest.as_bytes().first() {
                    Some(b';') => rest = &rest[1..],
                    Some(b',') | None => break,
                    Some(_) => return None,
                }
            }
            if has_pairs {
                hops.push(named.unwrap_or(Hop::Unnamed));
            }
            match rest.strip_prefix(',') {
                Some(after) => rest = after,
                None => break,
            }
        }
    }
    Some(hops)
}

/// A token (RFC 9110 §5.6.2) at the start of `text`, and what follows it.
fn split_token(text: &str) -> Option<(&str, &str)> {
    let end = text.find(|c: char| !is_tchar(c)).unwrap_or(text.len());
    (end > 0).then(|| text.split_at(end))
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The rest of a quoted string whose opening quote is gone: its unescaped content and what
/// follows the closing quote.
fn split_quoted(text: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Some((value, &text[at + 1..])),
            '\\' => value.push(chars.next()?.1),
            c if c == '\t' || (' '..='~').contains(&c) => value.push(c),
            _ => return None,
        }
    }
    None
}

/// A `for=` node (RFC 7239 §6): an IPv4 address, a bracketed IPv6 address, `unknown` or an
/// obfuscated identifier, with an optional port.
fn forwarded_node(node: &str) -> Option<Hop> {
    let (name, port) = if let Some(v6) = node.strip_prefix('[') {
        let (address, after) = v6.split_once(']')?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?),
        };
        let ip = address.parse::<Ipv6Addr>().ok()?;
        if let Some(port) = port {
            valid_port(port)?;
        }
        return Some(Hop::Address(IpAddr::V6(ip)));
    } else {
        match node.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (node, None),
        }
    };
    if let Some(port) = port {
        valid_port(port)?;
    }
    if name.eq_ignore_ascii_case("unknown") || obfuscated(name) {
        return Some(Hop::Unnamed);
    }
    name.parse::<Ipv4Addr>()
        .ok()
        .map(|ip| Hop::Address(IpAddr::V4(ip)))
}

/// `_` followed by letters, digits, `.`, `_` and `-` (RFC 7239 §6.3).
fn obfuscated(text: &str) -> bool {
    text.strip_prefix('_').is_some_and(|rest| {
        !rest.is_empty()
            && rest
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    })
}

/// A port: up to five digits, or an obfuscated one.
fn valid_port(port: &str) -> Option<()> {
    let digits = (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit());
    (digits || obfuscated(port)).then_some(())
}

/// The hops `X-Forwarded-For` lists: addresses separated by commas, each possibly with a port
/// (`203.0.113.7:4711`, `[2001:db8::1]:4711`) as some proxies write them; `None` when an item
/// is none of these.
fn x_forwarded_for_hops(lines: &[&[u8]]) -> Option<Vec<Hop>> {
    let mut hops = Vec::new();
    for line in lines {
        for item in std::str::from_utf8(line).ok()?.split(',') {
            let item = item.trim_matches([' ', '\t']);
            if item.is_empty() {
                continue;
            }
            let hop = if item.eq_ignore_ascii_case("unknown") {
                Hop::Unnamed
            } else if let Ok(ip) = item.parse::<IpAddr>() {
                Hop::Address(ip)
            } else if let Ok(socket) = item.parse::<std::net::SocketAddr>() {
                Hop::Address(socket.ip())
            } else {
                Hop::Address(IpAddr::V6(
                    item.strip_prefix('[')?.strip_suffix(']')?.parse().ok()?,
                ))
            };
            hops.push(hop);
        }
    }
    Some(hops)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trusted(list: &str) -> TrustedProxies {
        list.parse().expect("a list")
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    const PROXY: &str = "10.0.0.2";

    /// The client askloop sees for a request from `peer` with these header lines, trusting
    /// 10.0.0.0/24 and 2001:db8:ffff::1.
    fn client(peer: &str, forwarded: &[&str], x_forwarded_for: &[&str]) -> String {
        let forwarded: Vec<&[u8]> = forwarded.iter().map(|l| l.as_bytes()).collect();
        let x_forwarded_for: Vec<&[u8]> = x_forwarded_for.iter().map(|l| l.as_bytes()).collect();
        trusted("10.0.0.0/24, 2001:db8:ffff::1")
            .client_of(
                ip(peer),
                ForwardingHeaders {
                    forwarded: &forwarded,
                    x_forwarded_for: &x_forwarded_for,
                },
            )
            .to_string()
    }

    #[test]
    fn a_list_of_addresses_and_ranges_is_read_and_blank_trusts_no_one() {
        let list = trusted(" 127.0.0.1, 10.0.0.0/8 ,fd00::/8,::1");
        assert_eq!(list.to_string(), "127.0.0.1/32,10.0.0.0/8,fd00::/8,::1/128");
        assert!(list.contains(ip("10.200.3.4")));
        assert!(
            list.contains(ip("::ffff:127.0.0.1")),
            "IPv4 written as IPv6"
        );
        assert!(list.contains(ip("fd12::1")));
        assert!(!list.contains(ip("127.0.0.2")));
        assert!(!list.contains(ip("11.0.0.1")));
        assert!(trusted("").is_empty());
        assert!(trusted("  ").is_empty());
        assert!(trusted("0.0.0.0/0").contains(ip("203.0.113.9")));
        assert!(!trusted("0.0.0.0/0").contains(ip("2001:db8::1")));
    }

    #[test]
    fn a_bad_item_is_refused_naming_it() {
        let refused = |list: &str| list.parse::<TrustedProxies>().expect_err(list).to_string();
        assert!(refused("10.0.0.1, proxy.internal").contains("'proxy.internal' is not an IP"));
        assert!(refused("10.0.0.0/33").contains("'10.0.0.0/33' has a prefix longer than /32"));
        assert!(refused("fd00::/129").contains("longer than /128"));
        assert!(refused("10.0.0.0/").contains("'10.0.0.0/' is not an IP"));
        assert!(refused("10.0.0.0/+8").contains("'10.0.0.0/+8' is not an IP"));
        assert!(refused("10.0.0.0/8/8").contains("is not an IP"));
        assert!(refused("10.1.2.3/8").contains("the network is 10.0.0.0/8"));
        assert!(refused("10.0.0.1,,10.0.0.2").contains("empty item"));
        assert!(refused("10.0.0.1,").contains("empty item"));
        assert!(refused("10.0.0.1 10.0.0.2").contains("'10.0.0.1 10.0.0.2' is not an IP"));
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_says() {
        assert_eq!(
            client("203.0.113.9", &["for=198.51.100.1"], &[]),
            "203.0.113.9"
        );
        assert_eq!(client("203.0.113.9", &[], &["198.51.100.1"]), "203.0.113.9");
        assert_eq!(
            TrustedProxies::default()
                .client_of(
                    ip(PROXY),
                    ForwardingHeaders {
                        forwarded: &[],
                        x_forwarded_for: &[b"198.51.100.1"],
                    },
                )
                .to_string(),
            PROXY,
            "an empty list trusts no one"
        );
    }

    #[test]
    fn a_trusted_peer_without_headers_is_the_client() {
        assert_eq!(client(PROXY, &[], &[]), PROXY);
    }

    #[test]
    fn x_forwarded_for_gives_the_right_most_address_not_trusted() {
        assert_eq!(client(PROXY, &[], &["198.51.100.1"]), "198.51.100.1");
        // What the client wrote itself (left) is never read past the address the proxy saw.
        assert_eq!(
            client(PROXY, &[], &["192.0.2.66, 198.51.100.1"]),
            "198.51.100.1"
        );
        // Trusted hops in between are walked past, also across several lines.
        assert_eq!(
            client(PROXY, &[], &["192.0.2.66, 198.51.100.1", "10.0.0.7"]),
            "198.51.100.1"
        );
        // Ports some proxies add, and IPv6 in both spellings.
        assert_eq!(client(PROXY, &[], &["198.51.100.1:4711"]), "198.51.100.1");
        assert_eq!(client(PROXY, &[], &["[2001:db8::7]:4711"]), "2001:db8::7");
        assert_eq!(client(PROXY, &[], &["2001:db8::7 , "]), "2001:db8::7");
        assert_eq!(client(PROXY, &[], &["[2001:db8::7]"]), "2001:db8::7");
        // Every hop trusted: the furthest one.
        assert_eq!(client(PROXY, &[], &["10.0.0.9, 10.0.0.7"]), "10.0.0.9");
        // IPv4 written as IPv6 is IPv4.
        assert_eq!(client(PROXY, &[], &["::ffff:198.51.100.1"]), "198.51.100.1");
    }

    #[test]
    fn forwarded_gives_the_right_most_for_not_trusted_and_wins_over_x_forwarded_for() {
        assert_eq!(
            client(PROXY, &["for=192.0.2.66, for=198.51.100.1"], &["192.0.2.1"]),
            "198.51.100.1"
        );
        assert_eq!(
            client(
                PROXY,
                &[r#"for="[2001:db8:cafe::17]:4711";proto=https;by=10.0.0.2"#],
                &[]
            ),
            "2001:db8:cafe::17"
        );
        assert_eq!(
            client(PROXY, &["For=\"198.51.100.1:80\"", "for=10.0.0.7"], &[]),
            "198.51.100.1"
        );
        // Quoted values may hold commas and semicolons, and escapes.
        assert_eq!(
            client(
                PROXY,
                &[r#"for=198.51.100.1;host="a,b;c\"d", for=10.0.0.7"#],
                &[]
            ),
            "198.51.100.1"
        );
        // Empty elements and pairs are allowed by the list rule.
        assert_eq!(
            client(PROXY, &[" , for=198.51.100.1 ;; ,"], &[]),
            "198.51.100.1"
        );
        // A trusted IPv6 hop is walked past.
        assert_eq!(
            client(
                PROXY,
                &[r#"for=198.51.100.1, for="[2001:db8:ffff::1]""#],
                &[]
            ),
            "198.51.100.1"
        );
    }

    #[test]
    fn a_hop_that_names_nobody_ends_the_walk_at_the_nearest_known_address() {
        // The proxy could not name its client: what lies left of it is the client's own
        // writing, so the client is the proxy that said so.
        assert_eq!(client(PROXY, &["for=192.0.2.66, for=unknown"], &[]), PROXY);
        assert_eq!(
            client(
                PROXY,
                &["for=192.0.2.66, for=_hidden.1", "for=10.0.0.7"],
                &[]
            ),
            "10.0.0.7"
        );
        assert_eq!(client(PROXY, &["for=192.0.2.66, proto=https"], &[]), PROXY);
        assert_eq!(client(PROXY, &["for=\"_x:_port\""], &[]), PROXY);
        assert_eq!(client(PROXY, &[], &["192.0.2.66, unknown"]), PROXY);
    }

    #[test]
    fn a_malformed_header_leaves_the_peer() {
        let malformed_forwarded = [
            "for=2001:db8::1",           // IPv6 must be quoted and bracketed
            "for=\"[2001:db8::1\"",      // unclosed bracket
            "for=\"[2001:db8::1]x\"",    // junk after the bracket
            "for=198.51.100.1:99999999", // port too long
            "for=198.51.100.1:",         // empty port
            "for=\"198.51.100.1",        // unclosed quote
            "for=198.51.100.1 for=192.0.2.1",
            "for=198.51.100.1;for=192.0.2.1", // twice in one element
            "for=",
            "=198.51.100.1",
            "for",
            "for=host.example",
            "for=_",
            "for=256.1.1.1",
            "for=\"198.51.100.1\u{7f}\"",
            "for=198.51.100.1\u{0}",
        ];
        for line in malformed_forwarded {
            assert_eq!(client(PROXY, &[line], &["192.0.2.1"]), PROXY, "{line:?}");
        }
        for line in [
            "198.51.100.1 192.0.2.1",
            "host.example",
            "198.51.100.1, _hidden",
            "[2001:db8::1",
            "198.51.100.1:",
            "\"198.51.100.1\"",
        ] {
            assert_eq!(client(PROXY, &[], &[line]), PROXY, "{line:?}");
        }
        // Not text at all.
        let bytes: &[&[u8]] = &[b"for=198.51.100.1\xff"];
        assert_eq!(
            trusted(PROXY)
                .client_of(
                    ip(PROXY),
                    ForwardingHeaders {
                        forwarded: bytes,
                        x_forwarded_for: &[],
                    },
                )
                .to_string(),
            PROXY
        );
    }

    #[test]
    fn hostile_input_of_any_shape_never_panics_and_names_no_unseen_address() {
        // A deterministic scramble of the grammar's characters, long and short: whatever comes
        // out is the peer or an address written in the input.
        let alphabet: Vec<char> = "for=\"[]:;,_\\ \t0123456789abcdef.unknownFOR=:::/\u{e9}"
            .chars()
            .collect();
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for round in 0..20_000 {
            let len = (round % 97) as usize;
            let line: String = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % alphabet.len() as u64) as usize]
                })
                .collect();
            for found in [client(PROXY, &[&line], &[]), client(PROXY, &[], &[&line])] {
                let stripped = line.replace(['[', ']', '"', '\\'], "");
                assert!(
                    found == PROXY || stripped.contains(found.as_str()) || found.contains(':'),
                    "{line:?} gave {found}"
                );
            }
        }
        // Very long chains are walked (hyper bounds a header's size before this is reached).
        let chain = vec!["10.0.0.7"; 10_000].join(",");
        assert_eq!(client(PROXY, &[], &[&chain]), "10.0.0.7");
        let chain = format!("198.51.100.1,{chain}");
        assert_eq!(client(PROXY, &[], &[&chain]), "198.51.100.1");
    }
}
