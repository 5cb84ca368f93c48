package activities

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jobhooks/jobhooks/webhooksettings"
)

// SettingsFreshFor bounds how old the delivery settings an attempt uses
// may be: settings the API answered this long ago reach every attempt
// signed from then on.
const SettingsFreshFor = time.Second

// SettingsSource reads webhooks' delivery settings with their secrets
// opened (webhooksettings.Store).
type SettingsSource interface {
	ForSending(ctx context.Context, ids []string) (map[string]webhooksettings.Sending, error)
}

// SettingsDeps are what attempts need to apply webhooks' delivery
// settings: custom headers and a client certificate.
type SettingsDeps struct {
	// Source reads the settings; nil sends every webhook's deliveries
	// without any.
	Source SettingsSource
	// HTTPWithCertificate returns a client like Deps.HTTP that presents
	// the certificate (NewHTTPClientTLS); nil fails the attempts of
	// webhooks that have one.
	HTTPWithCertificate func(tls.Certificate) *http.Client
}

// settingsState is the worker's caches of delivery settings and of the
// clients that present certificates: one per worker, shared by every
// sender of its attempts.
type settingsState struct {
	logger *slog.Logger
	cache  *settingsCache
	certs  *certClients
}

func newSettingsState(deps SettingsDeps, now func() time.Time, logger *slog.Logger) *settingsState {
	return &settingsState{
		logger: logger,
		cache:  newSettingsCache(deps.Source, now),
		certs:  &certClients{newClient: deps.HTTPWithCertificate, now: now, clients: map[string]*certClient{}},
	}
}

// Bounds of the caches.
const (
	settingsLoadBatch  = 500   // webhooks one load reads
	settingsCacheSize  = 10000 // entries kept before the stale ones go
	certClientsMax     = 1000  // clients with a certificate kept
	settingsLoadWithin = 5 * time.Second
)

// errSettingsUnreadable is what an attempt records when its webhook's
// settings cannot be read; the detail is logged, not shown to the account.
var errSettingsUnreadable = errors.New("the webhook's delivery settings could not be read; the attempt will be retried")

// settingsCache holds webhooks' delivery settings for SettingsFreshFor.
// Attempts that need settings at the same time share one load, and a load
// reads every webhook asked for since the last (a round's signers ask for
// theirs first), so a page of many webhooks costs one query.
type settingsCache struct {
	source SettingsSource
	now    func() time.Time

	mu      sync.Mutex
	entries map[string]settingsEntry
	wanted  map[string]struct{}
	loading *settingsLoad
}

type settingsEntry struct {
	s        webhooksettings.Sending
	loadedAt time.Time // when its load started: it is at least this fresh
}

// settingsLoad is one query in flight; done closes when results or err
// are set.
type settingsLoad struct {
	ids     map[string]bool
	done    chan struct{}
	results map[string]webhooksettings.Sending
	err     error
}

func newSettingsCache(source SettingsSource, now func() time.Time) *settingsCache {
	return &settingsCache{source: source, now: now, entries: map[string]settingsEntry{}, wanted: map[string]struct{}{}}
}

// want asks for id's settings in the next load, unless they are fresh.
func (c *settingsCache) want(id string) {
	if c.source == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.freshLocked(id) {
		c.wanted[id] = struct{}{}
	}
}

func (c *settingsCache) freshLocked(id string) bool {
	e, ok := c.entries[id]
	return ok && c.now().Sub(e.loadedAt) < SettingsFreshFor
}

// get returns id's settings, at most SettingsFreshFor old (the defaults
// without a source).
func (c *settingsCache) get(ctx context.Context, id string) (webhooksettings.Sending, error) {
	if c.source == nil {
		return webhooksettings.Sending{}, nil
	}
	c.mu.Lock()
	for {
		if c.freshLocked(id) {
			s := c.entries[id].s
			c.mu.Unlock()
			return s, nil
		}
		c.wanted[id] = struct{}{}
		load := c.loading
		if load == nil {
			load = c.startLoadLocked()
			c.mu.Unlock()
			c.run(ctx, load)
		} else {
			c.mu.Unlock()
		}
		select {
		case <-load.done:
		case <-ctx.Done():
			return webhooksettings.Sending{}, ctx.Err()
		}
		if load.ids[id] {
			// However long the load took, it is the freshest there is.
			return load.results[id], load.err
		}
		c.mu.Lock() // id came after that load started: the next one
	}
}

