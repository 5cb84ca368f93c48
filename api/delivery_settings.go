package api

import (
	"net/http"

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
	OnOutage string `json:"on_outage"`
	// Format: "standard", "slack", "teams" or "pagerduty".
	Format string `json:"format"`
	// NotifyOn: "every" or "state_change".
	NotifyOn string `json:"notify_on"`
	// Filter: a CEL expression, or null for none.
	Filter *string `json:"filter"`
	// PagerDutyRoutingKey is write-only: always null, masked like a secret
	// header's value; PagerDutyRoutingKeySet says whether one is stored.
	PagerDutyRoutingKey    *string `json:"pagerduty_routing_key"`
	PagerDutyRoutingKeySet bool    `json:"pagerduty_routing_key_set"`
	UpdatedAt              *string `json:"updated_at"`
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
		Headers: make([]deliveryHeaderJSON, 0, len(s.Headers)), OnOutage: s.OnOutage,
		Format: s.Format, NotifyOn: s.NotifyOn, Filter: s.Filter, PagerDutyRoutingKeySet: s.HasPagerDutyRoutingKey,
		UpdatedAt: microsOrNil(s.UpdatedAt),
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
		"on_outage", settings.OnOutage, "format", settings.Format, "notify_on", settings.NotifyOn,
		"filtered", settings.Filter != nil)
	writeData(c, http.StatusOK, toDeliverySettingsJSON(settings))
}
