package topology

import (
	"fmt"
	"strings"
	"time"
)

// describeRecorded lists a record's attempt rows for the report.
func describeRecorded(r DeliveryRecord) string {
	var parts []string
	for n := 1; n <= r.AttemptCount; n++ {
		o, ok := r.AttemptOutcomes[n]
		if !ok {
			o = "no row"
		}
		parts = append(parts, fmt.Sprintf("%d %s", n, o))
	}
	return strings.Join(parts, ", ")
}

// describeArrivals lists a delivery's arrivals for the report.
func describeArrivals(id string, as []*Arrival) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = fmt.Sprintf("attempt %d at %s answered %d after %s", a.Attempt, a.At.Format("15:04:05.000"), a.Answered, a.AnsweredAt.Sub(a.At).Round(time.Millisecond))
	}
	return fmt.Sprintf("delivery %s (webhook %s): %s", id, as[0].WebhookID, strings.Join(parts, ", "))
}

// FaultCount is how often one kind of fault was injected.
type FaultCount struct {
	Kind  string
	Count int
	Note  string
}

// FormatReport renders the fault table and the check table as Markdown.
func FormatReport(faults []FaultCount, checks []CheckResult) string {
	var b strings.Builder
	b.WriteString("| Fault | Injected | Notes |\n|---|---|---|\n")
	for _, f := range faults {
		fmt.Fprintf(&b, "| %s | %d | %s |\n", f.Kind, f.Count, f.Note)
	}
	b.WriteString("\n| Check | Checked | Failures | Result | Notes |\n|---|---|---|---|---|\n")
	for _, c := range checks {
		result := "pass"
		if !c.Passed() {
			result = "FAIL"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s |\n", c.Name, c.Checked, c.Failures, result, c.Note)
	}
	for _, c := range checks {
		for _, e := range c.Examples {
			fmt.Fprintf(&b, "\n%s: %s", c.Name, e)
		}
	}
	return b.String()
}
