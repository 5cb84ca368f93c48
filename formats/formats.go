// Package formats turns one job-run event into the body a receiver
// expects: the spec's body, a Slack message, a Teams card or a PagerDuty
// event. Bodies are deterministic: the same input gives the same bytes.
package formats

import (
	"errors"
	"fmt"

	webhooks "github.com/jobhooks/jobhooks"
)

// Format names a receiver's body, as a webhook's delivery settings store it.
type Format string

// The formats a webhook can choose.
const (
	Standard  Format = "standard"
	Slack     Format = "slack"
	Teams     Format = "teams"
	PagerDuty Format = "pagerduty"
)

// All lists every format, the default first.
var All = []Format{Standard, Slack, Teams, PagerDuty}

// Parse returns the format named s; "" is Standard (a webhook that never
// chose one).
func Parse(s string) (Format, error) {
	if s == "" {
		return Standard, nil
	}
	for _, f := range All {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown delivery format %q", s)
}

// ErrNothingToSend: the format sends nothing for this event (a PagerDuty
// webhook is never sent job.run.started). The routing of deliveries keeps
// such events from becoming deliveries; a body asked for anyway is this.
var ErrNothingToSend = errors.New("this format sends nothing for this event type")

// Input is what a body is built from: the event as the spec's body has it,
// and the link to the run where one is known ("" when not: no link).
type Input struct {
	Envelope webhooks.PayloadEnvelope
	RunURL   string
}

// Build returns the exact body of a delivery in format f.
func Build(f Format, in Input) ([]byte, error) {
	switch f {
	case Standard, "":
		return webhooks.BuildPayload(in.Envelope), nil
	case Slack:
		return buildSlack(in)
	case Teams:
		return buildTeams(in)
	case PagerDuty:
		return buildPagerDuty(in)
	}
	return nil, fmt.Errorf("unknown delivery format %q", f)
}
