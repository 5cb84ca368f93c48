package webhooksettings

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// Store is the delivery settings of every webhook in PostgreSQL
// (webhook_delivery_settings). Secret header values and private keys are
// stored only sealed by the Box, bound to their webhook and purpose.
type Store struct {
	pool *pgxpool.Pool
	q    *dbq.Queries
	box  *secrets.Box
}

// NewStore returns a Store on pool that seals secrets with box.
func NewStore(pool *pgxpool.Pool, box *secrets.Box) *Store {
	return &Store{pool: pool, q: dbq.New(pool), box: box}
}

// storedHeader is one element of the headers column: a plain value, or a
// secret one sealed (key_id, ciphertext base64).
type storedHeader struct {
	Name       string `json:"name"`
	Secret     bool   `json:"secret"`
	Value      string `json:"value,omitempty"`
	KeyID      string `json:"key_id,omitempty"`
	Ciphertext []byte `json:"ciphertext,omitempty"`
}

// headerAAD and keyAAD bind a sealed value to its webhook and purpose, so
// a ciphertext copied to another webhook, header or column does not open.
func headerAAD(webhookID, name string) string {
	return webhookID + "/header/" + strings.ToLower(name)
}

func keyAAD(webhookID string) string { return webhookID + "/client-key" }

// Get returns the settings of a live webhook of the account (the defaults
// when it has none), or subscriptions.ErrNotFound.
func (s *Store) Get(ctx context.Context, accountID int64, webhookID string) (Settings, error) {
	r, err := s.q.GetDeliverySettings(ctx, dbq.GetDeliverySettingsParams{ID: webhookID, AccountID: accountID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Settings{}, subscriptions.ErrNotFound
	} else if err != nil {
		return Settings{}, fmt.Errorf("get delivery settings of %s: %w", webhookID, err)
	}
	stored, err := decodeHeaders(r.Headers)
	if err != nil {
		return Settings{}, fmt.Errorf("delivery settings of %s: %w", webhookID, err)
	}
	out := Settings{WebhookID: webhookID, MaxRequestsPerSecond: r.MaxRequestsPerSecond, Headers: shown(stored),
		OnOutage: stringOrEmpty(r.OnOutage), Format: FormatStandard, NotifyOn: NotifyEvery, Filter: r.Filter,
		HasPagerDutyRoutingKey: r.HasPagerdutyRoutingKey, UpdatedAt: r.UpdatedAt}
	if r.Format != nil { // a row: no row has the defaults
		out.Format, out.NotifyOn = *r.Format, stringOrEmpty(r.NotifyOn)
	}
	if r.ClientCertificatePem != nil {
		info, err := describe(*r.ClientCertificatePem)
		if err != nil {
			return Settings{}, fmt.Errorf("client certificate of %s: %w", webhookID, err)
		}
		out.ClientCertificate = &info
	}
	return out, nil
}

// Update applies u, whose Problems are none, to the settings of a live
// webhook of the account. The row is locked while u is merged, so
// concurrent updates apply one after another. A secret header kept without
// its value, or a certificate kept, that is not stored is a problem of the
// field (webhooks.Problems); nothing is stored then. A rate limit moves a
// webhook on the shared route to its own lane in the same transaction
// (deliveries.Transitions): only its lane keeps the limit, so no shared
// round takes its deliveries.
func (s *Store) Update(ctx context.Context, accountID int64, webhookID string, u Update, now time.Time) (Settings, error) {
	out, _, err := s.update(ctx, accountID, webhookID, u, now)
	return out, err
}

// rateLimitRoute is the route_reason of a webhook a rate limit moved.
const rateLimitRoute = "it has a rate limit (max_requests_per_second), kept by its own lane"

// update is Update, and says whether the webhook moved to its own lane.
func (s *Store) update(ctx context.Context, accountID int64, webhookID string, u Update, now time.Time) (Settings, []deliveries.Moved, error) {
	var out Settings
	var moved []deliveries.Moved
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		moved = nil
		q := s.q.WithTx(tx)
		key := dbq.EnsureDeliverySettingsParams{ID: webhookID, AccountID: accountID}
		if err := q.EnsureDeliverySettings(ctx, key); err != nil {
			return err
		}
		cur, err := q.LockDeliverySettings(ctx, dbq.LockDeliverySettingsParams(key))
		if errors.Is(err, pgx.ErrNoRows) {
			return subscriptions.ErrNotFound
		} else if err != nil {
			return err
		}
		p, err := s.merge(webhookID, cur, u, now)
		if err != nil {
			return err
		}
		headers, err := json.Marshal(p.headersColumn())
		if err != nil {
			return err
		}
		updatedAt, err := q.UpdateDeliverySettings(ctx, dbq.UpdateDeliverySettingsParams{
			ID: webhookID, AccountID: accountID, MaxRequestsPerSecond: p.MaxRequestsPerSecond, Headers: headers,
			ClientCertificatePem: p.ClientCertificatePem, ClientCertificateSha256: p.ClientCertificateSha256,
			ClientKeyKeyID: p.ClientKeyKeyID, ClientKeyCiphertext: p.ClientKeyCiphertext, OnOutage: p.OnOutage,
			Format: p.Format, NotifyOn: p.NotifyOn, Filter: p.Filter,
			PagerdutyRoutingKeyKeyID: p.PagerdutyRoutingKeyKeyID, PagerdutyRoutingKeyCiphertext: p.PagerdutyRoutingKeyCiphertext,
		})
		if err != nil {
			return err
		}
		if p.MaxRequestsPerSecond != nil {
			moved, err = deliveries.SetRouteIn(ctx, tx, deliveries.RouteChange{IDs: []string{webhookID},
				From: []string{deliveries.RouteShared}, To: deliveries.RouteOwn, Reason: rateLimitRoute})
			if err != nil {
				return err
			}
		}
		out = Settings{WebhookID: webhookID, MaxRequestsPerSecond: p.MaxRequestsPerSecond, Headers: shown(p.headers),
			OnOutage: stringOrEmpty(p.OnOutage), Format: p.Format, NotifyOn: p.NotifyOn, Filter: p.Filter,
			HasPagerDutyRoutingKey: p.PagerdutyRoutingKeyKeyID != nil, UpdatedAt: &updatedAt}
		if p.ClientCertificatePem != nil {
			info, err := describe(*p.ClientCertificatePem)
			if err != nil {
				return err
			}
			out.ClientCertificate = &info
		}
		return nil
	})
	var problems webhooks.Problems
	switch {
	case errors.Is(err, subscriptions.ErrNotFound):
		return Settings{}, nil, subscriptions.ErrNotFound
	case errors.As(err, &problems):
		return Settings{}, nil, problems
	case err != nil:
		return Settings{}, nil, fmt.Errorf("update delivery settings of %s: %w", webhookID, err)
	}
	return out, moved, nil
}

