// Package netguard decides which network destinations webhook deliveries may
// reach, so a client_url can never point the service at its own network.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/jobhooks/jobhooks"
)

// MaxURLLength is the longest client_url accepted.
const MaxURLLength = 2048

// resolveTimeout bounds the DNS lookup of a client_url's host, so a slow
// resolver cannot hold an API request.
const resolveTimeout = 5 * time.Second

// ErrDestinationNotAllowed is wrapped by every refusal of DialContext.
var ErrDestinationNotAllowed = errors.New("destination address not allowed")

// Policy says which destinations are allowed: every globally reachable
// unicast address, plus the operator's Allow prefixes.
type Policy struct {
	// Allow lists prefixes that are allowed although not global (for
	// example 127.0.0.0/8 in dev mode, or an internal receiver network).
	Allow []netip.Prefix
	// RequireHTTPS refuses http:// client URLs.
	RequireHTTPS bool
	// Internal lists URL prefixes of the service's own endpoints that
	// deliveries may reach although their addresses are not public: the
	// listener relay, RELAY_BASE_URL followed by /relay/v1/. CheckURL
	// accepts a URL that is one of them followed by a single plain path
	// segment (letters, digits, '-' and '_'), with no query or fragment,
	// whatever its address and scheme; DialContext connects to their
	// host:port, as written, without checking its addresses. Any other URL
	// at that host, or at its addresses, is checked as usual, so loopback
	// or a private network is not opened with it.
	Internal []string
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver *net.Resolver
}

const refusalTail = "deliveries to private, loopback, link-local and metadata addresses are not allowed"

// AddrAllowed reports whether ip may be connected to.
func (p *Policy) AddrAllowed(ip netip.Addr) bool {
	return p.refusal(ip) == ""
}

// refusal returns "" when ip is allowed, otherwise the kind of address it is.
func (p *Policy) refusal(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid"
	}
	ip = ip.WithZone("")
	kind := classify(ip)
	if kind == "" {
		return ""
	}
	for _, pre := range p.Allow {
		if pre.Contains(ip) || (ip.Is4In6() && pre.Contains(ip.Unmap())) {
			return ""
		}
	}
	return kind
}

func (p *Policy) resolver() *net.Resolver {
	if p.Resolver != nil {
		return p.Resolver
	}
	return net.DefaultResolver
}

func invalidURL(format string, args ...any) error {
	return webhooks.FieldErrorf("client_url", format, args...)
}

// CheckURL validates a client_url for create and update: an absolute http or
// https URL (https only when RequireHTTPS) with a host, at most MaxURLLength
// characters, without credentials, whose host (an IP literal, or every
// address the name resolves to) is allowed. Failures are EINVALID errors
// naming client_url.
func (p *Policy) CheckURL(ctx context.Context, raw string) error {
	if raw == "" {
		return invalidURL("client_url is required.")
	}
	if len(raw) > MaxURLLength {
		return invalidURL("client_url must be at most %d characters.", MaxURLLength)
	}
	if strings.ContainsAny(raw, " \t\r\n\x00") {
		return invalidURL("client_url must not contain whitespace or control characters.")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return invalidURL("client_url must be an absolute http or https URL, such as https://example.com/webhooks.")
	}
	if p.internalURL(u) {
		return nil
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if p.RequireHTTPS {
			return invalidURL("client_url must use https.")
		}
	default:
		return invalidURL("client_url must use http or https, not %q.", u.Scheme)
	}
	if u.User != nil {
		return invalidURL("client_url must not contain a user name or password.")
	}
	host := u.Hostname()
	if host == "" {
		return invalidURL("client_url must include a host.")
	}
	if port := u.Port(); port != "" {
		if n, err := parsePort(port); err != nil || n == 0 {
			return invalidURL("client_url has an invalid port %q.", port)
		}
	}
	return p.checkHost(ctx, host)
}

func parsePort(s string) (int, error) {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("port %q is not a number", s)
		}
		n = n*10 + int(c-'0')
		if n > 65535 {
			return 0, fmt.Errorf("port %q out of range", s)
		}
	}
	return n, nil
}

// checkHost checks an IP literal, or every address a host name resolves to.
func (p *Policy) checkHost(ctx context.Context, host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if kind := p.refusal(ip); kind != "" {
			return invalidURL("client_url points to %s, %s address; %s.", ip.WithZone(""), article(kind), refusalTail)
		}
		return nil
	}
	if looksNumeric(host) {
		// "127.1", "2130706433", "0x7f.1": some resolvers read these as IPv4.
		return invalidURL("client_url host %q is neither a valid IP address nor a host name.", host)
	}
	if !validHostName(host) {
		return invalidURL("client_url host %q is not a valid host name.", host)
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	ips, err := p.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return invalidURL("client_url host %q could not be resolved.", host)
	}
	for _, ip := range ips {
		if kind := p.refusal(ip); kind != "" {
			return invalidURL("client_url resolves to %s, %s address; %s.", ip.WithZone("").Unmap(), article(kind), refusalTail)
		}
	}
	return nil
}

