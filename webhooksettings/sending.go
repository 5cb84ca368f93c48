package webhooksettings

import (
	"context"
	"crypto/tls"
	"fmt"
)

// Sending is what delivery attempts to one webhook need of its settings,
// with its secrets opened: it stays in the worker's memory, never in
// workflow input, history or logs.
type Sending struct {
	// MaxRequestsPerSecond is nil when the webhook is not rate limited.
	MaxRequestsPerSecond *float64
	// Headers go on every attempt, secret values in clear.
	Headers []Header
	// Certificate is nil when no client certificate is presented.
	Certificate *ClientCertificate
	// Format is the format of the bodies (FormatStandard, ...); "" (the
	// zero Sending of a webhook without settings) is FormatStandard too.
	Format string
	// PagerDutyRoutingKey is the routing key in clear, with FormatPagerDuty.
	PagerDutyRoutingKey string
	// Err, when not nil, says why a secret could not be opened: attempts
	// fail with it rather than go out without what the receiver expects.
	Err error
}

// ClientCertificate is a client certificate with its private key opened.
type ClientCertificate struct {
	// SHA256 identifies the certificate (hex SHA-256 of the leaf).
	SHA256   string
	ChainPEM string
	KeyPEM   string
}

// TLS returns the certificate for a tls.Config.
func (c *ClientCertificate) TLS() (tls.Certificate, error) {
	return tls.X509KeyPair([]byte(c.ChainPEM), []byte(c.KeyPEM))
}

// ForSending returns, for those of ids that have delivery settings, the
// settings with their secrets opened; the others have the defaults.
func (s *Store) ForSending(ctx context.Context, ids []string) (map[string]Sending, error) {
	rows, err := s.q.DeliverySettingsForSending(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("delivery settings of %d webhooks: %w", len(ids), err)
	}
	out := make(map[string]Sending, len(rows))
	for _, r := range rows {
		sending := s.open(r.SubscriptionID, r.MaxRequestsPerSecond, r.Headers,
			r.ClientCertificatePem, r.ClientCertificateSha256, r.ClientKeyKeyID, r.ClientKeyCiphertext)
		sending.Format = r.Format
		if sending.Err == nil && r.PagerdutyRoutingKeyKeyID != nil {
			key, err := s.box.Open(*r.PagerdutyRoutingKeyKeyID, r.PagerdutyRoutingKeyCiphertext, routingKeyAAD(r.SubscriptionID))
			if err != nil {
				sending.Err = fmt.Errorf("the PagerDuty routing key could not be decrypted (key %s)", *r.PagerdutyRoutingKeyKeyID)
			}
			sending.PagerDutyRoutingKey = key
		}
		out[r.SubscriptionID] = sending
	}
	return out, nil
}

func (s *Store) open(id string, rate *float64, rawHeaders []byte, chain, sha, keyID *string, keyCiphertext []byte) Sending {
	out := Sending{MaxRequestsPerSecond: rate}
	stored, err := decodeHeaders(rawHeaders)
	if err != nil {
		out.Err = err
		return out
	}
	for _, h := range stored {
		v := h.Value
		if h.Secret {
			if v, err = s.box.Open(h.KeyID, h.Ciphertext, headerAAD(id, h.Name)); err != nil {
				out.Err = fmt.Errorf("the secret value of header %q could not be decrypted (key %s)", h.Name, h.KeyID)
				return out
			}
		}
		out.Headers = append(out.Headers, Header{Name: h.Name, Value: v, Secret: h.Secret})
	}
	if chain != nil && sha != nil && keyID != nil {
		key, err := s.box.Open(*keyID, keyCiphertext, keyAAD(id))
		if err != nil {
			out.Err = fmt.Errorf("the client certificate's private key could not be decrypted (key %s)", *keyID)
			return out
		}
		out.Certificate = &ClientCertificate{SHA256: *sha, ChainPEM: *chain, KeyPEM: key}
	}
	return out
}

// MaxRequestsPerSecond returns the rate limits of those of ids that have
// one: what the delivery scheduler enforces.
func (s *Store) MaxRequestsPerSecond(ctx context.Context, ids []string) (map[string]float64, error) {
	rows, err := s.q.MaxRequestsPerSecond(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("rate limits of %d webhooks: %w", len(ids), err)
	}
	out := make(map[string]float64, len(rows))
	for _, r := range rows {
		out[r.SubscriptionID] = r.MaxRequestsPerSecond
	}
	return out, nil
}
