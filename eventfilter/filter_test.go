package eventfilter_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/eventfilter"
)

func errored() webhooks.PayloadEnvelope {
	return webhooks.PayloadEnvelope{
		AccountID: 7, SubscriptionID: "wsu_abc", EventID: "wev_1", WebhookName: "Prod alerts",
		Timestamp: time.Date(2026, 11, 27, 10, 0, 0, 123, time.UTC), EventType: webhooks.EventRunErrored, ToolName: "dbt",
		Data: webhooks.RunData{JobID: "42", JobName: "Nightly", RunID: "9001", EnvironmentID: "3", EnvironmentName: "Prod",
			ToolVersion: "1.8.0", ProjectName: "Analytics", ProjectID: "5", RunStatus: "Errored", RunStatusCode: 20,
			RunStatusMessage: "Database Error", RunReason: "Kicked off from the UI", RunStartedAt: "2026-11-27T09:58:00Z",
			RunErroredAt: "2026-11-27T09:59:59Z"},
	}
}

func TestMatch_AcceptsAndRejects(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want bool
	}{
		{`data.environmentName == "Prod" && data.runReason != "Triggered via API"`, true},
		{`data.environmentName == "Staging"`, false},
		{`eventType == "job.run.errored"`, true},
		{`eventType in ["job.run.started", "job.run.completed"]`, false},
		{`data.runStatusCode == 20 && data.runStatus == "Errored"`, true},
		{`data.runStatusCode >= 20`, true},
		{`accountId == 7 && webhooksID == "wsu_abc" && webhookName.startsWith("Prod")`, true},
		{`eventId == "wev_1" && timestamp == "2026-11-27T10:00:00.000000123Z"`, true},
		{`data.jobId in ["41", "42"] && data.jobName.contains("ight")`, true},
		{`data.runId == "9001" && data.environmentId == "3" && data.projectId == "5"`, true},
		{`data.projectName.matches("^Ana") && data.toolVersion.startsWith("1.8")`, true},
		{`data.runStatusMessage.lowerAscii().contains("database")`, false}, // lowerAscii is an extension, see below
		{`data.runErroredAt != "" && data.runFinishedAt == ""`, true},
		{`timestamp(data.runErroredAt) - timestamp(data.runStartedAt) > duration("60s")`, true},
		{`data.runStartedAt < "2026-11-27T09:00:00Z"`, false},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			f, err := eventfilter.Compile(tc.expr)
			if strings.Contains(tc.expr, "lowerAscii") {
				if err == nil {
					t.Fatalf("Compile(%q) = nil error; lowerAscii is not in the environment", tc.expr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Compile(%q): %v", tc.expr, err)
			}
			got, err := f.MatchPayload(errored())
			if err != nil {
				t.Fatalf("Match: %v", err)
			}
			if got != tc.want {
				t.Errorf("Match(%q) = %v, want %v", tc.expr, got, tc.want)
			}
			if f.String() != tc.expr {
				t.Errorf("String() = %q", f.String())
			}
		})
	}
}

func TestMatch_RunTimesOnlyOnTheirEventType(t *testing.T) {
	p := errored()
	p.EventType, p.Data.RunFinishedAt = webhooks.EventRunStarted, "2026-11-27T10:00:00Z"
	f, err := eventfilter.Compile(`data.runFinishedAt == "" && data.runErroredAt == ""`)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := f.MatchPayload(p); err != nil || !ok {
		t.Errorf("a started run's finished and errored times = %v, %v; want both empty as in its body", ok, err)
	}
}

func TestCompile_Refuses(t *testing.T) {
	for _, tc := range []struct {
		name, expr, want string
	}{
		{"Empty", "  ", "empty"},
		{"Syntax", `data.environmentName == `, "Syntax error"},
		{"UnknownField", `data.environment == "Prod"`, "undeclared reference to 'data'"},
		{"UnknownTopLevel", `payload.jobId == "1"`, "undeclared reference"},
		{"UnknownListsTheFields", `data.env == "Prod"`, "The event's fields are eventType, accountId, webhooksID"},
		{"ToolNameNotNeutral", `data.dbtVersion == "1.8"`, "undeclared reference"},
		{"TypeMismatch", `data.runStatusCode == "20"`, "no matching overload"},
		{"WrongResultString", `data.jobId`, "must be a bool expression"},
		{"WrongResultInt", `data.runStatusCode + 1`, "must be a bool expression"},
		{"TooLong", `data.jobId == "` + strings.Repeat("x", eventfilter.MaxExpressionBytes) + `"`, "at most 2000"},
		{"NotUTF8", "data.jobId == \"\xff\"", "UTF-8"},
		{"TooCostly", `[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, a+b+c+d > 0))))`, "may cost up to"},
		{"TooCostlyStrings", strings.Repeat(`data.runStatusMessage.matches("a+b+c") || `, 40) + "false", "may cost up to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := eventfilter.Compile(tc.expr)
			if err == nil {
				t.Fatalf("Compile(%q) = %v, want an error containing %q", tc.expr, f, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile(%q) error = %q, want it to contain %q", tc.expr, err, tc.want)
			}
		})
	}
}

func TestMatch_EvaluationError(t *testing.T) {
	f, err := eventfilter.Compile(`int(data.jobName) > 3`)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := f.MatchPayload(errored())
	if ok || !errors.Is(err, eventfilter.ErrEvaluation) {
		t.Errorf("Match = %v, %v; want false and ErrEvaluation", ok, err)
	}
}

func TestMatch_ConcurrentUse(t *testing.T) {
	f, err := eventfilter.Compile(`webhookName == "w" + data.jobId`)
	if err != nil {
		t.Fatal(err)
	}
	ev := eventfilter.NewEvent(webhooks.Event{ID: "wev_1", AccountID: 1, Type: webhooks.EventRunStarted,
		Data: webhooks.RunData{JobID: "5"}}, time.Now())
	done := make(chan error, 8)
	for i := range 8 {
		go func() {
			for range 200 {
				name := "w5"
				if i%2 == 1 {
					name = "w6"
				}
				ok, err := f.Match(ev, "wsu_x", name)
				if err != nil || ok != (i%2 == 0) {
					done <- errors.New("wrong answer under concurrency")
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// An event larger than Compile's cost estimate assumed is evaluated with
// the cost limit, which stops a filter that would read it too often.
func TestMatch_CostLimitOnOversizedEvent(t *testing.T) {
	f, err := eventfilter.Compile(strings.Repeat(`data.jobName.contains("zz") || `, 40) + "false")
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	p := errored()
	if ok, err := f.MatchPayload(p); err != nil || ok {
		t.Fatalf("a usual event: Match = %v, %v; want false, nil", ok, err)
	}
	p.Data.JobName = strings.Repeat("y", 100_000)
	if ok, err := f.MatchPayload(p); ok || !errors.Is(err, eventfilter.ErrEvaluation) || !strings.Contains(err.Error(), "cost limit") {
		t.Errorf("an oversized event: Match = %v, %v; want false and the cost limit", ok, err)
	}
}
