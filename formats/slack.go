package formats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// Slack's limits on a message (Block Kit reference), in characters, with
// the bounds this format keeps within them.
const (
	slackMaxBlocks       = 50   // blocks in a message
	slackHeaderMax       = 150  // a header block's text
	slackFieldMax        = 2000 // a section field
	slackTextObjectMax   = 3000 // a section's or context's text
	slackButtonTextMax   = 75   // a button's label
	slackButtonURLMax    = 3000 // a button's URL
	slackFallbackMax     = 1000 // the message's text: Slack shows it in notifications
	slackValueMax        = 300  // one fact (job, project, ...) in a field
	slackStatusLineMax   = 2900 // the status message's section
	slackContextValueMax = 200  // the webhook's name in the context line
)

// buildSlack is an incoming-webhook message: a text fallback (what
// notifications show) and Block Kit blocks: a header, the run's facts, its
// status message, a context line and, when the run's link is known, a
// button to it. Every outside string is cleaned, escaped for mrkdwn (&, <,
// >: no mention, link or channel ping can be injected) and cut to fit.
func buildSlack(in Input) ([]byte, error) {
	v := viewOf(in.Envelope)
	d := in.Envelope.Data
	msg := slack.WebhookMessage{Text: slackFallback(v)}
	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, mrkdwn(v.title(), true, slackHeaderMax), false, false)),
		slack.NewSectionBlock(nil, slackFields(v), nil),
	}
	if m := strings.TrimSpace(clean(d.RunStatusMessage, false)); m != "" {
		blocks = append(blocks, slack.NewSectionBlock(
			slack.NewTextBlockObject(slack.MarkdownType, "*Status message*\n"+mrkdwn(m, false, slackStatusLineMax), false, true), nil, nil))
	}
	context := fmt.Sprintf("`%s` · webhook %s · %s · %s", mrkdwn(in.Envelope.EventType, true, 40),
		mrkdwn(in.Envelope.WebhookName, true, slackContextValueMax), mrkdwn(in.Envelope.EventID, true, 100), v.at)
	blocks = append(blocks, slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, context, false, true)))
	if in.RunURL != "" && utf8.RuneCountInString(in.RunURL) <= slackButtonURLMax {
		button := slack.NewButtonBlockElement("view_run", "", slack.NewTextBlockObject(slack.PlainTextType, "View run", false, false))
		blocks = append(blocks, slack.NewActionBlock("", button.WithURL(in.RunURL)))
	}
	msg.Blocks = &slack.Blocks{BlockSet: blocks}
	return marshalCompact(msg)
}

// slackFallback is the message's text: "Job nightly errored in Prod
// (Analytics): Errored (20)".
func slackFallback(v runView) string {
	d := v.e.Data
	s := v.title()
	if env := clean(d.EnvironmentName, true); env != "" {
		s += " in " + env
	}
	if p := clean(d.ProjectName, true); p != "" {
		s += " (" + p + ")"
	}
	s += ": " + v.status()
	return mrkdwn(s, true, slackFallbackMax)
}

// slackFields are the run's facts, at most 10 (Slack's bound on fields).
func slackFields(v runView) []*slack.TextBlockObject {
	d := v.e.Data
	facts := []struct{ label, value string }{
		{"Job", v.job()}, {"Project", d.ProjectName}, {"Environment", d.EnvironmentName},
		{"Run", d.RunID}, {"Status", v.status()}, {"Duration", v.duration}, {"Reason", d.RunReason},
	}
	out := make([]*slack.TextBlockObject, 0, len(facts))
	for _, f := range facts {
		value := mrkdwn(f.value, true, slackValueMax)
		if value == "" {
			value = "–"
		}
		out = append(out, slack.NewTextBlockObject(slack.MarkdownType, "*"+f.label+"*\n"+value, false, true))
	}
	return out
}

// mrkdwn is s cleaned (one line when line is set), escaped for Slack (&,
// <, > as entities) and cut to at most maxRunes characters of escaped text
// (an entity is never cut).
func mrkdwn(s string, line bool, maxRunes int) string {
	return fit(clean(s, line), slackEscape, maxRunes, utf8.RuneCountInString)
}

func slackEscape(r rune) string {
	switch r {
	case '&':
		return "&amp;"
	case '<':
		return "&lt;"
	case '>':
		return "&gt;"
	}
	return ""
}

// marshalCompact is v as JSON without HTML escaping (a body people read in
// Recent Deliveries) and without json.Encoder's trailing newline.
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode the body: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
