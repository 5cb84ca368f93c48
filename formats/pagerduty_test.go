package formats_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/PagerDuty/go-pagerduty"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/formats"
)

// pdEvent is an Events API v2 event as PagerDuty documents it: a member
// not listed here fails the decode.
type pdEvent struct {
	RoutingKey  string `json:"routing_key"`
	EventAction string `json:"event_action"`
	DedupKey    string `json:"dedup_key"`
	Payload     struct {
		Summary       string          `json:"summary"`
		Source        string          `json:"source"`
		Severity      string          `json:"severity"`
		Timestamp     string          `json:"timestamp"`
		Component     string          `json:"component"`
		Group         string          `json:"group"`
		Class         string          `json:"class"`
		CustomDetails json.RawMessage `json:"custom_details"`
	} `json:"payload"`
	Client    string `json:"client"`
	ClientURL string `json:"client_url"`
	Links     []struct {
		Href string `json:"href"`
		Text string `json:"text"`
	} `json:"links"`
}

func decodePagerDuty(t *testing.T, body []byte) pdEvent {
	t.Helper()
	var ev pdEvent
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("not an Events API v2 event: %v\n%s", err, body)
	}
	return ev
}

func TestPagerDuty_Actions(t *testing.T) {
	tests := []struct {
		eventType, wantAction, wantSeverity string
	}{
		{webhooks.EventRunErrored, "trigger", "error"},
		{webhooks.EventRunCompleted, "resolve", "info"},
	}
	for _, tt := range tests {
		t.Run(tt.eventType, func(t *testing.T) {
			e := event(tt.eventType)
			body, err := formats.Build(formats.PagerDuty, formats.Input{Envelope: e, RunURL: runURL})
			if err != nil {
				t.Fatal(err)
			}
			ev := decodePagerDuty(t, body)
			if ev.EventAction != tt.wantAction || ev.Payload.Severity != tt.wantSeverity {
				t.Errorf("action %q severity %q", ev.EventAction, ev.Payload.Severity)
			}
			if ev.RoutingKey != formats.RoutingKeyMask {
				t.Errorf("the built body holds routing key %q, not the mask", ev.RoutingKey)
			}
			if ev.DedupKey != "wsu_2bL6x2QeLZ1T1Hk3/job/42" {
				t.Errorf("dedup_key %q", ev.DedupKey)
			}
			if ev.Payload.Timestamp != "2026-01-02T03:04:12Z" || ev.Payload.Source != "Analytics / Prod" ||
				ev.Payload.Component != "nightly" || ev.Payload.Group != "Analytics" || ev.Payload.Class != tt.eventType {
				t.Errorf("payload %+v", ev.Payload)
			}
			if ev.ClientURL != runURL || len(ev.Links) != 1 || ev.Links[0].Href != runURL || ev.Links[0].Text != "Run 9001" {
				t.Errorf("links %q %+v", ev.ClientURL, ev.Links)
			}
			var details, spec any
			if json.Unmarshal(ev.Payload.CustomDetails, &details) != nil || json.Unmarshal(webhooks.BuildPayload(e), &spec) != nil {
				t.Fatal("custom_details is not JSON")
			}
			if !jsonEqual(details, spec) {
				t.Errorf("custom_details is not the spec's body:\n%s", ev.Payload.CustomDetails)
			}
		})
	}
}

func TestPagerDuty_SummaryOfATrigger(t *testing.T) {
	body, err := formats.Build(formats.PagerDuty, formats.Input{Envelope: event(webhooks.EventRunErrored)})
	if err != nil {
		t.Fatal(err)
	}
	ev := decodePagerDuty(t, body)
	if want := "Job nightly (42) errored in Prod (Analytics): Database Error in model orders"; ev.Payload.Summary != want {
		t.Errorf("summary %q, want %q", ev.Payload.Summary, want)
	}
	if ev.ClientURL != "" || ev.Links != nil {
		t.Errorf("an event without a known link has one: %q %+v", ev.ClientURL, ev.Links)
	}
}

func TestPagerDuty_StartedSendsNothing(t *testing.T) {
	body, err := formats.Build(formats.PagerDuty, formats.Input{Envelope: event(webhooks.EventRunStarted)})
	if !errors.Is(err, formats.ErrNothingToSend) || body != nil {
		t.Fatalf("job.run.started built %q, %v; want ErrNothingToSend", body, err)
	}
}

func TestPagerDuty_HostileText(t *testing.T) {
	for _, et := range []string{webhooks.EventRunErrored, webhooks.EventRunCompleted} {
		for _, h := range hostile {
			t.Run(et+"/"+h.name, func(t *testing.T) {
				body, err := formats.Build(formats.PagerDuty, formats.Input{Envelope: event(et, h.edit), RunURL: runURL})
				if err != nil {
					t.Fatal(err)
				}
				if !formats.IsPagerDuty(body) {
					t.Fatalf("the body does not start with its masked routing key: %.80s", body)
				}
				ev := decodePagerDuty(t, body)
				if n := len(ev.Payload.Summary); n == 0 || n > 1024 {
					t.Errorf("summary has %d bytes", n)
				}
				if n := len(ev.DedupKey); n == 0 || n > 255 {
					t.Errorf("dedup_key has %d bytes", n)
				}
				for _, s := range []string{ev.Payload.Summary, ev.Payload.Source, ev.Payload.Component, ev.Payload.Group, ev.DedupKey} {
					if len(s) > 1024 || !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
						t.Errorf("not one line of clean text: %q", s)
					}
				}
				if _, err := time.Parse(time.RFC3339, ev.Payload.Timestamp); err != nil {
					t.Errorf("timestamp %q", ev.Payload.Timestamp)
				}
			})
		}
	}
}

