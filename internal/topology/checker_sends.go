package topology

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// checkFailedSends: a delivery recorded failed went to its receiver
// under each of its attempt numbers, once. A failed delivery tells its
// account that the receiver refused every attempt the spec promises: an
// attempt counted and never sent (a claim lost with its worker, a release
// that did not happen) spent one of them without asking the receiver.
// One number sent twice is allowed only where a fault that can lose an
// outcome before its record was under way between the sends (a worker
// killed, the database cut or away): the attempt went out, its outcome
// was not written before its lease ended, and the next claim sent it again
// under the same number (at least once; the note counts them). Anywhere
// else it fails the check.
func (au Audit) checkFailedSends(arrivals map[string][]*Arrival) CheckResult {
	c := CheckResult{Name: CheckFailedSends}
	byFault := map[string]int{}
	againAfterLoss := 0
	for i := range au.Records {
		r := &au.Records[i]
		if r.Status != "failed" {
			continue
		}
		c.Checked++
		as := arrivals[r.ID]
		sends := map[int]int{} // attempt number -> arrivals
		for _, a := range as {
			sends[a.Attempt]++
		}
		wrong, repeated := wrongSends(sends, r.AttemptCount)
		if len(wrong) == 0 && len(repeated) > 0 && losesOutcomes(au.faultsAround(r, as, repeated)) {
			againAfterLoss++
			continue
		}
		wrong = append(wrong, repeated...)
		if len(wrong) == 0 {
			continue
		}
		sort.Ints(wrong)
		var parts []string
		for _, n := range wrong {
			parts = append(parts, fmt.Sprintf("attempt %d sent %d times", n, sends[n]))
		}
		faults := au.faultsAround(r, as, wrong)
		for _, f := range faults {
			byFault[f]++
		}
		if len(faults) == 0 {
			byFault["none"]++
		}
		c.fail("delivery %s failed after %d attempts, its receiver saw %d sends: %s (recorded: %s; faults under way: %s); %s",
			r.ID, r.AttemptCount, len(as), strings.Join(parts, ", "), describeRecorded(*r), orNone(faults), describeSends(r.ID, as))
	}
	c.Note = fmt.Sprintf("%d failed deliveries", c.Checked)
	if againAfterLoss > 0 {
		c.Note += fmt.Sprintf("; %d sent an attempt again under its number, its outcome lost to a worker kill or the database", againAfterLoss)
	}
	if len(byFault) > 0 {
		c.Note += "; faults under way at the attempts that were not sent once: " + countsByKind(byFault)
	}
	return c
}

// losesOutcomes says whether one of faults can lose an attempt's outcome
// before its record: a worker killed, the database cut or away.
func losesOutcomes(faults []string) bool {
	return slices.ContainsFunc(faults, func(f string) bool {
		switch FaultKind(f) {
		case FaultWorkerKill, FaultDatabaseCut, FaultDatabaseOutage:
			return true
		}
		return false
	})
}

// wrongSends splits the attempt numbers of a failed delivery's sends that
// are not exactly 1..attempts once each: wrong (never sent, or outside the
// counted attempts) and repeated (sent more than once).
func wrongSends(sends map[int]int, attempts int) (wrong, repeated []int) {
	for n := 1; n <= attempts; n++ {
		switch {
		case sends[n] == 0:
			wrong = append(wrong, n)
		case sends[n] > 1:
			repeated = append(repeated, n)
		}
	}
	for n := range sends {
		if n < 1 || n > attempts {
			wrong = append(wrong, n)
		}
	}
	sort.Ints(wrong)
	return wrong, repeated
}

// faultsAround names the process and database faults under way between
// the sends that surround the attempt numbers not sent exactly once (from
// the delivery's creation, to 30 s after its last send).
func (au Audit) faultsAround(r *DeliveryRecord, as []*Arrival, numbers []int) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range numbers {
		from := r.CreatedAt
		var sameLast, next time.Time
		for _, a := range as {
			switch {
			case a.Attempt < n:
				if a.At.After(from) {
					from = a.At
				}
			case a.Attempt == n:
				if a.At.After(sameLast) {
					sameLast = a.At // the last send of a repeated attempt
				}
			case next.IsZero() || a.At.Before(next):
				next = a.At // the first send after a missing attempt
			}
		}
		to := sameLast
		if to.IsZero() {
			to = next
		}
		if to.IsZero() || to.Before(from) {
			to = from.Add(30 * time.Second)
		}
		for _, w := range au.Faults {
			if !w.From.After(to) && !w.To.Before(from) && !seen[w.Kind] {
				seen[w.Kind] = true
				out = append(out, w.Kind)
			}
		}
	}
	return out
}

// checkSkipped: a delivery recorded skipped (its webhook was inactive) was
// never answered 2xx: neither a 2xx its receiver wrote within the timeout
// (the sender had it) nor an attempt row that says 2xx. A skipped delivery
// can be replayed: one the receiver already took would be sent again. A
// 2xx written only past the timeout was the attempt's late answer to a
// timeout, which retries may follow: the note counts them.
func (au Audit) checkSkipped(arrivals map[string][]*Arrival) CheckResult {
	c := CheckResult{Name: CheckSkipped}
	late, sent := 0, 0
	for i := range au.Records {
		r := &au.Records[i]
		if r.Status != "skipped" {
			continue
		}
		c.Checked++
		as := arrivals[r.ID]
		if len(as) > 0 {
			sent++
		}
		if au.receivedSuccess(as) {
			c.fail("delivery %s is recorded skipped but its receiver answered it 2xx in time: %s", r.ID, describeArrivals(r.ID, as))
			continue
		}
		if n, o, ok := recorded2xx(r); ok {
			c.fail("delivery %s is recorded skipped but its attempt %d is recorded %s (recorded: %s)", r.ID, n, o, describeRecorded(*r))
			continue
		}
		if received2xx(as) {
			late++
		}
	}
	c.Note = fmt.Sprintf("%d skipped deliveries, %d of them after attempts; %d answered 2xx only past the timeout", c.Checked, sent, late)
	return c
}

// recorded2xx is the first attempt row of r that records a 2xx.
func recorded2xx(r *DeliveryRecord) (int, string, bool) {
	numbers := make([]int, 0, len(r.AttemptOutcomes))
	for n := range r.AttemptOutcomes {
		numbers = append(numbers, n)
	}
	slices.Sort(numbers)
	for _, n := range numbers {
		if code, err := strconv.Atoi(r.AttemptOutcomes[n]); err == nil && code >= 200 && code < 300 {
			return n, r.AttemptOutcomes[n], true
		}
	}
	return 0, "", false
}

// describeSends is describeArrivals, or that nothing arrived.
func describeSends(id string, as []*Arrival) string {
	if len(as) == 0 {
		return "delivery " + id + ": nothing arrived"
	}
	return describeArrivals(id, as)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// countsByKind renders counts, largest first.
func countsByKind(counts map[string]int) string {
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if counts[kinds[i]] != counts[kinds[j]] {
			return counts[kinds[i]] > counts[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}
