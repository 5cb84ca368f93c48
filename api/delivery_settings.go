package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	"github.com/gin-gonic/gin"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// deliverySettingsJSON is a webhook's delivery settings: an object of its
// own, beside the spec's subscription object, which never gains a field.
type deliverySettingsJSON struct {
	WebhookID            string                 `json:"webhook_id"`
	MaxRequestsPerSecond *float64               `json:"max_requests_per_second"`
	Headers              []deliveryHeaderJSON   `json:"headers"`
	ClientCertificate    *clientCertificateJSON `json:"client_certificate"`
	// OnOutage: "retry" or "hold", the service's default unless the
	// webhook chose.
	OnOutage  string  `json:"on_outage"`
	UpdatedAt *string `json:"updated_at"`
}

// deliveryHeaderJSON is a custom header; a secret one's value is masked
// (null): it is never shown once stored.
type deliveryHeaderJSON struct {
	Name   string  `json:"name"`
	Value  *string `json:"value"`
	Secret bool    `json:"secret"`
}

// clientCertificateJSON describes the stored client certificate; its
// private key is never returned.
type clientCertificateJSON struct {
	Subject           string `json:"subject"`
	Issuer            string `json:"issuer"`
	NotBefore         string `json:"not_before"`
	NotAfter          string `json:"not_after"`
	FingerprintSHA256 string `json:"fingerprint_sha256"`
}

func toDeliverySettingsJSON(s webhooksettings.Settings) deliverySettingsJSON {
	out := deliverySettingsJSON{
		WebhookID: s.WebhookID, MaxRequestsPerSecond: s.MaxRequestsPerSecond,
		Headers: make([]deliveryHeaderJSON, 0, len(s.Headers)), OnOutage: s.OnOutage, UpdatedAt: microsOrNil(s.UpdatedAt),
	}
	for _, h := range s.Headers {
		j := deliveryHeaderJSON{Name: h.Name, Secret: h.Secret}
		if !h.Secret {
			j.Value = &h.Value
		}
		out.Headers = append(out.Headers, j)
	}
	if c := s.ClientCertificate; c != nil {
		out.ClientCertificate = &clientCertificateJSON{Subject: c.Subject, Issuer: c.Issuer,
			NotBefore: MicrosString(c.NotBefore), NotAfter: MicrosString(c.NotAfter), FingerprintSHA256: c.SHA256}
	}
	return out
}

// deliverySettingsRequest is the body of PUT: it replaces the rate limit
// and the headers (absent or null: none) and on_outage (absent or null:
// the service's default); the certificate is kept unless
// client_certificate is present (null removes it, PEMs replace it).
type deliverySettingsRequest struct {
	MaxRequestsPerSecond *float64             `json:"max_requests_per_second"`
	Headers              deliveryHeadersField `json:"headers"`
	ClientCertificate    certificateField     `json:"client_certificate"`
	OnOutage             *verbatimString      `json:"on_outage"`
}

func (r *deliverySettingsRequest) update() webhooksettings.Update {
	hs := []webhooksettings.HeaderInput(r.Headers)
	if hs == nil {
		hs = []webhooksettings.HeaderInput{}
	}
	u := webhooksettings.Update{
		Rate:     &webhooksettings.Rate{MaxRequestsPerSecond: r.MaxRequestsPerSecond},
		Headers:  &hs,
		OnOutage: &webhooksettings.OnOutage{Mode: r.OnOutage.stringPtr()},
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

// deliveryHeaderRequest is one header of a PUT. Name and value are taken
// verbatim, so invalid UTF-8 is refused rather than replaced.
type deliveryHeaderRequest struct {
	Name   *verbatimString `json:"name"`
	Value  *verbatimString `json:"value"`
	Secret *bool           `json:"secret"`
}

// deliveryHeadersField decodes headers, naming the element at fault
// (headers[2].value) in a type error.
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
		if err := json.Unmarshal(exactMembers(item, reflect.TypeFor[deliveryHeaderRequest]()), &h); err != nil {
			return memberTypeError(field, err)
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

type certificateRequest struct {
	Certificate *string `json:"certificate"`
	PrivateKey  *string `json:"private_key"`
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
	if err := json.Unmarshal(exactMembers(b, reflect.TypeFor[certificateRequest]()), &c); err != nil {
		return memberTypeError("client_certificate", err)
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
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		f := field + "." + typeErr.Field
		return webhooks.FieldErrorf(f, "%s must be of type %s, got %s.", f, jsonTypeName(typeErr.Type.String()), typeErr.Value)
	}
	return webhooks.FieldErrorf(field, "%s has a member of the wrong type.", field)
}

// needsDeliverySettings answers 503 when the server has no delivery
// settings service (a test without it).
func (s *Server) needsDeliverySettings(h gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.deliverySettings == nil {
			s.writeError(c, webhooks.Errorf(webhooks.EUNAVAILABLE, "Delivery settings are not configured on this server."))
			return
		}
		h(c)
	}
}

// getDeliverySettings answers GET .../delivery-settings (read permission,
// as reading the webhook).
func (s *Server) getDeliverySettings(c *gin.Context) {
	a, id, err := s.webhookTarget(c, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	settings, err := s.deliverySettings.Get(c.Request.Context(), a, id)
	if err != nil {
		s.writeError(c, err)
		return
	}
	writeData(c, http.StatusOK, toDeliverySettingsJSON(settings))
}

// putDeliverySettings answers PUT .../delivery-settings (write permission,
// as updating the webhook, checked before the body is read).
func (s *Server) putDeliverySettings(c *gin.Context) {
	a, id, err := s.webhookTarget(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	var req deliverySettingsRequest
	if err := decodeJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	settings, err := s.deliverySettings.Update(c.Request.Context(), a, id, req.update())
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.logger.InfoContext(c.Request.Context(), "webhook delivery settings updated",
		"account_id", a.Account().ID, "subscription_id", id, "headers", len(settings.Headers),
		"rate_limited", settings.MaxRequestsPerSecond != nil, "client_certificate", settings.ClientCertificate != nil,
		"on_outage", settings.OnOutage)
	writeData(c, http.StatusOK, toDeliverySettingsJSON(settings))
}
