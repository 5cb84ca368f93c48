package formats

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	webhooks "github.com/jobhooks/jobhooks"
)

// RunLinks makes the link to a run shown in Slack, Teams and PagerDuty
// bodies. The event carries no URL, so a deployment may set a template
// (RUN_URL_TEMPLATE) such as
// https://ci.example.com/deploy/{accountId}/projects/{projectId}/runs/{runId};
// without one, bodies have no link.
type RunLinks struct {
	Template string
}

// MaxRunURLBytes bounds a run's link: Slack's button URLs take at most
// 3,000 characters. A longer link is left out.
const MaxRunURLBytes = 2000

var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

// runURLFields are the placeholders a template may use.
var runURLFields = []string{"{accountId}", "{projectId}", "{environmentId}", "{jobId}", "{runId}"}

// ValidateRunURLTemplate checks a template: "" (no links) or an absolute
// http(s) URL whose placeholders are among runURLFields.
func ValidateRunURLTemplate(t string) error {
	if t == "" {
		return nil
	}
	for _, p := range placeholder.FindAllString(t, -1) {
		if !knownField(p) {
			return fmt.Errorf("unknown placeholder %s (known: %s)", p, strings.Join(runURLFields, ", "))
		}
	}
	u, err := url.Parse(placeholder.ReplaceAllString(t, "x"))
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("must be an absolute http or https URL")
	}
	return nil
}

func knownField(p string) bool {
	for _, f := range runURLFields {
		if f == p {
			return true
		}
	}
	return false
}

// URL is the link to e's run: "" without a template, when a value it
// names is empty (or a dot segment), or when the link would be longer than MaxRunURLBytes.
// Each value is percent-encoded but for unreserved characters, so it is
// one path segment or query value and cannot add markup to a message.
func (l RunLinks) URL(e webhooks.PayloadEnvelope) string {
	if l.Template == "" {
		return ""
	}
	values := map[string]string{
		"{accountId}": strconv.FormatInt(e.AccountID, 10), "{projectId}": e.Data.ProjectID,
		"{environmentId}": e.Data.EnvironmentID, "{jobId}": e.Data.JobID, "{runId}": e.Data.RunID,
	}
	missing := false
	out := placeholder.ReplaceAllStringFunc(l.Template, func(p string) string {
		v := values[p]
		if v == "" || v == "." || v == ".." { // a dot segment would climb the path
			missing = true
		}
		return escapeAll(v)
	})
	if missing || len(out) > MaxRunURLBytes {
		return ""
	}
	return out
}

// escapeAll percent-encodes every byte but the unreserved ones (RFC 3986:
// letters, digits, "-", ".", "_", "~").
func escapeAll(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
