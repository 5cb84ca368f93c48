package netguard_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/netguard/netguardtest"
)

func TestAddrAllowed(t *testing.T) {
	strict := &netguard.Policy{}
	dev := &netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	tests := []struct {
		addr   string
		strict bool // allowed by the default policy
		dev    bool // allowed when loopback is allowed
	}{
		{"93.184.215.14", true, true},
		{"8.8.8.8", true, true},
		{"1.1.1.1", true, true},
		{"2606:4700:4700::1111", true, true},
		{"2a00:1450:4001:82a::200e", true, true},
		{"127.0.0.1", false, true},
		{"127.255.255.254", false, true},
		{"::1", false, true},
		{"::ffff:127.0.0.1", false, true},
		{"0.0.0.0", false, false},
		{"0.1.2.3", false, false},
		{"::", false, false},
		{"10.0.0.1", false, false},
		{"172.16.0.1", false, false},
		{"172.31.255.255", false, false},
		{"192.168.1.1", false, false},
		{"::ffff:10.0.0.1", false, false},
		{"::ffff:192.168.0.1", false, false},
		{"100.64.0.1", false, false},
		{"100.127.255.255", false, false},
		{"100.100.100.200", false, false},
		{"169.254.169.254", false, false},
		{"169.254.0.1", false, false},
		{"::ffff:169.254.169.254", false, false},
		{"fe80::1", false, false},
		{"fe80::1%eth0", false, false},
		{"fc00::1", false, false},
		{"fd00:ec2::254", false, false},
		{"fd12:3456::1", false, false},
		{"224.0.0.1", false, false},
		{"239.255.255.250", false, false},
		{"ff02::1", false, false},
		{"255.255.255.255", false, false},
		{"240.0.0.1", false, false},
		{"192.0.2.1", false, false},
		{"198.51.100.7", false, false},
		{"203.0.113.9", false, false},
		{"198.18.0.1", false, false},
		{"192.0.0.8", false, false},
		{"2001:db8::1", false, false},
		{"3fff::1", false, false},
		{"64:ff9b::7f00:1", false, false},
		{"2002:7f00:1::1", false, false},
		{"2001::1", false, false},
		{"::127.0.0.1", false, false},
		{"100::1", false, false},
		{"fec0::1", false, false},
		{"4000::1", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			ip := netip.MustParseAddr(tt.addr)
			if got := strict.AddrAllowed(ip); got != tt.strict {
				t.Errorf("default policy: AddrAllowed(%s) = %v, want %v", tt.addr, got, tt.strict)
			}
			if got := dev.AddrAllowed(ip); got != tt.dev {
				t.Errorf("dev policy: AddrAllowed(%s) = %v, want %v", tt.addr, got, tt.dev)
			}
		})
	}
	if strict.AddrAllowed(netip.Addr{}) {
		t.Error("the zero Addr must not be allowed")
	}
}