func article(kind string) string {
	switch {
	case strings.HasPrefix(kind, "unique"):
		return "a " + kind
	case strings.ContainsAny(kind[:1], "aeiouI"):
		return "an " + kind
	}
	return "a " + kind
}

// looksNumeric reports whether the last label of host is all digits or a
// 0x hex number: no real top-level domain is, but inet_aton forms are.
func looksNumeric(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndex(host, ".")+1:]
	if last == "" {
		return false
	}
	if l := strings.ToLower(last); strings.HasPrefix(l, "0x") {
		return true
	}
	return strings.Trim(last, "0123456789") == ""
}

// validHostName accepts letters, digits, hyphens, underscores and dots, in
// labels of 1 to 63 characters; internationalised names must be sent in
// their ASCII (punycode) form.
func validHostName(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if host == "" || len(host) > 253 {
		return false
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
			if !ok {
				return false
			}
		}
	}
	return true
}

// DialContext returns a dial function for http.Transport that resolves the
// host itself, refuses the connection if any address is not allowed, and
// connects to a checked IP, so DNS rebinding between check and connect is
// impossible. Refusals wrap ErrDestinationNotAllowed. The transport must not
// use a proxy (Proxy: nil), or the proxy's address is what gets checked.
func (p *Policy) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if d == nil {
		d = &net.Dialer{}
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, portStr, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		port, err := parsePort(portStr)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		if p.internalAddr(host, port) {
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, fmt.Errorf("dial %s: %w", addr, err)
			}
			return conn, nil
		}
		var ips []netip.Addr
		if ip, err := netip.ParseAddr(host); err == nil {
			ips = []netip.Addr{ip}
		} else {
			ips, err = p.resolver().LookupNetIP(ctx, lookupNetwork(network), host)
			if err != nil {
				return nil, fmt.Errorf("dial %s: resolve: %w", addr, err)
			}
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("dial %s: no addresses", addr)
		}
		for _, ip := range ips {
			if kind := p.refusal(ip); kind != "" {
				return nil, fmt.Errorf("dial %s: %w: %s is %s address", addr, ErrDestinationNotAllowed, ip.WithZone("").Unmap(), article(kind))
			}
		}
		var firstErr error
		for _, ip := range ips {
			conn, err := d.DialContext(ctx, network, netip.AddrPortFrom(ip.WithZone("").Unmap(), uint16(port)).String())
			if err == nil {
				return conn, nil
			}
			if firstErr == nil {
				firstErr = err
			}
			if ctx.Err() != nil {
				break
			}
		}
		return nil, fmt.Errorf("dial %s: %w", addr, firstErr)
	}
}

func lookupNetwork(network string) string {
	switch network {
	case "tcp4", "udp4":
		return "ip4"
	case "tcp6", "udp6":
		return "ip6"
	}
	return "ip"
}

// internalURL reports whether u is one of the Internal prefixes followed
// by one plain path segment: an address of the service's own relay.
func (p *Policy) internalURL(u *url.URL) bool {
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawFragment != "" || u.RawPath != "" {
		return false
	}
	for _, raw := range p.Internal {
		in, err := url.Parse(raw)
		if err != nil || !strings.EqualFold(in.Scheme, u.Scheme) || !strings.EqualFold(in.Hostname(), u.Hostname()) ||
			effectivePort(in) != effectivePort(u) {
			continue
		}
		rest, ok := strings.CutPrefix(u.Path, in.Path)
		if ok && rest != "" && strings.Trim(rest, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == "" {
			return true
		}
	}
	return false
}

// internalAddr reports whether host:port is where an Internal prefix
// points, as written in it.
func (p *Policy) internalAddr(host string, port int) bool {
	for _, raw := range p.Internal {
		in, err := url.Parse(raw)
		if err == nil && in.Hostname() != "" && strings.EqualFold(strings.TrimSuffix(in.Hostname(), "."), strings.TrimSuffix(host, ".")) &&
			effectivePort(in) == port {
			return true
		}
	}
	return false
}

// effectivePort is u's port, or its scheme's default; 0 when unknown.
func effectivePort(u *url.URL) int {
	if s := u.Port(); s != "" {
		n, err := parsePort(s)
		if err != nil {
			return 0
		}
		return n
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return 80
	case "https":
		return 443
	}
	return 0
}
