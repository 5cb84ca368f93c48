package formats_test

import (
	"strings"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
)

const runURL = "https://ci.example.com/deploy/7/runs/9001"

// event is a plain errored run of job 42, changed by edits.
func event(eventType string, edits ...func(*webhooks.PayloadEnvelope)) webhooks.PayloadEnvelope {
	status, code := webhooks.DefaultRunStatus(eventType)
	e := webhooks.PayloadEnvelope{AccountID: 7, SubscriptionID: "wsu_2bL6x2QeLZ1T1Hk3", EventID: "wev_1",
		Timestamp: time.Date(2026, 1, 2, 3, 5, 0, 123, time.UTC), EventType: eventType, WebhookName: "ops alerts", ToolName: "dbt",
		Data: webhooks.RunData{JobID: "42", JobName: "nightly", RunID: "9001", EnvironmentID: "3", EnvironmentName: "Prod",
			ToolVersion: "1.7.4", ProjectName: "Analytics", ProjectID: "5", RunStatus: status, RunStatusCode: code,
			RunStatusMessage: "Database Error in model orders", RunReason: "Kicked off from the UI", RunStartedAt: "2026-01-02T03:00:00Z"}}
	switch eventType {
	case webhooks.EventRunCompleted:
		e.Data.RunFinishedAt, e.Data.RunStatusMessage = "2026-01-02T03:04:12Z", "Success"
	case webhooks.EventRunErrored:
		e.Data.RunErroredAt = "2026-01-02T03:04:12Z"
	}
	for _, edit := range edits {
		edit(&e)
	}
	return e
}

// everyText sets every outside string of an event to s.
func everyText(s string) func(*webhooks.PayloadEnvelope) {
	return func(e *webhooks.PayloadEnvelope) {
		e.WebhookName = s
		d := &e.Data
		d.JobID, d.JobName, d.RunID, d.EnvironmentID, d.EnvironmentName = s, s, s, s, s
		d.ToolVersion, d.ProjectName, d.ProjectID, d.RunStatus, d.RunStatusMessage, d.RunReason = s, s, s, s, s, s
	}
}

// hostile are outside texts that must not break, inject into or overflow
// a body.
var hostile = []struct {
	name string
	edit func(*webhooks.PayloadEnvelope)
}{
	{"Plain", func(*webhooks.PayloadEnvelope) {}},
	{"NUL", everyText("job\x00name\x00")},
	{"InvalidUTF8", everyText("bad \xff\xfe bytes \xc3")},
	{"ControlCharacters", everyText("\x1b[31mred\x1b[0m\r\nline\ttab\u2028")},
	{"SlackInjection", everyText("<!channel> <@U123> <http://evil.example|click here> & <#C1>")},
	{"MarkdownInjection", everyText("[click](http://evil.example) **bold** `code` <http://evil.example> \\")},
	{"Huge", everyText(strings.Repeat("<&>", 700))},
	{"HugeMultibyte", everyText(strings.Repeat("😀é", 1024))},
	{"HugeQuotes", everyText(strings.Repeat(`"\`, 1024))},
	{"Empty", everyText("")},
}