// startLoadLocked takes up to a batch of the wanted ids into a new load.
func (c *settingsCache) startLoadLocked() *settingsLoad {
	load := &settingsLoad{ids: map[string]bool{}, done: make(chan struct{})}
	for id := range c.wanted {
		if len(load.ids) == settingsLoadBatch {
			break
		}
		load.ids[id] = true
		delete(c.wanted, id)
	}
	c.loading = load
	return load
}

// run reads the load's webhooks and keeps what it read. Its waiters do not
// share ctx's cancellation: the query gets its own bound.
func (c *settingsCache) run(ctx context.Context, load *settingsLoad) {
	started := c.now()
	ids := make([]string, 0, len(load.ids))
	for id := range load.ids {
		ids = append(ids, id)
	}
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settingsLoadWithin)
	found, err := c.source.ForSending(qctx, ids)
	cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loading = nil
	load.err = err
	if err == nil {
		load.results = make(map[string]webhooksettings.Sending, len(ids))
		if len(c.entries)+len(ids) > settingsCacheSize {
			for id, e := range c.entries {
				if started.Sub(e.loadedAt) >= SettingsFreshFor {
					delete(c.entries, id)
				}
			}
		}
		for _, id := range ids {
			s := found[id] // the defaults when it has none
			load.results[id] = s
			if s.Err == nil {
				c.entries[id] = settingsEntry{s: s, loadedAt: started}
			}
		}
	}
	close(load.done)
}

// deliverySettings returns a webhook's delivery settings for an attempt,
// at most SettingsFreshFor old, with its secrets opened; an error the
// attempt records when they cannot be read or opened.
func (st *settingsState) deliverySettings(ctx context.Context, webhookID string) (webhooksettings.Sending, error) {
	s, err := st.cache.get(ctx, webhookID)
	if err != nil {
		st.logger.WarnContext(ctx, "cannot read delivery settings", "subscription_id", webhookID, "error", err.Error())
		return webhooksettings.Sending{}, errSettingsUnreadable
	}
	if s.Err != nil {
		st.logger.ErrorContext(ctx, "cannot open delivery settings", "subscription_id", webhookID, "error", s.Err.Error())
		return webhooksettings.Sending{}, s.Err
	}
	return s, nil
}

// maxRequestsPerSecond is a webhook's rate limit, from its delivery
// settings at most SettingsFreshFor old; ok is false when it has none. For
// the delivery scheduler.
func (st *settingsState) maxRequestsPerSecond(ctx context.Context, webhookID string) (limit float64, ok bool, err error) {
	s, err := st.deliverySettings(ctx, webhookID)
	if err != nil || s.MaxRequestsPerSecond == nil {
		return 0, false, err
	}
	return *s.MaxRequestsPerSecond, true, nil
}

// certClients are the delivery clients that present a client certificate,
// one per certificate (by its SHA-256), each with the policy and limits
// of the plain client.
type certClients struct {
	newClient func(tls.Certificate) *http.Client
	now       func() time.Time

	mu      sync.Mutex
	clients map[string]*certClient
}

type certClient struct {
	hc   *http.Client
	used time.Time
}

// errNoCertificateClients: the worker was built without a way to present
// client certificates.
var errNoCertificateClients = errors.New("this worker cannot present client certificates")

// prepare makes sure a client presents c, building it the first time.
func (cc *certClients) prepare(c *webhooksettings.ClientCertificate) error {
	if cc.newClient == nil {
		return errNoCertificateClients
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if e, ok := cc.clients[c.SHA256]; ok {
		e.used = cc.now()
		return nil
	}
	cert, err := c.TLS()
	if err != nil {
		return errors.New("the webhook's client certificate could not be loaded")
	}
	if len(cc.clients) >= certClientsMax {
		cc.evictLocked()
	}
	cc.clients[c.SHA256] = &certClient{hc: cc.newClient(cert), used: cc.now()}
	return nil
}

// evictLocked drops the least recently used client.
func (cc *certClients) evictLocked() {
	var oldest string
	for sha, e := range cc.clients {
		if oldest == "" || e.used.Before(cc.clients[oldest].used) {
			oldest = sha
		}
	}
	cc.clients[oldest].hc.CloseIdleConnections()
	delete(cc.clients, oldest)
}

// get returns the client that presents the certificate sha.
func (cc *certClients) get(sha string) (*http.Client, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	e, ok := cc.clients[sha]
	if ok {
		e.used = cc.now()
		return e.hc, true
	}
	return nil, false
}
