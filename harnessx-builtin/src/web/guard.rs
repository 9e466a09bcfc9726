//! The SSRF guard: which addresses `fetch_url` may connect to, checked after DNS resolution and
//! enforced by a resolver that hands the connector only the addresses it vetted.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Host names of cloud metadata services, refused whatever they resolve to.
const METADATA_HOSTS: [&str; 3] = [
    "metadata.google.internal",
    "metadata.goog",
    "metadata.azure.internal",
];

/// IPv4 addresses of cloud metadata services, refused even with `allow_private_networks`: AWS,
/// GCP, Azure and most others (169.254.169.254), AWS ECS task metadata (169.254.170.2), Alibaba
/// Cloud (100.100.100.200) and Oracle Cloud (192.0.0.192).
const METADATA_V4: [Ipv4Addr; 4] = [
    Ipv4Addr::new(169, 254, 169, 254),
    Ipv4Addr::new(169, 254, 170, 2),
    Ipv4Addr::new(100, 100, 100, 200),
    Ipv4Addr::new(192, 0, 0, 192),
];

/// Why an address is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocked {
    /// A cloud metadata endpoint (169.254.169.254, 192.0.0.192, fd00:ec2::254,
    /// metadata.google.internal, ...).
    Metadata,
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16, fc00::/7.
    Private,
    /// 169.254/16, fe80::/10.
    LinkLocal,
    /// 100.64/10 (carrier-grade NAT).
    SharedAddressSpace,
    /// 0.0.0.0, ::.
    Unspecified,
    /// 224/4, ff00::/8, 255.255.255.255.
    Multicast,
    /// 0/8, 192.0.0/24, documentation and benchmarking ranges, 240/4.
    Reserved,
}

impl Blocked {
    /// A short phrase for messages: "a loopback address".
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::Metadata => "a cloud metadata endpoint",
            Self::Loopback => "a loopback address",
            Self::Private => "a private network address",
            Self::LinkLocal => "a link-local address",
            Self::SharedAddressSpace => "a carrier-grade NAT (shared) address",
            Self::Unspecified => "the unspecified address",
            Self::Multicast => "a multicast or broadcast address",
            Self::Reserved => "a reserved address",
        }
    }

    /// Whether `allow_private_networks` lifts this refusal. Metadata endpoints stay refused unless
    /// the host is listed in `allow_hosts`.
    fn lifted_by_private_networks(self) -> bool {
        !matches!(self, Self::Metadata)
    }
}

/// Classifies an address; `None` means publicly routable.
pub(crate) fn classify(ip: IpAddr) -> Option<Blocked> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Blocked> {
    let [a, b, c, _] = ip.octets();
    if METADATA_V4.contains(&ip) {
        return Some(Blocked::Metadata);
    }
    if ip.is_unspecified() {
        return Some(Blocked::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Blocked::Loopback);
    }
    if ip.is_private() {
        return Some(Blocked::Private);
    }
    if ip.is_link_local() {
        return Some(Blocked::LinkLocal);
    }
    if a == 100 && (b & 0xc0) == 64 {
        return Some(Blocked::SharedAddressSpace);
    }
    if ip.is_multicast() || ip.is_broadcast() {
        return Some(Blocked::Multicast);
    }
    let reserved = a == 0
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 0 && c == 2)
        || (a == 198 && (b & 0xfe) == 18)
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || a >= 240;
    reserved.then_some(Blocked::Reserved)
}