func TestDedupKey(t *testing.T) {
	const hashed = "wsu_a/job/sha256:"
	tests := []struct {
		name, jobID, want string
	}{
		{"Plain", "42", "wsu_a/job/42"},
		{"TextWithSlash", "team/42", "wsu_a/job/team/42"},
		{"TooLong", strings.Repeat("9", 250), hashed},
		{"NotCleanText", "4\x002", hashed},
		{"InvalidUTF8", "4\xff", hashed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := formats.DedupKey("wsu_a", tt.jobID)
			if tt.want == hashed {
				if !strings.HasPrefix(got, hashed) || len(got) != len(hashed)+64 {
					t.Fatalf("DedupKey = %q, want the hashed form", got)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("DedupKey = %q, want %q", got, tt.want)
			}
		})
	}
	if formats.DedupKey("wsu_a", "4\x002") == formats.DedupKey("wsu_a", "4\x003") {
		t.Fatal("two jobs share an incident")
	}
	if formats.DedupKey("wsu_a", "42") == formats.DedupKey("wsu_b", "42") {
		t.Fatal("two webhooks share an incident")
	}
}

func TestWithRoutingKey(t *testing.T) {
	pd, err := formats.Build(formats.PagerDuty, formats.Input{Envelope: event(webhooks.EventRunErrored, everyText(`"},"routing_key":"x`))})
	if err != nil {
		t.Fatal(err)
	}
	slackBody, err := formats.Build(formats.Slack, formats.Input{Envelope: event(webhooks.EventRunErrored)})
	if err != nil {
		t.Fatal(err)
	}
	spec := webhooks.BuildPayload(event(webhooks.EventRunErrored))
	tests := []struct {
		name    string
		body    []byte
		key     string
		wantKey string // "" for a body sent as it is
		wantErr error
	}{
		{"PagerDuty", pd, "R0ut1ngKey", "R0ut1ngKey", nil},
		{"KeyNeedingEscapes", pd, `a"b\c`, `a"b\c`, nil},
		{"PagerDutyWithoutKey", pd, "", "", formats.ErrNoRoutingKey},
		{"Slack", slackBody, "R0ut1ngKey", "", nil},
		{"Standard", spec, "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sent, err := formats.WithRoutingKey(tt.body, tt.key)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if tt.wantKey == "" {
				if !bytes.Equal(sent, tt.body) {
					t.Fatalf("a body that is not PagerDuty's changed:\n%s", sent)
				}
				return
			}
			ev := decodePagerDuty(t, sent)
			if ev.RoutingKey != tt.wantKey {
				t.Fatalf("routing_key %q, want %q", ev.RoutingKey, tt.wantKey)
			}
			stored := decodePagerDuty(t, tt.body)
			stored.RoutingKey = tt.wantKey
			if !jsonEqual(toAny(t, stored), toAny(t, ev)) {
				t.Fatal("putting the key in changed more than the key")
			}
			if bytes.Contains(tt.body, []byte(tt.wantKey)) {
				t.Fatal("the stored body holds the key")
			}
		})
	}
}

func toAny(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestPagerDuty_DecodesIntoTheLibrarysEvent: the body decodes, with no
// member left over, into PagerDuty's own Go library's Events API v2 event
// (github.com/PagerDuty/go-pagerduty V2Event), with what the receiver acts
// on where the library reads it.
func TestPagerDuty_DecodesIntoTheLibrarysEvent(t *testing.T) {
	for _, tt := range []struct{ eventType, action string }{
		{webhooks.EventRunErrored, "trigger"},
		{webhooks.EventRunCompleted, "resolve"},
	} {
		t.Run(tt.eventType, func(t *testing.T) {
			body, err := formats.Build(formats.PagerDuty, formats.Input{Envelope: event(tt.eventType), RunURL: runURL})
			if err != nil {
				t.Fatal(err)
			}
			var ev pagerduty.V2Event
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&ev); err != nil {
				t.Fatalf("not a go-pagerduty V2Event: %v\n%s", err, body)
			}
			if ev.Action != tt.action || ev.DedupKey != "wsu_2bL6x2QeLZ1T1Hk3/job/42" || ev.RoutingKey != formats.RoutingKeyMask {
				t.Errorf("action %q, dedup_key %q, routing_key %q", ev.Action, ev.DedupKey, ev.RoutingKey)
			}
			if ev.Payload == nil || ev.Payload.Summary == "" || ev.Payload.Source == "" || ev.Payload.Severity == "" ||
				ev.Payload.Timestamp != "2026-01-02T03:04:12Z" || ev.Payload.Details == nil {
				t.Errorf("payload %+v", ev.Payload)
			}
			if ev.ClientURL != runURL || len(ev.Links) != 1 {
				t.Errorf("client_url %q, links %v", ev.ClientURL, ev.Links)
			}
		})
	}
}
