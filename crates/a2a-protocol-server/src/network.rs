//! The network a client address is counted in: its /24 for IPv4, its /64 for IPv6 (the block
//! one host is usually given). Shares that are per client (held idempotency keys, open
//! connections) count networks, so a client cannot multiply its share by using its
//! neighbours' addresses.

use std::fmt;
use std::net::IpAddr;

/// A /24 of IPv4 or a /64 of IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Network {
    /// The first three octets of an IPv4 address (an IPv4-mapped IPv6 address included).
    V4([u8; 3]),
    /// The first four segments of an IPv6 address.
    V6([u16; 4]),
}

impl Network {
    /// The network `address` is in.
    pub(crate) fn of(address: IpAddr) -> Self {
        match address.to_canonical() {
            IpAddr::V4(v4) => {
                let [a, b, c, _] = v4.octets();
                Self::V4([a, b, c])
            }
            IpAddr::V6(v6) => {
                let [a, b, c, d, ..] = v6.segments();
                Self::V6([a, b, c, d])
            }
        }
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::V4([a, b, c]) => write!(f, "{a}.{b}.{c}.0/24"),
            Self::V6([a, b, c, d]) => write!(f, "{a:x}:{b:x}:{c:x}:{d:x}::/64"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(address: &str) -> String {
        Network::of(address.parse().expect("an address")).to_string()
    }

    #[test]
    fn addresses_are_counted_by_their_slash_24_or_slash_64() {
        assert_eq!(of("203.0.113.77"), "203.0.113.0/24");
        assert_eq!(of("::ffff:203.0.113.9"), "203.0.113.0/24");
        assert_eq!(of("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(
            Network::of("2001:db8:1:2::9".parse().expect("an address")),
            Network::of("2001:db8:1:2:ffff::".parse().expect("an address"))
        );
        assert_ne!(of("2001:db8:1:3::1"), of("2001:db8:1:2::1"));
    }
}
