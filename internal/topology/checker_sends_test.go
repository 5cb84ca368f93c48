package topology_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/topology"
)

// failedAudit is one delivery failed after six attempts, each sent once
// and answered 503.
func failedAudit(sent ...int) topology.Audit {
	a := cleanAudit()
	a.Records[0].Status, a.Records[0].AttemptCount = "failed", 6
	a.Records[0].AttemptStarts = map[int]time.Time{}
	a.Arrivals = nil
	for _, n := range sent {
		a.Records[0].AttemptStarts[n] = at(float64(2 * n))
		a.Arrivals = append(a.Arrivals, signedArrival("wsu_a", "wev_1", "wdl_1", n, at(float64(2*n)), "old", 503))
	}
	return a
}

// skippedAudit is one delivery skipped while its webhook was inactive,
// after one attempt answered as answered says.
func skippedAudit(answered int, after time.Duration) topology.Audit {
	a := cleanAudit()
	a.Records[0].Status, a.Records[0].AttemptCount = "skipped", 1
	arrival := signedArrival("wsu_a", "wev_1", "wdl_1", 1, at(1), "old", answered)
	arrival.AnsweredAt = arrival.At.Add(after)
	a.Arrivals = []topology.Arrival{arrival}
	a.Webhooks[0].Inactive = []topology.InactiveSpan{{Requested: at(5), Answered: at(5.5), ReactivateRequested: at(9), ReactivateAnswered: at(9.1)}}
	return a
}

func TestAudit_FailedDeliveriesSentExactlyTheirAttemptCount(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sent   []int
		faults []topology.FaultWindow
		pass   bool
	}{
		{"EveryAttemptSentOnce", []int{1, 2, 3, 4, 5, 6}, nil, true},
		// Counted and never sent: the receiver was asked five times.
		{"AnAttemptNeverSent", []int{1, 2, 4, 5, 6}, nil, false},
		{"NoAttemptSent", nil, nil, false},
		// As many sends as attempts, but one went twice and one never:
		// only the numbers tell.
		{"OneSentTwiceAnotherNever", []int{1, 2, 3, 3, 5, 6}, nil, false},
		{"ASendPastTheCount", []int{1, 2, 3, 4, 5, 6, 7}, nil, false},
		// Sent, its worker killed before the record: the next claim sends
		// the same number again (at least once).
		{"AnAttemptSentAgainAfterAWorkerKill", []int{1, 2, 3, 3, 4, 5, 6},
			[]topology.FaultWindow{{Kind: string(topology.FaultWorkerKill), From: at(5), To: at(5.5)}}, true},
		{"AnAttemptSentAgainAfterADatabaseCut", []int{1, 2, 3, 3, 4, 5, 6},
			[]topology.FaultWindow{{Kind: string(topology.FaultDatabaseCut), From: at(5), To: at(5.5)}}, true},
		{"AnAttemptSentAgainWithoutALosingFault", []int{1, 2, 3, 3, 4, 5, 6},
			[]topology.FaultWindow{{Kind: string(topology.FaultReceiver5xx), From: at(5), To: at(5.5)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := failedAudit(tc.sent...)
			a.Faults = tc.faults
			f := failures(t, a)
			if tc.pass && f[topology.CheckFailedSends] != 0 {
				t.Fatalf("failures %v, want none in %q", f, topology.CheckFailedSends)
			}
			if !tc.pass && f[topology.CheckFailedSends] == 0 {
				t.Fatalf("failures %v, want some in %q", f, topology.CheckFailedSends)
			}
		})
	}
}

func TestAudit_FailedSendsNameTheFaultUnderWay(t *testing.T) {
	a := failedAudit(1, 2, 4, 5, 6) // attempt 3 lost between the sends at 4 s and 8 s
	a.Faults = []topology.FaultWindow{
		{Kind: "app database connections cut", From: at(5), To: at(7)},
		{Kind: "worker SIGKILL, restart", From: at(20), To: at(22)},
	}
	for _, c := range a.Check() {
		if c.Name != topology.CheckFailedSends {
			continue
		}
		if c.Failures != 1 || !strings.Contains(c.Note, "app database connections cut 1") || strings.Contains(c.Note, "SIGKILL") {
			t.Fatalf("%d failures, note %q; want 1, blamed on the cut alone", c.Failures, c.Note)
		}
		if !strings.Contains(c.Examples[0], "attempt 3 sent 0 times") {
			t.Errorf("example %q does not say which attempt went unsent", c.Examples[0])
		}
		return
	}
	t.Fatal("no failed-sends check")
}

func TestAudit_SkippedDeliveriesNeverAnswered2xx(t *testing.T) {
	for _, tc := range []struct {
		name  string
		audit func() topology.Audit
		pass  bool
	}{
		{"NeverSent", func() topology.Audit {
			a := skippedAudit(0, 0)
			a.Arrivals = nil
			a.Records[0].AttemptCount = 0
			return a
		}, true},
		{"AfterA503", func() topology.Audit { return skippedAudit(503, 10*time.Millisecond) }, true},
		// Its attempt timed out: the late 2xx was its late answer.
		{"AfterA2xxPastTheTimeout", func() topology.Audit { return skippedAudit(200, 3*time.Second) }, true},
		{"AfterA2xxInTime", func() topology.Audit { return skippedAudit(200, 10*time.Millisecond) }, false},
		// The record itself knew of the 2xx (the receiver's view lost).
		{"WithA2xxAttemptRow", func() topology.Audit {
			a := skippedAudit(0, 0)
			a.Arrivals = nil
			a.Records[0].AttemptOutcomes = map[int]string{1: "204"}
			return a
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := failures(t, tc.audit())
			if tc.pass && f[topology.CheckSkipped] != 0 {
				t.Fatalf("failures %v, want none in %q", f, topology.CheckSkipped)
			}
			if !tc.pass && f[topology.CheckSkipped] == 0 {
				t.Fatalf("failures %v, want some in %q", f, topology.CheckSkipped)
			}
		})
	}
}