// merged is a row as an update leaves it.
type merged struct {
	dbq.LockDeliverySettingsRow
	headers []storedHeader
}

// headersColumn is the headers column's value: never null.
func (m merged) headersColumn() []storedHeader {
	if m.headers == nil {
		return []storedHeader{}
	}
	return m.headers
}

// merge applies u to the locked row cur, sealing new secrets; kept secrets
// and a kept certificate are taken from cur.
func (s *Store) merge(webhookID string, cur dbq.LockDeliverySettingsRow, u Update, now time.Time) (merged, error) {
	m := merged{LockDeliverySettingsRow: cur}
	var err error
	if m.headers, err = decodeHeaders(cur.Headers); err != nil {
		return merged{}, err
	}
	var problems webhooks.Problems
	if u.Rate != nil {
		m.MaxRequestsPerSecond = u.Rate.MaxRequestsPerSecond
	}
	if u.OnOutage != nil {
		m.OnOutage = u.OnOutage.Mode
	}
	if u.Headers != nil {
		next := make([]storedHeader, 0, len(*u.Headers))
		for i, h := range *u.Headers {
			switch {
			case !h.Secret:
				next = append(next, storedHeader{Name: h.Name, Value: *h.Value})
			case h.Value != nil:
				keyID, sealed := s.box.Seal(*h.Value, headerAAD(webhookID, h.Name))
				next = append(next, storedHeader{Name: h.Name, Secret: true, KeyID: keyID, Ciphertext: sealed})
			default:
				kept, ok := findSecret(m.headers, h.Name)
				if !ok {
					problems = append(problems, webhooks.FieldErrorf(headerField(i, "value"),
						"Header %q has no stored secret value to keep; send its value.", h.Name))
					continue
				}
				kept.Name = h.Name
				next = append(next, kept)
			}
		}
		m.headers = next
	}
	switch c := u.Certificate; {
	case c == nil:
	case c.Remove:
		m.ClientCertificatePem, m.ClientCertificateSha256, m.ClientKeyKeyID, m.ClientKeyCiphertext = nil, nil, nil, nil
	case c.replaces():
		parsed, e := ParseCertificate(c.CertificatePEM, c.PrivateKeyPEM, now)
		if e != nil {
			problems = append(problems, e)
			break
		}
		keyID, sealed := s.box.Seal(parsed.KeyPEM, keyAAD(webhookID))
		m.ClientCertificatePem, m.ClientCertificateSha256 = &parsed.ChainPEM, &parsed.Info.SHA256
		m.ClientKeyKeyID, m.ClientKeyCiphertext = &keyID, sealed
	case m.ClientCertificatePem == nil:
		problems = append(problems, webhooks.FieldErrorf(fieldCertificate,
			"No client certificate is stored to keep; send certificate and private_key to set one."))
	}
	problems = append(problems, s.mergeFormats(webhookID, &m, u)...)
	if len(problems) > 0 {
		return merged{}, problems
	}
	return m, nil
}

func stringOrEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// findSecret returns the stored secret header named name (without case).
func findSecret(hs []storedHeader, name string) (storedHeader, bool) {
	for _, h := range hs {
		if h.Secret && strings.EqualFold(h.Name, name) {
			return h, true
		}
	}
	return storedHeader{}, false
}

func decodeHeaders(raw []byte) ([]storedHeader, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var hs []storedHeader
	if err := json.Unmarshal(raw, &hs); err != nil {
		return nil, fmt.Errorf("decode stored headers: %w", err)
	}
	return hs, nil
}

// shown is stored headers as they are shown: secret values left out.
func shown(hs []storedHeader) []Header {
	out := make([]Header, 0, len(hs))
	for _, h := range hs {
		v := h.Value
		if h.Secret {
			v = ""
		}
		out = append(out, Header{Name: h.Name, Value: v, Secret: h.Secret})
	}
	return out
}

// describe reads a stored chain's leaf.
func describe(chainPEM string) (CertificateInfo, error) {
	block, _ := pem.Decode([]byte(chainPEM))
	if block == nil {
		return CertificateInfo{}, errors.New("stored certificate is not PEM")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return CertificateInfo{}, fmt.Errorf("stored certificate: %w", err)
	}
	return infoOf(leaf, sha256Hex(leaf.Raw)), nil
}
