package formats_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slack-go/slack"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/formats"
)

// Slack's documented limits (Block Kit reference), in characters.
const (
	slackMaxBlocks     = 50
	slackHeaderMax     = 150
	slackTextMax       = 3000
	slackFieldsMax     = 10
	slackFieldMax      = 2000
	slackContextMax    = 10
	slackButtonTextMax = 75
	slackButtonURLMax  = 3000
	slackMessageMax    = 4000 // the text Slack recommends at most
)

func TestSlack_DecodesIntoLibraryTypesWithinLimits(t *testing.T) {
	for _, et := range webhooks.EventTypes {
		for _, h := range hostile {
			t.Run(et+"/"+h.name, func(t *testing.T) {
				e := event(et, h.edit)
				body, err := formats.Build(formats.Slack, formats.Input{Envelope: e, RunURL: runURL})
				if err != nil {
					t.Fatal(err)
				}
				var msg slack.WebhookMessage
				if err := json.Unmarshal(body, &msg); err != nil {
					t.Fatalf("the body does not decode into slack.WebhookMessage: %v\n%s", err, body)
				}
				checkSlackMessage(t, msg, true)
			})
		}
	}
}

func TestSlack_ShowsTheRun(t *testing.T) {
	body, err := formats.Build(formats.Slack, formats.Input{Envelope: event(webhooks.EventRunErrored), RunURL: runURL})
	if err != nil {
		t.Fatal(err)
	}
	var msg slack.WebhookMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(slackTexts(msg), "\n")
	for _, want := range []string{"nightly (42)", "Analytics", "Prod", "9001", "Errored (20)", "Database Error in model orders",
		"4m12s", "Kicked off from the UI", "job.run.errored", "ops alerts", "View run"} {
		if !strings.Contains(all, want) {
			t.Errorf("the message does not show %q:\n%s", want, all)
		}
	}
	if msg.Text != "Job nightly errored in Prod (Analytics): Errored (20)" {
		t.Errorf("text fallback = %q", msg.Text)
	}
}

func TestSlack_LinkOnlyWhenKnown(t *testing.T) {
	for _, tt := range []struct {
		name, url  string
		wantButton bool
	}{{"Known", runURL, true}, {"Unknown", "", false}} {
		t.Run(tt.name, func(t *testing.T) {
			body, err := formats.Build(formats.Slack, formats.Input{Envelope: event(webhooks.EventRunCompleted), RunURL: tt.url})
			if err != nil {
				t.Fatal(err)
			}
			var msg slack.WebhookMessage
			if err := json.Unmarshal(body, &msg); err != nil {
				t.Fatal(err)
			}
			var got string
			for _, b := range msg.Blocks.BlockSet {
				if a, ok := b.(*slack.ActionBlock); ok {
					got = a.Elements.ElementSet[0].(*slack.ButtonBlockElement).URL
				}
			}
			if (got != "") != tt.wantButton || (tt.wantButton && got != tt.url) {
				t.Fatalf("button URL = %q, want %q", got, tt.url)
			}
		})
	}
}

// checkSlackMessage checks a message against Slack's limits and that no
// outside text can format, mention or link: every <, > and & is escaped.
func checkSlackMessage(t *testing.T, msg slack.WebhookMessage, wantBlocks bool) {
	t.Helper()
	if msg.Text == "" || utf8.RuneCountInString(msg.Text) > slackMessageMax {
		t.Errorf("text fallback has %d characters", utf8.RuneCountInString(msg.Text))
	}
	if msg.Blocks == nil || len(msg.Blocks.BlockSet) == 0 || len(msg.Blocks.BlockSet) > slackMaxBlocks {
		t.Fatalf("message has no blocks or more than %d", slackMaxBlocks)
	}
	checkText := func(where string, o *slack.TextBlockObject, max int) {
		t.Helper()
		if o == nil {
			t.Errorf("%s: no text", where)
			return
		}
		if err := o.Validate(); err != nil {
			t.Errorf("%s: %v", where, err)
		}
		if n := utf8.RuneCountInString(o.Text); n > max {
			t.Errorf("%s: %d characters, more than %d", where, n, max)
		}
	}
	for i, b := range msg.Blocks.BlockSet {
		switch b := b.(type) {
		case *slack.HeaderBlock:
			checkText("header", b.Text, slackHeaderMax)
			if b.Text.Type != slack.PlainTextType {
				t.Errorf("header text is %s", b.Text.Type)
			}
		case *slack.SectionBlock:
			if b.Text != nil {
				checkText("section", b.Text, slackTextMax)
			}
			if len(b.Fields) > slackFieldsMax {
				t.Errorf("section has %d fields", len(b.Fields))
			}
			for _, f := range b.Fields {
				checkText("field", f, slackFieldMax)
			}
		case *slack.ContextBlock:
			if n := len(b.ContextElements.Elements); n == 0 || n > slackContextMax {
				t.Errorf("context has %d elements", n)
			}
			for _, el := range b.ContextElements.Elements {
				o, ok := el.(*slack.TextBlockObject)
				if !ok {
					t.Errorf("context element %T", el)
					continue
				}
				checkText("context", o, slackTextMax)
			}
		case *slack.ActionBlock:
			for _, el := range b.Elements.ElementSet {
				button, ok := el.(*slack.ButtonBlockElement)
				if !ok {
					t.Errorf("action element %T", el)
					continue
				}
				checkText("button", button.Text, slackButtonTextMax)
				if button.URL == "" || utf8.RuneCountInString(button.URL) > slackButtonURLMax {
					t.Errorf("button URL %q", button.URL)
				}
			}
		default:
			t.Errorf("block %d: unexpected %T", i, b)
		}
	}
	for _, s := range append(slackTexts(msg), msg.Text) {
		checkEscaped(t, s)
	}
}

// checkEscaped fails when s has a raw < or >, an & that does not start
// &amp; &lt; or &gt;, or a character that is not clean text.
func checkEscaped(t *testing.T, s string) {
	t.Helper()
	if strings.ContainsAny(s, "<>") {
		t.Errorf("unescaped < or > in %q", s)
	}
	for i := strings.IndexByte(s, '&'); i >= 0; i = nextAmp(s, i) {
		rest := s[i:]
		if !strings.HasPrefix(rest, "&amp;") && !strings.HasPrefix(rest, "&lt;") && !strings.HasPrefix(rest, "&gt;") {
			t.Errorf("unescaped & in %q", s)
			return
		}
	}
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' }) {
		t.Errorf("text is not clean: %q", s)
	}
}

func nextAmp(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '&')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// slackTexts are every text of a message's blocks.
func slackTexts(msg slack.WebhookMessage) []string {
	var out []string
	for _, b := range msg.Blocks.BlockSet {
		switch b := b.(type) {
		case *slack.HeaderBlock:
			out = append(out, b.Text.Text)
		case *slack.SectionBlock:
			if b.Text != nil {
				out = append(out, b.Text.Text)
			}
			for _, f := range b.Fields {
				out = append(out, f.Text)
			}
		case *slack.ContextBlock:
			for _, el := range b.ContextElements.Elements {
				if o, ok := el.(*slack.TextBlockObject); ok {
					out = append(out, o.Text)
				}
			}
		case *slack.ActionBlock:
			for _, el := range b.Elements.ElementSet {
				if button, ok := el.(*slack.ButtonBlockElement); ok {
					out = append(out, button.Text.Text)
				}
			}
		}
	}
	return out
}
