package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// deliverySettingsRequest is the body of PUT: it replaces the rate limit
// and the headers (absent or null: none), on_outage (absent or null: the
// service's default), format, notify_on and filter (absent or null:
// "standard", "every", none); the certificate is kept unless
// client_certificate is present (null removes it, PEMs replace it), and
// the PagerDuty routing key unless pagerduty_routing_key is a string.
// A member it does not know is a 400 naming it; the answer's read-only
// members are known, so a GET answer sent back as is changes nothing.
type deliverySettingsRequest struct {
	MaxRequestsPerSecond *float64             `json:"max_requests_per_second"`
	Headers              deliveryHeadersField `json:"headers"`
	ClientCertificate    certificateField     `json:"client_certificate"`
	OnOutage             *verbatimString      `json:"on_outage"`
	Format               *verbatimString      `json:"format"`
	NotifyOn             *verbatimString      `json:"notify_on"`
	Filter               *verbatimString      `json:"filter"`
	PagerDutyRoutingKey  *verbatimString      `json:"pagerduty_routing_key"`
	// Read-only members of the answer: accepted, never applied.
	WebhookID              json.RawMessage `json:"webhook_id"`
	PagerDutyRoutingKeySet json.RawMessage `json:"pagerduty_routing_key_set"`
	UpdatedAt              json.RawMessage `json:"updated_at"`
}

func (r *deliverySettingsRequest) update() webhooksettings.Update {
	hs := []webhooksettings.HeaderInput(r.Headers)
	if hs == nil {
		hs = []webhooksettings.HeaderInput{}
	}
	u := webhooksettings.Update{
		Rate:                &webhooksettings.Rate{MaxRequestsPerSecond: r.MaxRequestsPerSecond},
		Headers:             &hs,
		OnOutage:            &webhooksettings.OnOutage{Mode: r.OnOutage.stringPtr()},
		Format:              orDefault(r.Format, webhooksettings.FormatStandard),
		NotifyOn:            orDefault(r.NotifyOn, webhooksettings.NotifyEvery),
		Filter:              &webhooksettings.FilterInput{Expr: r.Filter.stringPtr()},
		PagerDutyRoutingKey: r.PagerDutyRoutingKey.stringPtr(),
	}
	switch c := r.ClientCertificate; {
	case !c.present:
	case c.null:
		u.Certificate = &webhooksettings.CertificateInput{Remove: true}
	default:
		u.Certificate = &webhooksettings.CertificateInput{CertificatePEM: c.Certificate, PrivateKeyPEM: c.PrivateKey}
	}
	return u
}

// orDefault is s, or def when s is absent or null.
func orDefault(s *verbatimString, def string) *string {
	if s == nil {
		return &def
	}
	return s.stringPtr()
}

// deliveryHeaderRequest is one header of a PUT. Name and value are taken
// verbatim, so invalid UTF-8 is refused rather than replaced.
type deliveryHeaderRequest struct {
	Name   *verbatimString `json:"name"`
	Value  *verbatimString `json:"value"`
	Secret *bool           `json:"secret"`
}

// deliveryHeadersField decodes headers, naming the element at fault
// (headers[2].value) in a type error or an unknown member.
type deliveryHeadersField []webhooksettings.HeaderInput

func (f *deliveryHeadersField) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return webhooks.FieldErrorf("headers", "headers must be an array of {name, value, secret} objects.")
	}
	out := make([]webhooksettings.HeaderInput, 0, len(raw))
	for i, item := range raw {
		field := fmt.Sprintf("headers[%d]", i)
		if t := bytes.TrimSpace(item); len(t) == 0 || t[0] != '{' {
			return webhooks.FieldErrorf(field, "%s must be an object with name, value and secret.", field)
		}
		var h deliveryHeaderRequest
		if err := decodeMembers(item, &h, field); err != nil {
			return err
		}
		in := webhooksettings.HeaderInput{Value: h.Value.stringPtr(), Secret: h.Secret != nil && *h.Secret}
		if h.Name != nil {
			in.Name = string(*h.Name)
		}
		out = append(out, in)
	}
	*f = out
	return nil
}

// certificateField decodes client_certificate, telling absent (keep) from
// null (remove) from an object.
type certificateField struct {
	present, null bool
	Certificate   string
	PrivateKey    string
}

// certificateRequest is client_certificate in a PUT; the members that
// describe the stored certificate in an answer are accepted and ignored.
type certificateRequest struct {
	Certificate       *string         `json:"certificate"`
	PrivateKey        *string         `json:"private_key"`
	Subject           json.RawMessage `json:"subject"`
	Issuer            json.RawMessage `json:"issuer"`
	NotBefore         json.RawMessage `json:"not_before"`
	NotAfter          json.RawMessage `json:"not_after"`
	FingerprintSHA256 json.RawMessage `json:"fingerprint_sha256"`
}

func (f *certificateField) UnmarshalJSON(b []byte) error {
	f.present = true
	if string(b) == "null" {
		f.null = true
		return nil
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return webhooks.FieldErrorf("client_certificate", "client_certificate must be an object with certificate and private_key (PEM), or null.")
	}
	var c certificateRequest
	if err := decodeMembers(b, &c, "client_certificate"); err != nil {
		return err
	}
	if c.Certificate != nil {
		f.Certificate = *c.Certificate
	}
	if c.PrivateKey != nil {
		f.PrivateKey = *c.PrivateKey
	}
	return nil
}

// memberTypeError is a decoding error inside the object at field.
func memberTypeError(field string, err error) error {
	var fe *webhooks.Error
	if errors.As(err, &fe) {
		return fe
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		f := field + "." + typeErr.Field
		return webhooks.FieldErrorf(f, "%s must be of type %s, got %s.", f, jsonTypeName(typeErr.Type.String()), typeErr.Value)
	}
	return webhooks.FieldErrorf(field, "%s has a member of the wrong type.", field)
}
