package webhooksettings

import (
	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/eventfilter"
)

// Formats of a webhook's bodies (the format setting).
const (
	// FormatStandard is the spec's body, unchanged: the default.
	FormatStandard  = "standard"
	FormatSlack     = "slack"
	FormatTeams     = "teams"
	FormatPagerDuty = "pagerduty"
)

// Which events a webhook is sent (the notify_on setting).
const (
	// NotifyEvery sends every event that matches: the spec's outcome and
	// the default.
	NotifyEvery = "every"
	// NotifyStateChange sends, per job, only its first failure and its
	// recovery.
	NotifyStateChange = "state_change"
)

// Fields of the settings that problems name.
const (
	fieldFormat     = "format"
	fieldNotifyOn   = "notify_on"
	fieldFilter     = "filter"
	fieldRoutingKey = "pagerduty_routing_key"
)

// MaxRoutingKeyBytes bounds a PagerDuty routing key (PagerDuty's are 32
// characters).
const MaxRoutingKeyBytes = 128

// Formats lists every format, the default first.
var Formats = []string{FormatStandard, FormatSlack, FormatTeams, FormatPagerDuty}

// StateChangeOnly reports whether a webhook with this format and notify_on
// is sent only a job's state changes: with notify_on state_change, and
// always with the pagerduty format (one incident opened at a job's first
// failure, resolved at its recovery).
func StateChangeOnly(format, notifyOn string) bool {
	return notifyOn == NotifyStateChange || format == FormatPagerDuty
}

// CheckFormat returns the problem of a format, or nil.
func CheckFormat(format string) *webhooks.Error {
	for _, f := range Formats {
		if f == format {
			return nil
		}
	}
	return webhooks.FieldErrorf(fieldFormat, "format must be one of %q, %q, %q or %q; got %q.",
		FormatStandard, FormatSlack, FormatTeams, FormatPagerDuty, format)
}

// CheckNotifyOn returns the problem of a notify_on value, or nil.
func CheckNotifyOn(notifyOn string) *webhooks.Error {
	if notifyOn == NotifyEvery || notifyOn == NotifyStateChange {
		return nil
	}
	return webhooks.FieldErrorf(fieldNotifyOn,
		"notify_on must be %q (every matching event) or %q (a job's first failure and its recovery); got %q.",
		NotifyEvery, NotifyStateChange, notifyOn)
}

// CheckFilter returns the problem of a filter, or nil: the compiler's
// message when it does not compile (eventfilter.Compile).
func CheckFilter(expr *string) *webhooks.Error {
	if expr == nil {
		return nil
	}
	if _, err := eventfilter.Compile(*expr); err != nil {
		return filterProblem(err)
	}
	return nil
}

func filterProblem(err error) *webhooks.Error {
	return webhooks.FieldErrorf(fieldFilter, "filter is not a valid filter: %s", err)
}

// CheckRoutingKey returns the problem of a PagerDuty routing key, or nil:
// 1 to MaxRoutingKeyBytes printable ASCII characters without spaces.
func CheckRoutingKey(key string) *webhooks.Error {
	ok := len(key) > 0 && len(key) <= MaxRoutingKeyBytes
	for i := 0; ok && i < len(key); i++ {
		ok = key[i] > ' ' && key[i] < 0x7f
	}
	if !ok {
		return webhooks.FieldErrorf(fieldRoutingKey,
			"pagerduty_routing_key must be the integration's routing key: 1 to %d printable characters without spaces.", MaxRoutingKeyBytes)
	}
	return nil
}

// routingKeyAAD binds a sealed routing key to its webhook and purpose.
func routingKeyAAD(webhookID string) string { return webhookID + "/pagerduty-routing-key" }

func errRoutingKeyWithoutPagerDuty(format string) *webhooks.Error {
	return webhooks.FieldErrorf(fieldRoutingKey,
		"pagerduty_routing_key is only kept with format %q; this webhook's format is %q.", FormatPagerDuty, format)
}

// mergeFormats applies u's format, notify_on, filter and routing key to m,
// sealing a new routing key; its problems are those only the stored
// settings reveal (pagerduty without a routing key to keep).
func (s *Store) mergeFormats(webhookID string, m *merged, u Update) webhooks.Problems {
	if u.Format != nil {
		m.Format = *u.Format
	}
	if u.NotifyOn != nil {
		m.NotifyOn = *u.NotifyOn
	}
	if u.Filter != nil {
		m.Filter = u.Filter.Expr
	}
	switch {
	case m.Format != FormatPagerDuty && u.PagerDutyRoutingKey != nil:
		return webhooks.Problems{errRoutingKeyWithoutPagerDuty(m.Format)}
	case m.Format != FormatPagerDuty:
		m.PagerdutyRoutingKeyKeyID, m.PagerdutyRoutingKeyCiphertext = nil, nil
	case u.PagerDutyRoutingKey != nil:
		keyID, sealed := s.box.Seal(*u.PagerDutyRoutingKey, routingKeyAAD(webhookID))
		m.PagerdutyRoutingKeyKeyID, m.PagerdutyRoutingKeyCiphertext = &keyID, sealed
	case m.PagerdutyRoutingKeyKeyID == nil:
		return webhooks.Problems{webhooks.FieldErrorf(fieldRoutingKey,
			"format %q needs pagerduty_routing_key, the routing key of the PagerDuty service's Events API v2 integration.", FormatPagerDuty)}
	}
	return nil
}