fn classify_v6(ip: Ipv6Addr) -> Option<Blocked> {
    // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d) addresses reach IPv4 hosts.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let seg = ip.segments();
    if seg[..6] == [0; 6] && !(seg[6] == 0 && seg[7] <= 1) {
        return classify_v4(Ipv4Addr::new(
            (seg[6] >> 8) as u8,
            seg[6] as u8,
            (seg[7] >> 8) as u8,
            seg[7] as u8,
        ));
    }
    // 6to4 (2002:AABB:CCDD::/48) routes to the IPv4 address in its second and third segments.
    if seg[0] == 0x2002 {
        return classify_v4(v4_from(seg[1], seg[2]));
    }
    // Teredo (2001:0::/32) carries a server's IPv4 address in segments 2-3 and the client's,
    // inverted, in segments 6-7; refuse when either is refused.
    if seg[0] == 0x2001 && seg[1] == 0 {
        return classify_v4(v4_from(!seg[6], !seg[7])).or(classify_v4(v4_from(seg[2], seg[3])));
    }
    if seg == [0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254] {
        return Some(Blocked::Metadata);
    }
    if ip.is_unspecified() {
        return Some(Blocked::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Blocked::Loopback);
    }
    if (seg[0] & 0xfe00) == 0xfc00 {
        return Some(Blocked::Private);
    }
    if (seg[0] & 0xffc0) == 0xfe80 {
        return Some(Blocked::LinkLocal);
    }
    if ip.is_multicast() {
        return Some(Blocked::Multicast);
    }
    // 64:ff9b::/96 (NAT64) embeds an IPv4 address; judge that address.
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(Ipv4Addr::new(
            (seg[6] >> 8) as u8,
            seg[6] as u8,
            (seg[7] >> 8) as u8,
            seg[7] as u8,
        ));
    }
    // 2001:db8::/32 documentation, 100::/64 discard.
    let reserved = (seg[0] == 0x2001 && seg[1] == 0x0db8) || seg[..4] == [0x100, 0, 0, 0];
    reserved.then_some(Blocked::Reserved)
}

/// The IPv4 address whose high and low 16 bits are `high` and `low`.
fn v4_from(high: u16, low: u16) -> Ipv4Addr {
    Ipv4Addr::from((u32::from(high) << 16) | u32::from(low))
}

/// An address or host the guard refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    pub(crate) host: String,
    pub(crate) addr: String,
    pub(crate) kind: Blocked,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host == self.addr {
            write!(f, "{} is {}", self.host, self.kind.describe())?;
        } else {
            write!(
                f,
                "{} resolves to {}, {}",
                self.host,
                self.addr,
                self.kind.describe()
            )?;
        }
        match self.kind {
            Blocked::Metadata => f.write_str(", which this tool never reaches"),
            _ => f.write_str(", and this tool may only reach public internet addresses"),
        }
    }
}

impl std::error::Error for Refused {}

/// The address policy of one fetcher.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    /// Lifts every refusal except cloud metadata endpoints.
    pub(crate) allow_private_networks: bool,
    /// Hosts (lowercase names or IP literals) exempt from every check.
    pub(crate) allow_hosts: Vec<String>,
}

impl Policy {
    fn exempt(&self, host: &str) -> bool {
        let host = normalize_host(host);
        self.allow_hosts.iter().any(|h| normalize_host(h) == host)
    }

    fn refuses(&self, kind: Blocked) -> bool {
        !(self.allow_private_networks && kind.lifted_by_private_networks())
    }

    /// Checks a URL host before any connection: metadata names and IP literals (which never go
    /// through the resolver).
    pub(crate) fn check_host(&self, host: &url::Host<&str>) -> Result<(), Refused> {
        let ip = match host {
            url::Host::Domain(name) => {
                if self.exempt(name) {
                    return Ok(());
                }
                let name = normalize_host(name);
                if METADATA_HOSTS.contains(&name.as_str()) {
                    return Err(Refused {
                        host: name.clone(),
                        addr: name,
                        kind: Blocked::Metadata,
                    });
                }
                return Ok(());
            }
            url::Host::Ipv4(v4) => IpAddr::V4(*v4),
            url::Host::Ipv6(v6) => IpAddr::V6(*v6),
        };
        let text = ip.to_string();
        if self.exempt(&text) {
            return Ok(());
        }
        self.check_addr(&text, ip)
    }

    /// Checks one resolved address of `host`.
    pub(crate) fn check_addr(&self, host: &str, ip: IpAddr) -> Result<(), Refused> {
        match classify(ip) {
            Some(kind) if self.refuses(kind) => Err(Refused {
                host: host.to_owned(),
                addr: ip.to_string(),
                kind,
            }),
            _ => Ok(()),
        }
    }
}

