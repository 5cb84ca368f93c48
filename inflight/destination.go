package inflight

import (
	"net"
	"net/url"
	"strings"
)

// Destination is the key that webhooks sharing a receiver's capacity
// share: scheme, host and port of rawURL, lower-cased, with the scheme's
// default port made explicit ("https://Example.com/a" and
// "https://example.com:443/b" are one destination). A URL that does not
// parse is its own destination.
func Destination(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return rawURL
	}
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
