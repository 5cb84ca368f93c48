package webhooksettings

import (
	"fmt"
	"strings"
	"unicode/utf8"

	webhooks "github.com/jobhooks/jobhooks"
)

// Why a header name cannot be configured, by lower-case name. The sender
// sets these itself (activities: signer.go, httpclient.go), the HTTP client
// sets them from the request, or they describe one connection rather than
// the request (hop-by-hop, RFC 9110 7.6.1), which HTTP/2 forbids outright.
var reservedHeaders = map[string]string{
	"authorization":     "carries the delivery's signature",
	"content-type":      "is set by the service (application/json)",
	"content-length":    "is set from the body",
	"content-encoding":  "would misdescribe the body",
	"host":              "is set from client_url",
	"user-agent":        "is set by the service",
	"expect":            "changes how the request is sent",
	"connection":        "is a hop-by-hop header",
	"keep-alive":        "is a hop-by-hop header",
	"te":                "is a hop-by-hop header",
	"trailer":           "is a hop-by-hop header",
	"transfer-encoding": "is a hop-by-hop header",
	"upgrade":           "is a hop-by-hop header",
}

// Reserved name prefixes: the service's own delivery and signature headers
// (webhook-id, webhook-timestamp, webhook-signature, webhook-delivery-id,
// webhook-event-id, webhook-attempt, and any it adds later), and the proxy
// headers.
var reservedPrefixes = map[string]string{
	"webhook-": "is reserved for the delivery and signature headers the service sets",
	"proxy-":   "is a hop-by-hop header",
}

// Reserved says why a header name cannot be configured, or "" when it can.
// The sender skips a reserved header even if one was stored, so none can
// replace what the service sets.
func Reserved(name string) string {
	lower := strings.ToLower(name)
	if why, ok := reservedHeaders[lower]; ok {
		return why
	}
	for prefix, why := range reservedPrefixes {
		if strings.HasPrefix(lower, prefix) {
			return why
		}
	}
	return ""
}

// checkHeaders returns the problems of an update's headers: their count
// and size (field "headers"), then each header's name and value (fields
// "headers[i].name", "headers[i].value").
func checkHeaders(hs []HeaderInput) webhooks.Problems {
	var p webhooks.Problems
	if len(hs) > MaxHeaders {
		return append(p, webhooks.FieldErrorf("headers", "At most %d headers are allowed; got %d.", MaxHeaders, len(hs)))
	}
	seen := map[string]int{}
	total := 0
	for i, h := range hs {
		if e := checkHeaderName(i, h.Name); e != nil {
			p = append(p, e)
		} else if j, dup := seen[strings.ToLower(h.Name)]; dup {
			p = append(p, webhooks.FieldErrorf(headerField(i, "name"),
				"Header %q is given twice (headers[%d] and headers[%d]); names compare without case.", h.Name, j, i))
		} else {
			seen[strings.ToLower(h.Name)] = i
		}
		if e := checkHeaderValue(i, h); e != nil {
			p = append(p, e)
		}
		total += len(h.Name)
		if h.Value != nil {
			total += len(*h.Value)
		}
	}
	if total > MaxHeadersBytes && len(p) == 0 {
		p = append(p, webhooks.FieldErrorf("headers",
			"The headers' names and values come to %d bytes; at most %d are allowed.", total, MaxHeadersBytes))
	}
	return p
}

func headerField(i int, member string) string {
	return fmt.Sprintf("headers[%d].%s", i, member)
}

// checkHeaderName requires an HTTP token (RFC 9110 5.1) that the service
// does not set itself.
func checkHeaderName(i int, name string) *webhooks.Error {
	field := headerField(i, "name")
	switch {
	case name == "":
		return webhooks.FieldErrorf(field, "%s is required.", field)
	case len(name) > MaxHeaderNameBytes:
		return webhooks.FieldErrorf(field, "%s is longer than %d bytes.", field, MaxHeaderNameBytes)
	case !isToken(name):
		return webhooks.FieldErrorf(field,
			"Header name %q is not a valid HTTP header name: use letters, digits and !#$%%&'*+-.^_`|~ only.", name)
	}
	if why := Reserved(name); why != "" {
		return webhooks.FieldErrorf(field, "Header %q cannot be configured: it %s.", name, why)
	}
	return nil
}

// checkHeaderValue requires a value (except a secret one kept as stored)
// that goes on the wire as given: no control characters (CR, LF and NUL
// among them) but tab, no leading or trailing whitespace (receivers would
// strip it), valid UTF-8.
func checkHeaderValue(i int, h HeaderInput) *webhooks.Error {
	field := headerField(i, "value")
	if h.Value == nil {
		if h.Secret {
			return nil // keeps the stored value; the store checks there is one
		}
		return webhooks.FieldErrorf(field, "%s is required (only a secret header's value may be left out, to keep it).", field)
	}
	v := *h.Value
	switch {
	case v == "":
		return webhooks.FieldErrorf(field, "%s must not be empty.", field)
	case len(v) > MaxHeaderValueBytes:
		return webhooks.FieldErrorf(field, "%s is longer than %d bytes.", field, MaxHeaderValueBytes)
	case !utf8.ValidString(v):
		return webhooks.FieldErrorf(field, "%s is not valid UTF-8.", field)
	case strings.IndexFunc(v, func(r rune) bool { return r != '\t' && (r < 0x20 || r == 0x7f) }) >= 0:
		return webhooks.FieldErrorf(field, "%s (header %q) must not contain control characters such as CR, LF or NUL.", field, h.Name)
	case strings.TrimSpace(v) != v:
		return webhooks.FieldErrorf(field, "%s (header %q) must not start or end with whitespace.", field, h.Name)
	}
	return nil
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return s != ""
}
