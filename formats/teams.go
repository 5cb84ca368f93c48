package formats

import (
	webhooks "github.com/jobhooks/jobhooks"
)

// The Teams message: a workflow ("Post to a channel when a webhook request
// is received") takes one Adaptive Card as an attachment.
const (
	teamsContentType = "application/vnd.microsoft.card.adaptive"
	cardSchema       = "http://adaptivecards.io/schemas/adaptive-card.json"
	cardVersion      = "1.4"
)

// Bounds, in bytes, that keep a card well within the 28 KB Teams takes.
const (
	teamsTitleMax   = 400
	teamsFactMax    = 512
	teamsMessageMax = 4096
)

type teamsMessage struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string       `json:"contentType"`
	Content     adaptiveCard `json:"content"`
}

// adaptiveCard is the part of Adaptive Cards 1.4 this format uses.
type adaptiveCard struct {
	Schema       string        `json:"$schema"`
	Type         string        `json:"type"`
	Version      string        `json:"version"`
	FallbackText string        `json:"fallbackText"`
	Body         []cardElement `json:"body"`
	Actions      []cardAction  `json:"actions,omitempty"`
}

// cardElement is a TextBlock or a FactSet.
type cardElement struct {
	Type     string     `json:"type"`
	Text     string     `json:"text,omitempty"`
	Size     string     `json:"size,omitempty"`
	Weight   string     `json:"weight,omitempty"`
	Color    string     `json:"color,omitempty"`
	IsSubtle bool       `json:"isSubtle,omitempty"`
	Wrap     bool       `json:"wrap,omitempty"`
	Facts    []cardFact `json:"facts,omitempty"`
}

type cardFact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

type cardAction struct {
	Type  string `json:"type"`
	Title string `json:"title"`
	URL   string `json:"url"`
}

// buildTeams is a Teams workflow message holding an Adaptive Card 1.4: a
// title coloured by the outcome, the run's facts, its status message and,
// when the run's link is known, an Action.OpenUrl to it. Teams renders a
// subset of Markdown in text and fact values: outside text gets
// backslash escapes on the characters that make links, emphasis and code,
// and is cleaned and cut to fit.
func buildTeams(in Input) ([]byte, error) {
	v := viewOf(in.Envelope)
	d := in.Envelope.Data
	title := teamsText(v.title(), true, teamsTitleMax)
	card := adaptiveCard{Schema: cardSchema, Type: "AdaptiveCard", Version: cardVersion, FallbackText: title,
		Body: []cardElement{
			{Type: "TextBlock", Text: title, Size: "Large", Weight: "Bolder", Color: outcomeColor(in.Envelope.EventType), Wrap: true},
			{Type: "FactSet", Facts: teamsFacts(v)},
		}}
	if m := clean(d.RunStatusMessage, false); m != "" {
		card.Body = append(card.Body, cardElement{Type: "TextBlock", Text: teamsText(m, false, teamsMessageMax), Wrap: true})
	}
	if in.RunURL != "" {
		card.Actions = []cardAction{{Type: "Action.OpenUrl", Title: "View run", URL: in.RunURL}}
	}
	return marshalCompact(teamsMessage{Type: "message", Attachments: []teamsAttachment{{ContentType: teamsContentType, Content: card}}})
}

func outcomeColor(eventType string) string {
	switch eventType {
	case webhooks.EventRunErrored:
		return "Attention"
	case webhooks.EventRunCompleted:
		return "Good"
	}
	return "Default"
}

func teamsFacts(v runView) []cardFact {
	d, e := v.e.Data, v.e
	facts := []cardFact{
		{"Job", v.job()}, {"Project", d.ProjectName}, {"Environment", d.EnvironmentName}, {"Run", d.RunID},
		{"Status", v.status()}, {"Duration", v.duration}, {"Reason", d.RunReason},
		{"Event", e.EventType + " " + e.EventID}, {"Webhook", e.WebhookName}, {"Time", v.at},
	}
	out := facts[:0]
	for _, f := range facts {
		if f.Value = teamsText(f.Value, true, teamsFactMax); f.Value != "" {
			out = append(out, f)
		}
	}
	return out
}

// teamsText is s cleaned (one line when line is set), with Markdown's
// link, emphasis and code characters escaped, in at most maxBytes bytes.
func teamsText(s string, line bool, maxBytes int) string {
	return fit(clean(s, line), markdownEscape, maxBytes, func(s string) int { return len(s) })
}

func markdownEscape(r rune) string {
	switch r {
	case '\\', '[', ']', '*', '`', '<', '>':
		return `\` + string(r)
	}
	return ""
}
