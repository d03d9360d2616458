//! Which IP addresses are global: not in any block of the IANA IPv4 and
//! IPv6 Special-Purpose Address Registries (`iprfc`'s `RFC6890`, a pinned
//! snapshot of both registries), not multicast, and, for IPv6, within
//! global unicast space (`2000::/3`). An IPv6 address that carries an IPv4
//! address the network reaches instead (IPv4-mapped `::ffff:a.b.c.d`,
//! IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is
//! judged by the IPv4 address inside. Teredo (`2001::/32`) and local-use
//! NAT64 (`64:ff9b:1::/48`) are special-purpose blocks of their own and
//! are never global.
//!
//! Every block of the registries counts, the few marked globally reachable
//! (anycast services such as AS112 or PCP) too: no destination a caller
//! names lives there. Classification only; what to do with it is
//! [`super::AddressPolicy`]'s.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use iprfc::{IpNet, RFC6890};

/// Why an address is not global.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inward {
    /// The address as given.
    pub address: IpAddr,
    /// The IPv4 address inside it, when it was judged by that.
    pub inside: Option<Ipv4Addr>,
    /// Where the judged address lies.
    pub block: Block,
}

/// The kind of space a non-global address lies in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Block {
    /// A block of the IANA special-purpose registries.
    SpecialPurpose(IpNet),
    Multicast,
    /// IPv6 outside global unicast space (`2000::/3`).
    NotGlobalUnicast,
}

impl fmt::Display for Inward {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.address)?;
        if let Some(inside) = self.inside {
            write!(f, " (IPv4 {inside} inside)")?;
        }
        match &self.block {
            Block::SpecialPurpose(net) => write!(f, " is in the special-purpose block {net}"),
            Block::Multicast => write!(f, " is a multicast address"),
            Block::NotGlobalUnicast => write!(f, " is outside global unicast space (2000::/3)"),
        }
    }
}

/// `Err` with why, unless `address` is global.
pub fn check(address: IpAddr) -> Result<(), Inward> {
    let inside = match address {
        IpAddr::V4(_) => None,
        IpAddr::V6(v6) => embedded_ipv4(v6),
    };
    let judged = inside.map_or(address, IpAddr::V4);
    match block_of(judged) {
        None => Ok(()),
        Some(block) => Err(Inward {
            address,
            inside,
            block,
        }),
    }
}

/// Whether `address` is global.
pub fn is_global(address: IpAddr) -> bool {
    check(address).is_ok()
}

/// The non-global space `address` lies in, looked at as it is.
fn block_of(address: IpAddr) -> Option<Block> {
    if let Some(net) = RFC6890.ip_nets().iter().find(|net| net.contains(&address)) {
        return Some(Block::SpecialPurpose(*net));
    }
    match address {
        IpAddr::V4(v4) if v4.is_multicast() => Some(Block::Multicast),
        IpAddr::V6(v6) if v6.is_multicast() => Some(Block::Multicast),
        IpAddr::V6(v6) if v6.segments()[0] & 0xe000 != 0x2000 => Some(Block::NotGlobalUnicast),
        _ => None,
    }
}

/// The IPv4 address a packet to `v6` reaches, for the forms that carry
/// one: IPv4-mapped, IPv4-compatible (but `::` and `::1`, which are IPv6's
/// own), NAT64's well-known prefix and 6to4.
fn embedded_ipv4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let segments = v6.segments();
    let last = Ipv4Addr::from_bits(v6.to_bits() as u32);
    match segments {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(last),
        [0, 0, 0, 0, 0, 0, _, _] if !v6.is_unspecified() && !v6.is_loopback() => Some(last),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(last),
        [0x2002, high, low, ..] => Some(Ipv4Addr::from_bits((u32::from(high) << 16) | u32::from(low))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses and whether they are global.
    const TABLE: &[(&str, bool)] = &[
        // IPv4.
        ("8.8.8.8", true),
        ("93.184.216.34", true),
        ("1.1.1.1", true),
        ("127.0.0.1", false),
        ("127.255.255.254", false),
        ("10.1.2.3", false),
        ("172.16.0.1", false),
        ("172.31.255.255", false),
        ("192.168.1.1", false),
        ("169.254.169.254", false),
        ("100.64.0.1", false),
        ("0.0.0.0", false),
        ("0.1.2.3", false),
        ("192.0.0.1", false),
        ("192.0.2.1", false),
        ("198.18.0.1", false),
        ("198.51.100.1", false),
        ("203.0.113.1", false),
        ("224.0.0.1", false),
        ("239.255.255.250", false),
        ("240.0.0.1", false),
        ("255.255.255.255", false),
        // IPv6 of its own.
        ("2606:4700::1111", true),
        ("2a00:1450:4001:82a::200e", true),
        ("::1", false),
        ("::", false),
        ("fc00::1", false),
        ("fd12:3456::1", false),
        ("fe80::1", false),
        ("fec0::1", false),
        ("ff02::1", false),
        ("ff0e::1", false),
        ("2001:db8::1", false),
        ("3fff::1", false),
        ("100::1", false),
        ("4000::1", false),
        // Teredo and local-use NAT64: refused whole.
        ("2001::1", false),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", false),
        ("64:ff9b:1::a00:1", false),
        ("64:ff9b:1::808:808", false),
        // IPv4-mapped: judged by the IPv4 address inside.
        ("::ffff:127.0.0.1", false),
        ("::ffff:10.0.0.1", false),
        ("::ffff:169.254.169.254", false),
        ("::ffff:8.8.8.8", true),
        // IPv4-compatible.
        ("::127.0.0.1", false),
        ("::10.0.0.1", false),
        ("::169.254.169.254", false),
        ("::8.8.8.8", true),
        // NAT64, well-known prefix.
        ("64:ff9b::127.0.0.1", false),
        ("64:ff9b::10.0.0.1", false),
        ("64:ff9b::a9fe:a9fe", false),
        ("64:ff9b::8.8.8.8", true),
        // 6to4.
        ("2002:7f00:1::", false),
        ("2002:a00:1::1", false),
        ("2002:a9fe:a9fe::1", false),
        ("2002:c0a8:101::1", false),
        ("2002:808:808::1", true),
    ];

    #[test]
    fn addresses_are_global_as_the_registries_say() {
        for (address, global) in TABLE {
            let parsed: IpAddr = address.parse().unwrap();
            assert_eq!(is_global(parsed), *global, "{address}: {:?}", check(parsed));
        }
    }

    #[test]
    fn a_refusal_names_the_address_inside_and_its_block() {
        let refusal = check("64:ff9b::7f00:1".parse().unwrap()).unwrap_err();
        assert_eq!(refusal.inside, Some(Ipv4Addr::LOCALHOST));
        assert_eq!(
            refusal.to_string(),
            "64:ff9b::7f00:1 (IPv4 127.0.0.1 inside) is in the special-purpose block 127.0.0.0/8"
        );
        let teredo = check("2001::1".parse().unwrap()).unwrap_err();
        assert_eq!(teredo.inside, None);
        assert!(
            teredo.to_string().contains("special-purpose block 2001::/"),
            "{teredo}"
        );
        assert_eq!(
            check("ff02::1".parse().unwrap()).unwrap_err().block,
            Block::Multicast
        );
    }
}