fn normalize_host(host: &str) -> String {
    host.trim_matches(|c| c == '[' || c == ']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// A DNS resolver that refuses a name when any of its addresses is refused by the [`Policy`], and
/// otherwise hands the connector exactly the addresses it checked, so a second lookup (DNS
/// rebinding) can never switch the connection to another address.
#[derive(Debug, Clone)]
pub(crate) struct GuardedResolver {
    pub(crate) policy: Arc<Policy>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.policy);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !policy.exempt(&host) {
                for addr in &addrs {
                    policy.check_addr(&host, addr.ip())?;
                }
            }
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// Finds a [`Refused`] in an error's source chain (the resolver's refusal arrives wrapped in
/// reqwest's and hyper's connect errors).
pub(crate) fn find_refusal(err: &(dyn std::error::Error + 'static)) -> Option<Refused> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(r) = e.downcast_ref::<Refused>() {
            return Some(r.clone());
        }
        current = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> Option<Blocked> {
        classify(s.parse().unwrap())
    }

    #[test]
    fn classifies_the_ranges_the_guard_refuses() {
        assert_eq!(kind("127.0.0.1"), Some(Blocked::Loopback));
        assert_eq!(kind("127.255.0.9"), Some(Blocked::Loopback));
        assert_eq!(kind("::1"), Some(Blocked::Loopback));
        assert_eq!(kind("10.1.2.3"), Some(Blocked::Private));
        assert_eq!(kind("172.16.0.1"), Some(Blocked::Private));
        assert_eq!(kind("172.31.255.255"), Some(Blocked::Private));
        assert_eq!(kind("192.168.1.1"), Some(Blocked::Private));
        assert_eq!(kind("fc00::1"), Some(Blocked::Private));
        assert_eq!(kind("fdff::1"), Some(Blocked::Private));
        assert_eq!(kind("169.254.1.1"), Some(Blocked::LinkLocal));
        assert_eq!(kind("fe80::1"), Some(Blocked::LinkLocal));
        assert_eq!(kind("100.64.0.1"), Some(Blocked::SharedAddressSpace));
        assert_eq!(kind("100.127.255.255"), Some(Blocked::SharedAddressSpace));
        assert_eq!(kind("0.0.0.0"), Some(Blocked::Unspecified));
        assert_eq!(kind("::"), Some(Blocked::Unspecified));
        assert_eq!(kind("224.0.0.1"), Some(Blocked::Multicast));
        assert_eq!(kind("255.255.255.255"), Some(Blocked::Multicast));
        assert_eq!(kind("ff02::1"), Some(Blocked::Multicast));
        assert_eq!(kind("169.254.169.254"), Some(Blocked::Metadata));
        assert_eq!(kind("fd00:ec2::254"), Some(Blocked::Metadata));
        assert_eq!(kind("0.1.2.3"), Some(Blocked::Reserved));
        assert_eq!(kind("240.0.0.1"), Some(Blocked::Reserved));
    }

    #[test]
    fn judges_ipv4_embedded_in_ipv6_by_the_ipv4_address() {
        assert_eq!(kind("::ffff:127.0.0.1"), Some(Blocked::Loopback));
        assert_eq!(kind("::ffff:169.254.169.254"), Some(Blocked::Metadata));
        assert_eq!(kind("::10.0.0.1"), Some(Blocked::Private));
        assert_eq!(kind("64:ff9b::192.168.0.1"), Some(Blocked::Private));
        assert_eq!(kind("::ffff:93.184.216.34"), None);
    }

    #[test]
    fn judges_the_ipv4_addresses_in_6to4_and_teredo() {
        // 6to4: 2002:AABB:CCDD:: embeds AA.BB.CC.DD.
        assert_eq!(kind("2002:7f00:1::"), Some(Blocked::Loopback));
        assert_eq!(kind("2002:a9fe:a9fe::1"), Some(Blocked::Metadata));
        assert_eq!(kind("2002:c000:c0::"), Some(Blocked::Metadata));
        assert_eq!(kind("2002:c0a8:101:1::1"), Some(Blocked::Private));
        assert_eq!(kind("2002:5db8:d822::1"), None); // 93.184.216.34
        // Teredo: the client's address inverted in the last 32 bits, the server's in bits 32-63.
        // Client 127.0.0.1 = !0x7f00_0001 = 80ff:fffe; server 65.54.227.120 (public).
        assert_eq!(
            kind("2001:0:4136:e378:8000:63bf:80ff:fffe"),
            Some(Blocked::Loopback)
        );
        // Client 169.254.169.254 = !0xa9fe_a9fe = 5601:5601.
        assert_eq!(
            kind("2001:0:4136:e378:8000:63bf:5601:5601"),
            Some(Blocked::Metadata)
        );
        // A private server, public client (93.184.216.34 = !0x5db8_d822 = a247:27dd).
        assert_eq!(
            kind("2001:0:a00:1:8000:63bf:a247:27dd"),
            Some(Blocked::Private)
        );
        // Public server and client.
        assert_eq!(kind("2001:0:4136:e378:8000:63bf:a247:27dd"), None);
        // Other 2001::/16 addresses are not Teredo.
        assert_eq!(kind("2001:4860:4860::8888"), None);
    }

    #[test]
    fn oracle_cloud_metadata_stays_refused_with_private_networks_allowed() {
        assert_eq!(kind("192.0.0.192"), Some(Blocked::Metadata));
        assert_eq!(kind("169.254.170.2"), Some(Blocked::Metadata));
        assert_eq!(kind("192.0.0.1"), Some(Blocked::Reserved));
        let policy = Policy {
            allow_private_networks: true,
            allow_hosts: vec![],
        };
        for ip in [
            "192.0.0.192",
            "::ffff:192.0.0.192",
            "2002:c000:c0::",
            "2002:a9fe:a9fe::",
            "2001:0:4136:e378:8000:63bf:5601:5601",
        ] {
            let err = policy
                .check_host(&url::Host::Ipv6(match ip.parse::<IpAddr>().unwrap() {
                    IpAddr::V6(v6) => v6,
                    IpAddr::V4(v4) => v4.to_ipv6_mapped(),
                }))
                .unwrap_err();
            assert_eq!(err.kind, Blocked::Metadata, "{ip}");
        }
        // The private ranges inside 6to4 are lifted like plain IPv4 ones.
        assert!(
            policy
                .check_addr("h", "2002:c0a8:101::1".parse().unwrap())
                .is_ok()
        );
        let err = policy
            .check_addr("h", "192.0.0.192".parse().unwrap())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "h resolves to 192.0.0.192, a cloud metadata endpoint, which this tool never reaches"
        );
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "93.184.216.34",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
        ] {
            assert_eq!(kind(ip), None, "{ip}");
        }
    }

    #[test]
    fn allow_private_networks_keeps_metadata_refused() {
        let policy = Policy {
            allow_private_networks: true,
            allow_hosts: vec![],
        };
        assert!(policy.check_addr("h", "127.0.0.1".parse().unwrap()).is_ok());
        assert!(policy.check_addr("h", "10.0.0.1".parse().unwrap()).is_ok());
        let err = policy
            .check_addr("h", "169.254.169.254".parse().unwrap())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "h resolves to 169.254.169.254, a cloud metadata endpoint, which this tool never reaches"
        );
        let err = policy
            .check_host(&url::Host::Domain("Metadata.Google.Internal."))
            .unwrap_err();
        assert_eq!(err.kind, Blocked::Metadata);
    }

    #[test]
    fn allow_hosts_exempts_exactly_the_listed_hosts() {
        let policy = Policy {
            allow_private_networks: false,
            allow_hosts: vec!["127.0.0.1".into(), "Intranet.Example".into()],
        };
        assert!(
            policy
                .check_host(&url::Host::Ipv4("127.0.0.1".parse().unwrap()))
                .is_ok()
        );
        assert!(
            policy
                .check_host(&url::Host::Ipv4("127.0.0.2".parse().unwrap()))
                .is_err()
        );
        assert!(policy.exempt("intranet.example"));
        assert!(!policy.exempt("localhost"));
    }
}
