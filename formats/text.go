package formats

import (
	"strconv"
	"strings"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/untrusted"
)

// ellipsis ends a text that was cut.
const ellipsis = "…"

// clean is s fit to show: valid UTF-8 without control characters (NUL,
// escapes) but newlines ("\n" alone) and tabs, which become spaces when
// line is set (a name, an id).
func clean(s string, line bool) string {
	s = untrusted.Text(s, 0)
	if !line && strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	}
	if line && strings.ContainsAny(s, "\t\r\n\u2028\u2029") {
		s = strings.Map(func(r rune) rune {
			switch r {
			case '\t', '\r', '\n', '\u2028', '\u2029':
				return ' '
			}
			return r
		}, s)
	}
	return s
}

// runView is an event as every format shows it: cleaned, with what is
// derived from it (its outcome, duration and time).
type runView struct {
	e        webhooks.PayloadEnvelope
	outcome  string // "started", "completed", "errored"
	duration string // "" when unknown (a run that only started)
	at       string // when the event happened: RunTimeFormat
}

func viewOf(e webhooks.PayloadEnvelope) runView {
	v := runView{e: e, at: e.Timestamp.UTC().Format(webhooks.RunTimeFormat)}
	end := ""
	switch e.EventType {
	case webhooks.EventRunStarted:
		v.outcome = "started"
		end = e.Data.RunStartedAt
	case webhooks.EventRunCompleted:
		v.outcome, end = "completed", e.Data.RunFinishedAt
		v.duration = between(e.Data.RunStartedAt, end)
	case webhooks.EventRunErrored:
		v.outcome, end = "errored", e.Data.RunErroredAt
		v.duration = between(e.Data.RunStartedAt, end)
	default:
		v.outcome = clean(e.EventType, true)
	}
	if _, err := time.Parse(webhooks.RunTimeFormat, end); err == nil {
		v.at = end
	}
	return v
}

// between is the time from start to end as "1h2m3s", "" when either is
// missing or end is before start.
func between(start, end string) string {
	s, err1 := time.Parse(webhooks.RunTimeFormat, start)
	e, err2 := time.Parse(webhooks.RunTimeFormat, end)
	if err1 != nil || err2 != nil || e.Before(s) {
		return ""
	}
	return e.Sub(s).String()
}

// status is the run's status and code, "Errored (20)".
func (v runView) status() string {
	return clean(v.e.Data.RunStatus, true) + " (" + strconv.Itoa(v.e.Data.RunStatusCode) + ")"
}

// job names the job: "nightly (42)", or its id alone.
func (v runView) job() string {
	name, id := clean(v.e.Data.JobName, true), clean(v.e.Data.JobID, true)
	if name == "" {
		return id
	}
	return name + " (" + id + ")"
}

// title is one line that says what happened: "Job nightly errored".
func (v runView) title() string {
	name := clean(v.e.Data.JobName, true)
	if name == "" {
		name = clean(v.e.Data.JobID, true)
	}
	return "Job " + name + " " + v.outcome
}

// fit is s with each rune escaped (esc returns its replacement, "" to keep
// it), cut to at most limit as measure counts (runes or bytes) and ended by
// an ellipsis when it was cut. An escape is never cut in two.
func fit(s string, esc func(rune) string, limit int, measure func(string) int) string {
	var b strings.Builder
	room := limit - measure(ellipsis)
	n, fits := 0, 0 // fits: the bytes of b that leave room for an ellipsis
	for _, r := range s {
		piece := esc(r)
		if piece == "" {
			piece = string(r)
		}
		size := measure(piece)
		if n+size > limit {
			return b.String()[:fits] + ellipsis
		}
		b.WriteString(piece)
		if n += size; n <= room {
			fits = b.Len()
		}
	}
	return b.String()
}
