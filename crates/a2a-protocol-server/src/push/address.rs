//! Which addresses a webhook may point at: public ones, and whatever the operator allows.
//!
//! A push config names a URL the server will POST to later, so a caller who may create configs
//! could otherwise make the server reach its own loopback, the private network behind it, or a
//! cloud metadata service. Every address is checked twice: when the config is created (a clear
//! `InvalidParams`) and for every address actually connected to at delivery, so a name that
//! resolves elsewhere later (DNS rebinding) gains nothing.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// An address or a CIDR block a webhook may reach although it is not public, such as
/// `127.0.0.1` for local development or `10.0.0.0/8` for a private network.
///
/// ```
/// use a2a_protocol_server::push::AddressRange;
///
/// let range: AddressRange = "10.1.0.0/16".parse()?;
/// assert!(range.contains("10.1.200.3".parse()?));
/// assert!(!range.contains("10.2.0.1".parse()?));
/// let one: AddressRange = "127.0.0.1".parse()?;
/// assert!(one.contains("::ffff:127.0.0.1".parse()?), "IPv4-mapped IPv6 is the same host");
/// assert!("10.0.0.0/33".parse::<AddressRange>().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddressRange {
    network: IpAddr,
    prefix: u8,
}

impl AddressRange {
    /// The block of `network` with the first `prefix` bits fixed; `None` when `prefix` is
    /// longer than the address.
    ///
    /// ```
    /// use a2a_protocol_server::push::AddressRange;
    ///
    /// assert!(AddressRange::new("192.168.0.0".parse().unwrap(), 16).is_some());
    /// assert!(AddressRange::new("192.168.0.0".parse().unwrap(), 40).is_none());
    /// ```
    pub fn new(network: IpAddr, prefix: u8) -> Option<Self> {
        let (network, prefix) = match (network, network.to_canonical()) {
            // `::ffff:10.0.0.0/104` is `10.0.0.0/8`, the form `contains` compares with.
            (IpAddr::V6(_), IpAddr::V4(v4)) if prefix >= 96 => (IpAddr::V4(v4), prefix - 96),
            _ => (network, prefix),
        };
        let bits = match network {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        };
        (prefix <= bits).then_some(Self { network, prefix })
    }

    /// Whether `address` is in the block. IPv4-mapped IPv6 addresses count as the IPv4
    /// address they carry.
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.network, address.to_canonical()) {
            (IpAddr::V4(network), IpAddr::V4(address)) => {
                prefix_matches(&network.octets(), &address.octets(), self.prefix)
            }
            (IpAddr::V6(network), IpAddr::V6(address)) => {
                prefix_matches(&network.octets(), &address.octets(), self.prefix)
            }
            _ => false,
        }
    }
}

impl fmt::Display for AddressRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// Why an allow-list entry could not be read.
///
/// ```
/// use a2a_protocol_server::push::AddressRange;
///
/// let error = "localhost".parse::<AddressRange>().unwrap_err();
/// assert!(error.to_string().contains("an IP address"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{input}` is not an address range: write an IP address (127.0.0.1, ::1) or a CIDR block (10.0.0.0/8, fd00::/8)"
)]
pub struct AddressRangeError {
    input: String,
}

impl FromStr for AddressRange {
    type Err = AddressRangeError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let error = || AddressRangeError {
            input: input.chars().take(64).collect(),
        };
        let (address, prefix) = match input.trim().split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (input.trim(), None),
        };
        let address: IpAddr = address.parse().map_err(|_| error())?;
        let prefix = match prefix {
            Some(prefix) => prefix.parse::<u8>().map_err(|_| error())?,
            None => match address {
                IpAddr::V4(_) => 32,
                IpAddr::V6(_) => 128,
            },
        };
        Self::new(address, prefix).ok_or_else(error)
    }
}

fn prefix_matches(network: &[u8], address: &[u8], prefix: u8) -> bool {
    let whole = usize::from(prefix / 8);
    let rest = prefix % 8;
    if network[..whole] != address[..whole] {
        return false;
    }
    if rest == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest);
    network[whole] & mask == address[whole] & mask
}

/// Whether a webhook may connect to `address`: it is public, or `allowed` lets it through.
pub(crate) fn may_reach(address: IpAddr, allowed: &[AddressRange]) -> bool {
    allowed.iter().any(|range| range.contains(address)) || is_public(address)
}

