package topology_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/topology"
)

// Hostile answers by name, as the chaos receiver gives them.
var (
	nulBody200   = topology.HostileAnswers[0].Name
	nulBody500   = topology.HostileAnswers[1].Name
	nulHeader200 = topology.HostileAnswers[3].Name
	trickle200   = topology.HostileAnswers[5].Name
)

// hostileArrival is an attempt answered with the hostile answer name,
// whole after took.
func hostileArrival(attempt int, when float64, name string, answered int, took time.Duration) topology.Arrival {
	a := signedArrival("wsu_a", "wev_1", "wdl_1", attempt, at(when), "old", answered)
	a.Hostile, a.AnsweredAt = name, a.At.Add(took)
	return a
}

// hostileAudit is one delivery answered 500 with NUL in the body, then
// 200 with NUL in a header (not HTTP), then 200 with a body that trickles
// past the timeout, then 200: succeeded after four attempts, each
// recorded as it was answered, with texts cleaned.
func hostileAudit() topology.Audit {
	a := cleanAudit()
	a.Records[0].AttemptCount = 4
	a.Records[0].AttemptStarts = map[int]time.Time{1: at(1), 2: at(3), 3: at(5), 4: at(9)}
	a.Records[0].AttemptOutcomes = map[int]string{1: "500", 2: "connection", 3: "timeout", 4: "200"}
	a.Records[0].AttemptSnippets = map[int]string{1: "\uFFFD\uFFFD\uFFFD failed \uFFFD"}
	a.Records[0].AttemptMessages = map[int]string{1: "receiver answered 500 Internal Server Error",
		2: `Post "http://127.0.0.1:1/hook/1": malformed MIME header line: "Retry-After: 1\x00"`, 3: "no complete response within 2s"}
	a.Arrivals = []topology.Arrival{
		hostileArrival(1, 1, nulBody500, 500, 5*time.Millisecond),
		hostileArrival(2, 3, nulHeader200, 0, 5*time.Millisecond),
		hostileArrival(3, 5, trickle200, 200, 3*time.Second),
		signedArrival("wsu_a", "wev_1", "wdl_1", 4, at(9), "old", 200),
	}
	return a
}

func TestAudit_HostileAnswersRecordedAsAnswered(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(a *topology.Audit)
		pass    bool
		orCheck string // another check that must fail with it, if any
	}{
		{"AsAnswered", func(*topology.Audit) {}, true, ""},
		// A 200 whole only past the timeout was a timeout to the sender.
		{"A2xxWholeOnlyPastTheTimeout", func(a *topology.Audit) {
			a.Arrivals[0] = hostileArrival(1, 1, nulBody200, 200, 2500*time.Millisecond)
			a.Records[0].AttemptOutcomes[1] = "timeout"
		}, true, ""},
		// Its outcome lost with a worker: no row to compare.
		{"AnAnswerWithoutARow", func(a *topology.Audit) { delete(a.Records[0].AttemptOutcomes, 2) }, true, ""},
		// Sent twice under one number: which answer the row holds is not known.
		{"AnAttemptSentTwice", func(a *topology.Audit) {
			a.Arrivals = append(a.Arrivals, hostileArrival(2, 3.5, nulBody500, 500, 5*time.Millisecond))
			a.Records[0].AttemptCount = 5
		}, true, ""},
		{"TheSenderWentAwayFirst", func(a *topology.Audit) {
			a.Arrivals[2].AnsweredAt, a.Arrivals[2].Answered = time.Time{}, 0
			a.Records[0].AttemptOutcomes[3] = "connection"
		}, true, ""},
		{"ANon2xxRecordedAsAnother", func(a *topology.Audit) { a.Records[0].AttemptOutcomes[1] = "502" }, false, ""},
		// An answer that is not HTTP has no status to record.
		{"AnAnswerThatIsNotHTTPRecordedWithAStatus", func(a *topology.Audit) { a.Records[0].AttemptOutcomes[2] = "200" }, false, ""},
		{"ATrickleRecordedAsItsStatus", func(a *topology.Audit) { a.Records[0].AttemptOutcomes[3] = "200" }, false, ""},
		{"ASnippetWithNUL", func(a *topology.Audit) { a.Records[0].AttemptSnippets[1] = "ok\x00done" }, false, ""},
		{"ASnippetWithAnEscape", func(a *topology.Audit) { a.Records[0].AttemptSnippets[1] = "\x1b[31mred" }, false, ""},
		{"ASnippetWithInvalidUTF8", func(a *topology.Audit) { a.Records[0].AttemptSnippets[1] = "\xff\xfe" }, false, ""},
		{"ASnippetOverItsBound", func(a *topology.Audit) { a.Records[0].AttemptSnippets[1] = strings.Repeat("x", 513) }, false, ""},
		{"AMessageOverItsBound", func(a *topology.Audit) { a.Records[0].AttemptMessages[2] = strings.Repeat("é", 2049) }, false, ""},
		{"NoRecord", func(a *topology.Audit) { a.Records = nil }, false, topology.CheckLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := hostileAudit()
			tc.change(&a)
			f := failures(t, a)
			switch {
			case tc.pass && len(f) != 0:
				t.Fatalf("failures %v, want none", f)
			case !tc.pass && f[topology.CheckHostile] == 0:
				t.Fatalf("failures %v, want some in %q", f, topology.CheckHostile)
			case tc.orCheck != "" && f[tc.orCheck] == 0:
				t.Fatalf("failures %v, want some in %q too", f, tc.orCheck)
			}
		})
	}
}
