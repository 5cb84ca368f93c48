package netguard

import "net/netip"

// blockedRange is an address block deliveries must not reach unless an
// operator allows it, with the words used to explain a refusal.
type blockedRange struct {
	prefix netip.Prefix
	kind   string
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// blockedRanges are the special-purpose blocks of the IANA IPv4 and IPv6
// registries that are not globally reachable, plus the ones that embed or
// translate to IPv4 (NAT64, 6to4, Teredo) and could smuggle a private
// address through. More specific blocks come first so messages name them.
var blockedRanges = []blockedRange{
	{mustPrefix("169.254.169.254/32"), "cloud metadata"},
	{mustPrefix("169.254.170.2/32"), "cloud metadata"},
	{mustPrefix("100.100.100.200/32"), "cloud metadata"},
	{mustPrefix("fd00:ec2::254/128"), "cloud metadata"},
	{mustPrefix("0.0.0.0/32"), "unspecified"},
	{mustPrefix("0.0.0.0/8"), `"this network"`},
	{mustPrefix("10.0.0.0/8"), "private"},
	{mustPrefix("100.64.0.0/10"), "carrier-grade NAT (shared)"},
	{mustPrefix("127.0.0.0/8"), "loopback"},
	{mustPrefix("169.254.0.0/16"), "link-local"},
	{mustPrefix("172.16.0.0/12"), "private"},
	{mustPrefix("192.0.0.0/24"), "IETF protocol assignment"},
	{mustPrefix("192.0.2.0/24"), "documentation"},
	{mustPrefix("192.88.99.0/24"), "6to4 relay anycast"},
	{mustPrefix("192.168.0.0/16"), "private"},
	{mustPrefix("198.18.0.0/15"), "benchmarking"},
	{mustPrefix("198.51.100.0/24"), "documentation"},
	{mustPrefix("203.0.113.0/24"), "documentation"},
	{mustPrefix("224.0.0.0/4"), "multicast"},
	{mustPrefix("255.255.255.255/32"), "broadcast"},
	{mustPrefix("240.0.0.0/4"), "reserved"},

	{mustPrefix("::/128"), "unspecified"},
	{mustPrefix("::1/128"), "loopback"},
	{mustPrefix("64:ff9b::/96"), "NAT64"},
	{mustPrefix("64:ff9b:1::/48"), "NAT64"},
	{mustPrefix("100::/64"), "discard-only"},
	{mustPrefix("2001:db8::/32"), "documentation"},
	{mustPrefix("2001:2::/48"), "benchmarking"},
	{mustPrefix("2001::/23"), "IETF protocol assignment"},
	{mustPrefix("2002::/16"), "6to4"},
	{mustPrefix("3fff::/20"), "documentation"},
	{mustPrefix("5f00::/16"), "segment routing"},
	{mustPrefix("fc00::/7"), "unique-local (private)"},
	{mustPrefix("fe80::/10"), "link-local"},
	{mustPrefix("fec0::/10"), "site-local"},
	{mustPrefix("ff00::/8"), "multicast"},
}

// globalUnicastV6 is the only IPv6 space allocated for global unicast; any
// IPv6 address outside it (IPv4-compatible, reserved, ...) is refused.
var globalUnicastV6 = mustPrefix("2000::/3")

// classify returns "" for a globally reachable unicast address, otherwise
// the kind of address it is ("loopback", "private", ...).
func classify(ip netip.Addr) string {
	ip = ip.WithZone("")
	if ip.Is4In6() {
		ip = ip.Unmap()
	}
	for _, r := range blockedRanges {
		if r.prefix.Contains(ip) {
			return r.kind
		}
	}
	if ip.Is6() && !globalUnicastV6.Contains(ip) {
		return "reserved"
	}
	if !ip.IsValid() {
		return "invalid"
	}
	return ""
}
