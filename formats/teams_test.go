package formats_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/formats"
)

// The Teams message and the part of Adaptive Cards 1.4 it may use, as the
// published schema (adaptive-card.json 1.4.0) defines them: a member not
// listed here fails the decode.
type teamsMessage struct {
	Type        string `json:"type"`
	Attachments []struct {
		ContentType string `json:"contentType"`
		Content     card   `json:"content"`
	} `json:"attachments"`
}

type card struct {
	Schema       string    `json:"$schema"`
	Type         string    `json:"type"`
	Version      string    `json:"version"`
	FallbackText string    `json:"fallbackText"`
	Body         []element `json:"body"`
	Actions      []struct {
		Type  string `json:"type"`
		Title string `json:"title"`
		URL   string `json:"url"`
	} `json:"actions"`
}

type element struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Size     string `json:"size"`
	Weight   string `json:"weight"`
	Color    string `json:"color"`
	IsSubtle bool   `json:"isSubtle"`
	Wrap     bool   `json:"wrap"`
	Facts    []struct {
		Title string `json:"title"`
		Value string `json:"value"`
	} `json:"facts"`
}

// teamsMaxBytes is the size of a message Teams takes.
const teamsMaxBytes = 28 * 1024

func decodeTeams(t *testing.T, body []byte) card {
	t.Helper()
	var msg teamsMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&msg); err != nil {
		t.Fatalf("not a Teams message of Adaptive Card 1.4 elements: %v\n%s", err, body)
	}
	if msg.Type != "message" || len(msg.Attachments) != 1 || msg.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" {
		t.Fatalf("not a Teams workflow message: %s", body)
	}
	return msg.Attachments[0].Content
}

func TestTeams_IsAnAdaptiveCard14(t *testing.T) {
	enums := map[string][]string{ // the schema's enumerations, as cased in its examples
		"size": {"", "Default", "Small", "Medium", "Large", "ExtraLarge"}, "weight": {"", "Default", "Lighter", "Bolder"},
		"color": {"", "Default", "Dark", "Light", "Accent", "Good", "Warning", "Attention"},
	}
	for _, et := range webhooks.EventTypes {
		for _, h := range hostile {
			t.Run(et+"/"+h.name, func(t *testing.T) {
				body, err := formats.Build(formats.Teams, formats.Input{Envelope: event(et, h.edit), RunURL: runURL})
				if err != nil {
					t.Fatal(err)
				}
				if len(body) > teamsMaxBytes {
					t.Errorf("body has %d bytes, Teams takes %d", len(body), teamsMaxBytes)
				}
				c := decodeTeams(t, body)
				if c.Type != "AdaptiveCard" || c.Version != "1.4" || c.Schema != "http://adaptivecards.io/schemas/adaptive-card.json" {
					t.Errorf("card type %q version %q schema %q", c.Type, c.Version, c.Schema)
				}
				for _, el := range c.Body {
					switch el.Type {
					case "TextBlock":
						if el.Text == "" || len(el.Facts) > 0 {
							t.Errorf("TextBlock %+v", el)
						}
						checkMarkdownEscaped(t, el.Text)
					case "FactSet":
						if len(el.Facts) == 0 || el.Text != "" {
							t.Errorf("FactSet %+v", el)
						}
						for _, f := range el.Facts {
							if f.Title == "" || f.Value == "" {
								t.Errorf("fact %+v", f)
							}
							checkMarkdownEscaped(t, f.Value)
						}
					default:
						t.Errorf("element %q", el.Type)
					}
					for k, v := range map[string]string{"size": el.Size, "weight": el.Weight, "color": el.Color} {
						if !contains(enums[k], v) {
							t.Errorf("%s %q is not in the schema", k, v)
						}
					}
				}
				if len(c.Actions) != 1 || c.Actions[0].Type != "Action.OpenUrl" || c.Actions[0].URL != runURL || c.Actions[0].Title == "" {
					t.Errorf("actions %+v", c.Actions)
				}
			})
		}
	}
}

func TestTeams_ShowsTheRun(t *testing.T) {
	body, err := formats.Build(formats.Teams, formats.Input{Envelope: event(webhooks.EventRunErrored)})
	if err != nil {
		t.Fatal(err)
	}
	c := decodeTeams(t, body)
	if c.Body[0].Text != "Job nightly errored" || c.Body[0].Color != "Attention" {
		t.Errorf("title %+v", c.Body[0])
	}
	facts := map[string]string{}
	for _, f := range c.Body[1].Facts {
		facts[f.Title] = f.Value
	}
	want := map[string]string{"Job": "nightly (42)", "Project": "Analytics", "Environment": "Prod", "Run": "9001",
		"Status": "Errored (20)", "Duration": "4m12s", "Reason": "Kicked off from the UI", "Event": "job.run.errored wev_1",
		"Webhook": "ops alerts", "Time": "2026-01-02T03:04:12Z"}
	for k, v := range want {
		if facts[k] != v {
			t.Errorf("fact %s = %q, want %q", k, facts[k], v)
		}
	}
	if c.Body[2].Text != "Database Error in model orders" {
		t.Errorf("status message %q", c.Body[2].Text)
	}
	if len(c.Actions) != 0 {
		t.Errorf("a card without a known link has actions: %+v", c.Actions)
	}
}

// checkMarkdownEscaped fails when s has a Markdown link, emphasis or code
// character that is not escaped by a backslash.
func checkMarkdownEscaped(t *testing.T, s string) {
	t.Helper()
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 == len(s) || !strings.ContainsRune(`\[]*`+"`"+`<>`, rune(s[i+1])) {
				t.Errorf("lone backslash in %q", s)
				return
			}
			i++
		case '[', ']', '*', '`', '<', '>':
			t.Errorf("unescaped %q in %q", s[i], s)
			return
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