func TestCheckURL(t *testing.T) {
	resolver := netguardtest.Resolver(t, map[string][]netip.Addr{
		"hooks.example.com":    {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("2606:2800:21f:cb07:6820:80da:af6b:8b2c")},
		"internal.example.com": {netip.MustParseAddr("10.1.2.3")},
		"mixed.example.com":    {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("127.0.0.1")},
		"metadata.example.com": {netip.MustParseAddr("169.254.169.254")},
		"v6local.example.com":  {netip.MustParseAddr("::1")},
	})
	policy := &netguard.Policy{Resolver: resolver}
	tests := []struct {
		name    string
		url     string
		wantMsg string // "" means accepted
	}{
		{"https host", "https://hooks.example.com/webhooks?x=1", ""},
		{"http host", "http://hooks.example.com:8080/path", ""},
		{"upper-case scheme", "HTTPS://hooks.example.com/", ""},
		{"global IPv4 literal", "https://93.184.215.14/hook", ""},
		{"global IPv6 literal", "https://[2606:4700:4700::1111]:8443/hook", ""},
		{"empty", "", "client_url is required"},
		{"too long", "https://hooks.example.com/" + strings.Repeat("a", 2048), "at most 2048 characters"},
		{"relative", "/webhooks", "absolute http or https URL"},
		{"no scheme", "hooks.example.com/webhooks", "absolute http or https URL"},
		{"ftp", "ftp://hooks.example.com/", `not "ftp"`},
		{"javascript", "javascript:alert(1)", "absolute http or https URL"},
		{"no host", "https:///path", "must include a host"},
		{"userinfo", "https://user:pass@hooks.example.com/", "user name or password"},
		{"user only", "https://user@hooks.example.com/", "user name or password"},
		{"space", "https://hooks.example.com/a b", "whitespace"},
		{"bad port", "https://hooks.example.com:99999/", "invalid port"},
		{"port zero", "https://hooks.example.com:0/", "invalid port"},
		{"loopback literal", "http://127.0.0.1:8080/hook", "client_url points to 127.0.0.1, a loopback address; deliveries to private, loopback, link-local and metadata addresses are not allowed."},
		{"private literal", "https://10.0.0.1/", "10.0.0.1, a private address"},
		{"IPv6 loopback", "http://[::1]/", "::1, a loopback address"},
		{"mapped loopback", "http://[::ffff:127.0.0.1]/", "a loopback address"},
		{"metadata literal", "http://169.254.169.254/latest/meta-data", "169.254.169.254, a cloud metadata address"},
		{"link-local v6 zone", "http://[fe80::1%25eth0]/", "a link-local address"},
		{"unspecified", "http://0.0.0.0/", "an unspecified address"},
		{"localhost", "http://localhost:8080/hook", "client_url resolves to 127.0.0.1, a loopback address"},
		{"resolves private", "https://internal.example.com/", "client_url resolves to 10.1.2.3, a private address"},
		{"one of several private", "https://mixed.example.com/", "resolves to 127.0.0.1"},
		{"resolves metadata", "https://metadata.example.com/", "169.254.169.254, a cloud metadata address"},
		{"resolves v6 loopback", "https://v6local.example.com/", "::1, a loopback address"},
		{"short IPv4", "http://127.1/", "neither a valid IP address nor a host name"},
		{"decimal IPv4", "http://2130706433/", "neither a valid IP address nor a host name"},
		{"hex IPv4", "http://0x7f.0x0.0x0.0x1/", "neither a valid IP address nor a host name"},
		{"bad host chars", "http://exa$mple.com/", "not a valid host name"},
		{"octal IPv4", "http://0177.0.0.1/", "neither a valid IP address nor a host name"},
		{"hex-mapped IPv6 loopback", "http://[::ffff:7f00:1]/", "a loopback address"},
		{"percent-encoded host", "https://%31%32%37.0.0.1/", "absolute http or https URL"},
		{"backslash before @", `https://hooks.example.com\@evil.com/`, "absolute http or https URL"},
		{"two ports", "http://1.1.1.1:443:80/", "absolute http or https URL"},
		{"empty label", "https://a..example.com/", "not a valid host name"},
		{"unresolvable", "https://nowhere.example.com/", "could not be resolved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := policy.CheckURL(ctx, tt.url)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v, want nil", tt.url, err)
				}
				return
			}
			var e *webhooks.Error
			if !errors.As(err, &e) {
				t.Fatalf("CheckURL(%q) = %v, want *webhooks.Error", tt.url, err)
			}
			if e.Code != webhooks.EINVALID || e.Field != "client_url" {
				t.Errorf("code, field = %q, %q; want %q, client_url", e.Code, e.Field, webhooks.EINVALID)
			}
			if !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("message %q does not contain %q", e.Message, tt.wantMsg)
			}
		})
	}
}

func TestCheckURL_RequireHTTPS(t *testing.T) {
	p := &netguard.Policy{RequireHTTPS: true}
	ctx := context.Background()
	if err := p.CheckURL(ctx, "http://93.184.215.14/"); err == nil || !strings.Contains(err.Error(), "must use https") {
		t.Errorf("http URL: err = %v, want 'must use https'", err)
	}
	if err := p.CheckURL(ctx, "https://93.184.215.14/"); err != nil {
		t.Errorf("https URL: err = %v", err)
	}
}

func TestCheckURL_AllowedPrefix(t *testing.T) {
	p := &netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.20.0.0/16")}}
	ctx := context.Background()
	for _, u := range []string{"http://127.0.0.1:9000/hook", "http://localhost:9000/hook", "https://10.20.3.4/"} {
		if err := p.CheckURL(ctx, u); err != nil {
			t.Errorf("CheckURL(%q) = %v, want allowed", u, err)
		}
	}
	for _, u := range []string{"https://10.21.0.1/", "http://[::1]/", "http://169.254.169.254/"} {
		if err := p.CheckURL(ctx, u); err == nil {
			t.Errorf("CheckURL(%q) = nil, want refusal", u)
		}
	}
}

func TestDialContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	resolver := netguardtest.Resolver(t, map[string][]netip.Addr{
		"rebind.example.com": {netip.MustParseAddr("127.0.0.1")},
	})

	get := func(p *netguard.Policy, url string) error {
		t.Helper()
		client := &http.Client{
			Timeout:   10 * time.Second,
			Transport: &http.Transport{DialContext: p.DialContext(&net.Dialer{Timeout: 5 * time.Second})},
		}
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		return nil
	}

	strict := &netguard.Policy{Resolver: resolver}
	for _, host := range []string{"127.0.0.1", "rebind.example.com", "localhost", "[::ffff:127.0.0.1]"} {
		err := get(strict, "http://"+host+":"+port+"/")
		if !errors.Is(err, netguard.ErrDestinationNotAllowed) {
			t.Errorf("strict policy, host %s: err = %v, want ErrDestinationNotAllowed", host, err)
		}
	}
	dev := &netguard.Policy{Resolver: resolver, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	for _, host := range []string{"127.0.0.1", "rebind.example.com", "localhost"} {
		if err := get(dev, "http://"+host+":"+port+"/"); err != nil {
			t.Errorf("dev policy, host %s: err = %v, want success", host, err)
		}
	}
}

// TestCheckURL_Internal: the relay's own URLs are allowed on a loopback or
// private address, and nothing else there is: not another path of the same
// host, not the same path on another port or scheme, not a relay URL with
// more than one plain segment, a query, escapes or credentials.
func TestCheckURL_Internal(t *testing.T) {
	p := &netguard.Policy{RequireHTTPS: true, Internal: []string{"http://127.0.0.1:8080/relay/v1/", "http://api.internal:8080/base/relay/v1/"}}
	ctx := context.Background()
	tests := []struct {
		url     string
		allowed bool
	}{
		{"http://127.0.0.1:8080/relay/v1/whr_abc-DEF_123", true},
		{"http://api.internal:8080/base/relay/v1/whr_x", true},
		{"http://API.INTERNAL:8080/base/relay/v1/whr_x", true},
		{"http://127.0.0.1:8080/relay/v1/", false},
		{"http://127.0.0.1:8080/relay/v1/a/b", false},
		{"http://127.0.0.1:8080/relay/v1/..", false},
		{"http://127.0.0.1:8080/relay/v1/%2e%2e", false},
		{"http://127.0.0.1:8080/relay/v1/x?y=1", false},
		{"http://127.0.0.1:8080/relay/v1/x#f", false},
		{"http://u:p@127.0.0.1:8080/relay/v1/x", false},
		{"http://127.0.0.1:8080/api/v3/accounts", false},
		{"http://127.0.0.1:8081/relay/v1/x", false},
		{"https://127.0.0.1:8080/relay/v1/x", false},
		{"http://127.0.0.1/relay/v1/x", false},
		{"http://127.0.0.2:8080/relay/v1/x", false},
		{"http://api.internal:8080/relay/v1/x", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			err := p.CheckURL(ctx, tt.url)
			if tt.allowed && err != nil {
				t.Fatalf("CheckURL = %v, want allowed", err)
			}
			if !tt.allowed && err == nil {
				t.Fatal("CheckURL = nil, want a refusal")
			}
		})
	}
}

// TestDialContext_Internal: the relay's host:port is dialled although it
// is loopback; another port of the same loopback address is still refused.
func TestDialContext_Internal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(other.Close)
	p := &netguard.Policy{Internal: []string{srv.URL + "/relay/v1/"}}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: p.DialContext(nil)}}
	resp, err := client.Get(srv.URL + "/relay/v1/x")
	if err != nil {
		t.Fatalf("relay address: %v, want it dialled", err)
	}
	_ = resp.Body.Close()
	if _, err := client.Get(other.URL + "/relay/v1/x"); !errors.Is(err, netguard.ErrDestinationNotAllowed) {
		t.Fatalf("another loopback port: err = %v, want ErrDestinationNotAllowed", err)
	}
}