/// Whether `address` is reachable on the public internet, as far as its number says: not
/// loopback, private, shared (CGNAT), link-local, multicast, documentation, benchmarking or
/// otherwise reserved. IPv6 forms that carry an IPv4 address are judged by that address.
pub(crate) fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(address: Ipv4Addr) -> bool {
    let [a, b, c, _] = address.octets();
    !(a == 0 // "this network"
        || a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT), cloud metadata
        || (a == 169 && b == 254) // link-local, cloud metadata
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // documentation
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast (deprecated)
        || (a == 192 && b == 168)
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // documentation
        || (a == 203 && b == 0 && c == 113) // documentation
        || a >= 224) // multicast, reserved, broadcast
}

fn is_public_v6(address: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(address) {
        return is_public_v4(v4);
    }
    let segments = address.segments();
    !(address.is_unspecified()
        || address.is_loopback()
        || (segments[0] & 0xfe00) == 0xfc00 // unique local (fd00:ec2::254 is a metadata address)
        || (segments[0] & 0xffc0) == 0xfe80 // link-local
        || (segments[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (segments[0] & 0xff00) == 0xff00 // multicast
        || (segments[0] == 0x2001 && segments[1] == 0x0db8) // documentation
        || (segments[0] == 0x0100 && segments[1..4] == [0, 0, 0])) // discard-only
}

/// The IPv4 address an IPv6 address stands for: IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-compatible (`::a.b.c.d`, deprecated) and the NAT64 well-known prefix
/// (`64:ff9b::a.b.c.d`), which a NAT64 gateway would forward to that IPv4 address.
fn embedded_v4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    let segments = address.segments();
    let tail = || {
        let [.., a, b, c, d] = address.octets();
        Ipv4Addr::new(a, b, c, d)
    };
    match segments {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(tail()),
        // `::` and `::1` are judged as IPv6 (unspecified, loopback).
        [0, 0, 0, 0, 0, 0, high, _] if high != 0 => Some(tail()),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(tail()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(address: &str) -> bool {
        is_public(address.parse().expect("an address"))
    }

    #[test]
    fn internal_addresses_are_not_public() {
        for address in [
            "127.0.0.1",
            "127.255.0.9",
            "0.0.0.0",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.100.100.200", // Alibaba Cloud metadata
            "169.254.169.254", // AWS, GCP and Azure metadata
            "192.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe", // NAT64 of 169.254.169.254
            "fc00::1",
            "fd00:ec2::254", // AWS IPv6 metadata
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "100::1",
        ] {
            assert!(!public(address), "{address} must not be public");
        }
    }

    #[test]
    fn internet_addresses_are_public() {
        for address in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "192.169.0.1",
            "203.0.114.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(public(address), "{address} is public");
        }
    }

    #[test]
    fn the_allow_list_lets_chosen_addresses_through() {
        let allowed: Vec<AddressRange> = ["127.0.0.1", "10.0.0.0/8", "fd00::/8"]
            .iter()
            .map(|range| range.parse().expect("a range"))
            .collect();
        for (address, reachable) in [
            ("127.0.0.1", true),
            ("::ffff:127.0.0.1", true),
            ("127.0.0.2", false),
            ("10.9.8.7", true),
            ("11.0.0.1", true),
            ("192.168.0.1", false),
            ("fd12::1", true),
            ("fe80::1", false),
            ("169.254.169.254", false),
        ] {
            let address: IpAddr = address.parse().expect("an address");
            assert_eq!(may_reach(address, &allowed), reachable, "{address}");
        }
        assert!(!may_reach("::1".parse().expect("an address"), &[]));
    }

    #[test]
    fn ranges_parse_and_print() {
        for (input, printed) in [
            ("127.0.0.1", "127.0.0.1/32"),
            (" 10.0.0.0/8 ", "10.0.0.0/8"),
            ("::1", "::1/128"),
            ("fd00::/8", "fd00::/8"),
            ("0.0.0.0/0", "0.0.0.0/0"),
            ("::ffff:10.0.0.0/104", "10.0.0.0/8"),
            ("::ffff:127.0.0.1", "127.0.0.1/32"),
        ] {
            let range: AddressRange = input.parse().expect("a range");
            assert_eq!(range.to_string(), printed, "{input}");
        }
        for bad in [
            "",
            "localhost",
            "10.0.0.0/",
            "10.0.0.0/33",
            "::/129",
            "1.2.3.4/x",
        ] {
            assert!(bad.parse::<AddressRange>().is_err(), "{bad}");
        }
        let any: AddressRange = "0.0.0.0/0".parse().expect("a range");
        assert!(any.contains("203.0.113.9".parse().expect("an address")));
        assert!(!any.contains("::1".parse().expect("an address")));
    }
}
