package activities

import (
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/inflight"
)

// endpointLimits keeps how many attempts may be in flight from this
// worker to each webhook and to each destination (scheme, host, port):
// the one gate an attempt passes before it starts, and what the claims
// ask for (a webhook's room) so they take only what may go now.
type endpointLimits interface {
	// room is how many more attempts to the webhook may start now.
	room(webhookID, destination string) int
	// destinationRoom is how many more attempts to the destination may
	// start now, whatever their webhook.
	destinationRoom(destination string) int
	// tryStart takes a place for one attempt, or says there is none.
	tryStart(webhookID, destination string) (attemptPermit, bool)
}

// attemptPermit is one attempt's place; done gives it back with the
// attempt's record (what an adaptive limit learns from).
type attemptPermit interface {
	done(rec deliveries.AttemptRecord)
}

// adaptiveLimits are the worker's inflight limits: each webhook's and
// destination's limit follows its receiver's answers.
type adaptiveLimits struct {
	l   *inflight.Limits
	now func() time.Time
}

func (a adaptiveLimits) room(webhookID, destination string) int {
	return a.l.Available(inflight.Target{Webhook: webhookID, Destination: destination})
}

func (a adaptiveLimits) destinationRoom(destination string) int {
	return a.l.DestinationAvailable(destination)
}

func (a adaptiveLimits) tryStart(webhookID, destination string) (attemptPermit, bool) {
	p, ok := a.l.TryAcquire(inflight.Target{Webhook: webhookID, Destination: destination}, a.now())
	return adaptivePermit{p}, ok
}

type adaptivePermit struct{ p inflight.Permit }

func (p adaptivePermit) done(rec deliveries.AttemptRecord) {
	p.p.Done(inflight.Outcome{Class: loadClassOf(rec), Latency: rec.Duration})
}

// loadClassOf is what an attempt's record says about its receiver's load:
// answers by their status; no answer (a timeout, a refused or reset
// connection, a refused TLS handshake) is the strongest signal; an
// attempt that never went out, or failed for a reason of ours, says
// nothing.
func loadClassOf(rec deliveries.AttemptRecord) inflight.Class {
	switch {
	case rec.Status == "" || rec.StartedAt.IsZero():
		return inflight.NotSent
	case rec.StatusCode > 0:
		return inflight.ClassOfStatus(rec.StatusCode)
	case rec.ErrorKind == deliveries.KindTimeout, rec.ErrorKind == deliveries.KindConnection:
		return inflight.Unanswered
	default:
		return inflight.NotSent
	}
}

// destinationOf is the destination a webhook's attempts share with its
// account's other webhooks at the same scheme, host and port: never with
// another account's, so a tenant's bad receiver uses up only its own. The
// claim groups webhooks by the same key (deliveries.DestinationKey).
func destinationOf(w deliveries.WebhookTarget) string {
	return deliveries.DestinationKey(w.AccountID, w.ClientURL)
}

// WebhookLimit is a webhook's in-flight limit as a round leaves it, for
// the round's marker (the Temporal Web UI shows it) and the health object.
type WebhookLimit struct {
	WebhookID string
	Limit     int
	InFlight  int `json:",omitempty"`
	// UnloadedLatency is the least latency lately, what the limit compares
	// answers with.
	UnloadedLatency time.Duration `json:",omitempty"`
}
