package activities

import (
	"net"
	"net/url"
	"strings"
	"sync"

	"github.com/jobhooks/jobhooks/deliveries"
)

// endpointLimits keeps how many attempts may be in flight from this
// worker to each webhook and to each destination (scheme, host, port):
// the one gate an attempt passes before it starts, and what the claims
// ask for (a webhook's room) so they take only what may go now.
type endpointLimits interface {
	// room is how many more attempts to the webhook may start now.
	room(webhookID, destination string) int
	// tryStart takes a place for one attempt, or says there is none.
	tryStart(webhookID, destination string) (attemptPermit, bool)
}

// attemptPermit is one attempt's place; done gives it back with the
// attempt's record (what an adaptive limit learns from).
type attemptPermit interface {
	done(rec deliveries.AttemptRecord)
}

// fixedLimits caps every webhook at the same number of attempts in flight.
type fixedLimits struct {
	cap      int
	mu       sync.Mutex
	inFlight map[string]int
}

func newFixedLimits(perWebhook int) *fixedLimits {
	return &fixedLimits{cap: max(perWebhook, 1), inFlight: map[string]int{}}
}

func (l *fixedLimits) room(webhookID, _ string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cap - l.inFlight[webhookID]
}

func (l *fixedLimits) tryStart(webhookID, _ string) (attemptPermit, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight[webhookID] >= l.cap {
		return nil, false
	}
	l.inFlight[webhookID]++
	return fixedPermit{l: l, webhookID: webhookID}, true
}

type fixedPermit struct {
	l         *fixedLimits
	webhookID string
}

func (p fixedPermit) done(deliveries.AttemptRecord) {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	if p.l.inFlight[p.webhookID]--; p.l.inFlight[p.webhookID] <= 0 {
		delete(p.l.inFlight, p.webhookID)
	}
}

// destinationOf is the destination a client_url's attempts share: its
// scheme, host and port ("" when it does not parse).
func destinationOf(clientURL string) string {
	u, err := url.Parse(clientURL)
	if err != nil {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
