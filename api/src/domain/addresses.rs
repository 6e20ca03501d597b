//! Which addresses a member's webhook may reach (docs/security.md#outbound): only public ones.
//! A member's URL must not make askloop reach what only askloop can reach — this machine, the
//! private networks around it, the cloud's metadata service — since the member sees how each
//! attempt went. The rule is applied to the address actually connected to, after the name is
//! resolved, so a public name that resolves to 127.0.0.1 is refused like the literal address.
//!
//! The ranges are those of the IANA special-purpose address registries (RFC 6890 and its
//! updates) that are not globally reachable, plus the ones no webhook lives on (documentation,
//! benchmarking, multicast, broadcast).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What a member sees of an attempt refused by this rule, and all they see of it.
pub const NOT_PUBLIC: &str = "refused: not a public address";

/// Whether `ip` is a public unicast address a member's webhook may reach.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

/// IPv4: everything but the special-purpose ranges.
pub fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = a == 0 // 0.0.0.0/8, "this network" (with the unspecified address)
        || a == 10 // 10.0.0.0/8, private
        || a == 127 // 127.0.0.0/8, loopback
        || (a == 100 && (b & 0xc0) == 64) // 100.64.0.0/10, shared address space (CGNAT)
        || (a == 169 && b == 254) // 169.254.0.0/16, link-local (and cloud metadata)
        || (a == 172 && (b & 0xf0) == 16) // 172.16.0.0/12, private
        || (a == 192 && b == 0 && c == 0) // 192.0.0.0/24, IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // 192.0.2.0/24, documentation
        || (a == 192 && b == 88 && c == 99) // 192.88.99.0/24, 6to4 relays (deprecated)
        || (a == 192 && b == 168) // 192.168.0.0/16, private
        || (a == 198 && (b & 0xfe) == 18) // 198.18.0.0/15, benchmarking
        || (a == 198 && b == 51 && c == 100) // 198.51.100.0/24, documentation
        || (a == 203 && b == 0 && c == 113) // 203.0.113.0/24, documentation
        || a >= 224; // 224.0.0.0/4 multicast, 240.0.0.0/4 reserved, 255.255.255.255 broadcast
    !refused
}

/// IPv6: global unicast (2000::/3) but its special-purpose ranges, and the well-known NAT64
/// prefix when the IPv4 address it carries is public. IPv4-mapped (`::ffff:a.b.c.d`) and
/// IPv4-compatible addresses are refused whatever they carry: no webhook needs them, and a
/// socket given one may reach the IPv4 address it names.
pub fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    // 64:ff9b::/96, the well-known NAT64 prefix: as public as the IPv4 address it carries.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [a, b] = s[6].to_be_bytes();
        let [c, d] = s[7].to_be_bytes();
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    let global_unicast = (s[0] & 0xe000) == 0x2000;
    let refused = match s[0] {
        // 2001::/23, IETF protocol assignments (Teredo, ORCHID…); 2001:db8::/32, documentation.
        0x2001 => s[1] < 0x0200 || s[1] == 0x0db8,
        // 2002::/16, 6to4 (deprecated; carries an IPv4 address).
        0x2002 => true,
        // 3fff::/20, documentation.
        first => (first & 0xfff0) == 0x3ff0,
    };
    global_unicast && !refused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(text: &str) -> bool {
        is_public(text.parse().expect("an address"))
    }

    #[test]
    fn loopback_private_and_link_local_addresses_are_not_public() {
        for refused in [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "::1",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "fec0::1",
        ] {
            assert!(!public(refused), "{refused}");
        }
    }

    #[test]
    fn shared_benchmarking_documentation_and_reserved_ranges_are_not_public() {
        for refused in [
            "0.0.0.0",
            "0.1.2.3",
            "100.64.0.1",
            "100.127.255.254",
            "192.0.0.170",
            "192.0.2.10",
            "192.88.99.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "ff02::1",
            "2001:db8::1",
            "3fff::1",
            "2001::1",
            "2002:7f00:1::1",
            "100::1",
        ] {
            assert!(!public(refused), "{refused}");
        }
    }

    #[test]
    fn ipv4_mapped_and_compatible_addresses_are_refused_whatever_they_carry() {
        for refused in ["::ffff:127.0.0.1", "::ffff:93.184.216.34", "::127.0.0.1"] {
            assert!(!public(refused), "{refused}");
        }
    }

    #[test]
    fn nat64_addresses_are_as_public_as_the_ipv4_address_they_carry() {
        assert!(!public("64:ff9b::127.0.0.1"));
        assert!(!public("64:ff9b::10.0.0.1"));
        assert!(!public("64:ff9b::169.254.169.254"));
        assert!(public("64:ff9b::93.184.216.34"));
        assert!(!public("64:ff9b:1::1"), "the local-use NAT64 prefix");
    }

    #[test]
    fn ordinary_public_addresses_are_public() {
        for allowed in [
            "93.184.216.34",
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.0.1",
            "172.32.0.1",
            "198.17.255.255",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "2001:4860:4860::8888",
        ] {
            assert!(public(allowed), "{allowed}");
        }
    }
}
