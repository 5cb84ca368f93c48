// Package webhooksettings is a webhook's delivery settings, kept beside its
// subscription: a rate limit, custom headers, a client certificate for
// mutual TLS, what its deliveries do during an outage, the format of its
// bodies, which events it is sent and its filter. It holds their rules,
// their storage (secrets sealed) and the use cases that the API and the
// web UI both call.
package webhooksettings

import (
	"fmt"
	"math"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// Limits of the settings.
const (
	// MaxRequestsPerSecondLimit is the highest rate limit a webhook may have.
	MaxRequestsPerSecondLimit = 1000
	// MaxHeaders is how many custom headers a webhook may have.
	MaxHeaders = 20
	// MaxHeaderNameBytes and MaxHeaderValueBytes bound one header;
	// MaxHeadersBytes bounds all names and values together, well under what
	// receivers accept in a request's header section (often 8 to 16 KiB).
	MaxHeaderNameBytes  = 256
	MaxHeaderValueBytes = 2048
	MaxHeadersBytes     = 8192
)

// Settings are a webhook's delivery settings as they are shown: a secret
// header's value and the certificate's private key never are.
type Settings struct {
	WebhookID string
	// MaxRequestsPerSecond is nil when deliveries are not rate limited.
	MaxRequestsPerSecond *float64
	Headers              []Header
	// ClientCertificate is nil when no certificate is presented.
	ClientCertificate *CertificateInfo
	// OnOutage is what the webhook's deliveries do while its endpoint
	// breaker is open: deliveries.OnOutageRetry or OnOutageHold. It is
	// the service's default (OnOutageIsDefault) unless the webhook chose.
	OnOutage          string
	OnOutageIsDefault bool
	// Format is the format of its bodies (FormatStandard, ...).
	Format string
	// NotifyOn is NotifyEvery or NotifyStateChange (see StateChangeOnly).
	NotifyOn string
	// Filter is the filter's expression, nil for none.
	Filter *string
	// HasPagerDutyRoutingKey says whether a routing key is stored; the key
	// itself is never shown.
	HasPagerDutyRoutingKey bool
	// UpdatedAt is nil while the webhook has the defaults it was created
	// with.
	UpdatedAt *time.Time
}

// Header is a custom header sent with every delivery attempt.
type Header struct {
	Name string
	// Value is "" for a secret header: it is never shown once stored.
	Value  string
	Secret bool
}

// CertificateInfo describes a stored client certificate (its leaf).
type CertificateInfo struct {
	Subject   string
	Issuer    string
	NotBefore time.Time
	NotAfter  time.Time
	// SHA256 is the hex SHA-256 of the leaf's DER encoding.
	SHA256 string
}

// Update changes some of a webhook's delivery settings; a nil part keeps
// what is stored.
type Update struct {
	Rate        *Rate
	Headers     *[]HeaderInput
	Certificate *CertificateInput
	OnOutage    *OnOutage
	Format      *string
	NotifyOn    *string
	Filter      *FilterInput
	// PagerDutyRoutingKey replaces the stored routing key; nil keeps it.
	// A key is kept only while the format is FormatPagerDuty, which
	// needs one: a format changed to another drops it, and a key sent
	// with another format is a problem.
	PagerDutyRoutingKey *string
}

// FilterInput changes the filter: Expr nil removes it.
type FilterInput struct {
	Expr *string
}

// OnOutage is what a webhook's deliveries do while its endpoint breaker is
// open: Mode "retry" or "hold", or nil for the service's default.
type OnOutage struct {
	Mode *string
}

// Rate is a rate limit: nil MaxRequestsPerSecond is none.
type Rate struct {
	MaxRequestsPerSecond *float64
}

// HeaderInput is one header of an update.
type HeaderInput struct {
	Name string
	// Value nil on a secret header keeps the value stored for the secret
	// header of the same name (names compare without case).
	Value  *string
	Secret bool
}

// CertificateInput changes the client certificate: Remove drops it; both
// PEMs replace it; neither (and not Remove) keeps the one stored, which
// must exist.
type CertificateInput struct {
	Remove         bool
	CertificatePEM string
	PrivateKeyPEM  string
}

// replaces says whether c carries a new certificate.
func (c *CertificateInput) replaces() bool {
	return c != nil && !c.Remove && (c.CertificatePEM != "" || c.PrivateKeyPEM != "")
}

// Problems returns every problem of u that needs nothing stored to find, at
// most one per field (webhooks.Problems), in the order of the fields: the
// rate, the headers (field "headers[i].name" or "headers[i].value"),
// on_outage, format, notify_on, filter, pagerduty_routing_key, then the
// certificate. now decides whether a certificate has expired.
func (u Update) Problems(now time.Time) webhooks.Problems {
	var p webhooks.Problems
	if u.Rate != nil {
		if e := CheckRate(u.Rate.MaxRequestsPerSecond); e != nil {
			p = append(p, e)
		}
	}
	if u.Headers != nil {
		p = append(p, checkHeaders(*u.Headers)...)
	}
	if u.OnOutage != nil {
		if e := CheckOnOutage(u.OnOutage.Mode); e != nil {
			p = append(p, e)
		}
	}
	if u.Format != nil {
		if e := CheckFormat(*u.Format); e != nil {
			p = append(p, e)
		}
	}
	if u.NotifyOn != nil {
		if e := CheckNotifyOn(*u.NotifyOn); e != nil {
			p = append(p, e)
		}
	}
	if u.Filter != nil {
		if e := CheckFilter(u.Filter.Expr); e != nil {
			p = append(p, e)
		}
	}
	if k := u.PagerDutyRoutingKey; k != nil {
		if e := CheckRoutingKey(*k); e != nil {
			p = append(p, e)
		} else if u.Format != nil && *u.Format != FormatPagerDuty {
			p = append(p, errRoutingKeyWithoutPagerDuty(*u.Format))
		}
	}
	if u.Certificate.replaces() {
		if _, e := ParseCertificate(u.Certificate.CertificatePEM, u.Certificate.PrivateKeyPEM, now); e != nil {
			p = append(p, e)
		}
	}
	return p
}

// CheckRate returns the problem of a rate limit, or nil: more than 0 and at
// most MaxRequestsPerSecondLimit, or nil for none.
func CheckRate(r *float64) *webhooks.Error {
	if r == nil {
		return nil
	}
	if v := *r; math.IsNaN(v) || v <= 0 || v > MaxRequestsPerSecondLimit {
		return webhooks.FieldErrorf("max_requests_per_second",
			"max_requests_per_second must be more than 0 and at most %d, or null for no limit; got %s.",
			MaxRequestsPerSecondLimit, formatRate(v))
	}
	return nil
}

// CheckOnOutage returns the problem of an on_outage mode, or nil: "retry",
// "hold", or nil for the service's default.
func CheckOnOutage(mode *string) *webhooks.Error {
	if mode == nil || deliveries.ValidOnOutage(*mode) {
		return nil
	}
	return webhooks.FieldErrorf(fieldOnOutage,
		"on_outage must be %q (deliveries keep their retry schedule), %q (they wait for the endpoint, retries unspent) or null for the service's default; got %q.",
		deliveries.OnOutageRetry, deliveries.OnOutageHold, *mode)
}

// fieldOnOutage names the on_outage setting in problems.
const fieldOnOutage = "on_outage"

func formatRate(v float64) string {
	return fmt.Sprintf("%g", v)
}
