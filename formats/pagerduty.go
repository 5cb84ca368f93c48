package formats

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/untrusted"
)

// RoutingKeyMask stands for the routing key in a PagerDuty body as it is
// built, stored and shown: the key is a secret, and is put in its place
// only in the bytes sent (WithRoutingKey).
const RoutingKeyMask = "********"

// pagerDutyStored is how every PagerDuty body built here starts: the
// routing key is its first member, so the mask is found at a fixed place
// and never in text that came from outside.
var pagerDutyStored = []byte(`{"routing_key":"` + RoutingKeyMask + `",`)

// Events API v2 bounds this format keeps within.
const (
	pdSummaryMax  = 1024 // payload.summary
	pdDedupKeyMax = 255  // dedup_key
	pdFieldMax    = 255  // source, component, group
	pdLinkTextMax = 255
)

type pdEvent struct {
	RoutingKey  string    `json:"routing_key"`
	EventAction string    `json:"event_action"`
	DedupKey    string    `json:"dedup_key"`
	Payload     pdPayload `json:"payload"`
	Client      string    `json:"client"`
	ClientURL   string    `json:"client_url,omitempty"`
	Links       []pdLink  `json:"links,omitempty"`
}

type pdPayload struct {
	Summary       string          `json:"summary"`
	Source        string          `json:"source"`
	Severity      string          `json:"severity"`
	Timestamp     string          `json:"timestamp"`
	Component     string          `json:"component,omitempty"`
	Group         string          `json:"group,omitempty"`
	Class         string          `json:"class"`
	CustomDetails json.RawMessage `json:"custom_details"`
}

type pdLink struct {
	Href string `json:"href"`
	Text string `json:"text"`
}

// buildPagerDuty is an Events API v2 event: job.run.errored triggers the
// incident of the webhook and job (DedupKey), job.run.completed resolves
// it, job.run.started sends nothing (ErrNothingToSend). custom_details is
// the spec's body of the event; the routing key is RoutingKeyMask.
func buildPagerDuty(in Input) ([]byte, error) {
	e := in.Envelope
	action, severity := "", ""
	switch e.EventType {
	case webhooks.EventRunErrored:
		action, severity = "trigger", "error"
	case webhooks.EventRunCompleted:
		// PagerDuty ignores a resolve's payload; it says what recovered.
		action, severity = "resolve", "info"
	default:
		return nil, ErrNothingToSend
	}
	v := viewOf(e)
	ev := pdEvent{RoutingKey: RoutingKeyMask, EventAction: action, DedupKey: DedupKey(e.SubscriptionID, e.Data.JobID),
		Payload: pdPayload{Summary: pdSummary(v), Source: pdSource(e.Data), Severity: severity, Timestamp: v.at,
			Component: plain(e.Data.JobName, pdFieldMax), Group: plain(e.Data.ProjectName, pdFieldMax), Class: e.EventType,
			CustomDetails: webhooks.BuildPayload(e)},
		Client: "jobhooks", ClientURL: in.RunURL}
	if in.RunURL != "" {
		ev.Links = []pdLink{{Href: in.RunURL, Text: plain("Run "+e.Data.RunID, pdLinkTextMax)}}
	}
	body, err := marshalCompact(ev)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(body, pagerDutyStored) {
		return nil, errors.New("a PagerDuty body must start with its masked routing key")
	}
	return body, nil
}

// DedupKey is the dedup_key of a webhook's incident for a job:
// "<webhook id>/job/<job id>", or "<webhook id>/job/sha256:<hex of the
// job id>" when the job id is not plain text or would make the key longer
// than PagerDuty's 255 characters. One webhook and job have one incident
// at a time, whatever runs come and go.
func DedupKey(webhookID, jobID string) string {
	key := webhookID + "/job/" + jobID
	if len(key) <= pdDedupKeyMax && untrusted.Text(jobID, 0) == jobID {
		return key
	}
	sum := sha256.Sum256([]byte(jobID))
	return webhookID + "/job/sha256:" + hex.EncodeToString(sum[:])
}

// pdSummary is "Job nightly (42) errored in Prod (Analytics): <status
// message>".
func pdSummary(v runView) string {
	d := v.e.Data
	s := "Job " + v.job() + " " + v.outcome
	if env := clean(d.EnvironmentName, true); env != "" {
		s += " in " + env
	}
	if p := clean(d.ProjectName, true); p != "" {
		s += " (" + p + ")"
	}
	msg := clean(d.RunStatusMessage, true)
	if msg == "" {
		msg = v.status()
	}
	return plain(s+": "+msg, pdSummaryMax)
}

// pdSource is where the failure is: "<project> / <environment>".
func pdSource(d webhooks.RunData) string {
	p, env := clean(d.ProjectName, true), clean(d.EnvironmentName, true)
	switch {
	case p != "" && env != "":
		return plain(p+" / "+env, pdFieldMax)
	case p != "" || env != "":
		return plain(p+env, pdFieldMax)
	}
	return "jobhooks"
}

// plain is s cleaned to one line in at most maxBytes bytes.
func plain(s string, maxBytes int) string {
	return fit(clean(s, true), func(rune) string { return "" }, maxBytes, func(s string) int { return len(s) })
}

// ErrNoRoutingKey: a PagerDuty body is to be sent, and its webhook has no
// routing key (its format changed after the body was built).
var ErrNoRoutingKey = errors.New("this delivery is a PagerDuty event and the webhook has no pagerduty_routing_key")

// IsPagerDuty reports whether body is a PagerDuty event built here, its
// routing key masked.
func IsPagerDuty(body []byte) bool { return bytes.HasPrefix(body, pagerDutyStored) }

// WithRoutingKey returns the bytes to send for a stored body: a PagerDuty
// event gets key in its mask's place (the signature is over these bytes);
// any other body is returned as it is.
func WithRoutingKey(body []byte, key string) ([]byte, error) {
	if !IsPagerDuty(body) {
		return body, nil
	}
	if key == "" {
		return nil, ErrNoRoutingKey
	}
	quoted, err := json.Marshal(key)
	if err != nil {
		return nil, fmt.Errorf("encode the routing key: %w", err)
	}
	rest := body[len(pagerDutyStored)-1:] // from the comma on
	out := make([]byte, 0, len(body)+len(quoted))
	out = append(out, `{"routing_key":`...)
	out = append(out, quoted...)
	return append(out, rest...), nil
}
