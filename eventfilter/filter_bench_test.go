package eventfilter_test

import (
	"testing"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/eventfilter"
)

// BenchmarkMatch is one event against one webhook's filter, the event built
// once as ingestion builds it for all the webhooks that match it; the
// figure times 1,000 is a fan-out's cost.
func BenchmarkMatch(b *testing.B) {
	p := errored()
	ev := eventfilter.NewEvent(webhooks.Event{ID: p.EventID, AccountID: p.AccountID, Type: p.EventType, Data: p.Data}, p.Timestamp)
	for _, expr := range []string{
		`data.environmentName == "Prod" && data.runReason != "Triggered via API"`,
		`eventType == "job.run.errored" && data.jobId in ["1", "2", "42"] && webhookName.startsWith("Prod")`,
		`data.projectName.matches("^Ana.*s$")`,
	} {
		f, err := eventfilter.Compile(expr)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(expr, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Match(ev, p.SubscriptionID, p.WebhookName); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNewEvent is what an event costs once, whatever its fan-out.
func BenchmarkNewEvent(b *testing.B) {
	p := errored()
	e := webhooks.Event{ID: p.EventID, AccountID: p.AccountID, Type: p.EventType, Data: p.Data}
	b.ReportAllocs()
	for b.Loop() {
		eventfilter.NewEvent(e, p.Timestamp)
	}
}

// BenchmarkCompile is what a filter costs to compile: why ingestion keeps
// compiled filters in a Cache.
func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := eventfilter.Compile(`data.environmentName == "Prod" && data.runReason != "Triggered via API"`); err != nil {
			b.Fatal(err)
		}
	}
}
