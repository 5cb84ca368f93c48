package topology

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jobhooks/jobhooks/deliveries"
)

// checkHostile: a delivery whose receiver gave a hostile answer
// (HostileAnswers) is recorded like any other (the other checks hold it
// to being final, delivered at least once or failed after its six sends,
// counted as its receiver saw it), and more:
//
//   - each hostile answer's attempt row says what the answer was
//     (HostileAnswer.Recorded: its status, or a timeout for one that
//     trickled past the timeout, or a failed connection for one that was
//     not HTTP), unless that attempt was sent twice (which answer its row
//     holds is not known), has no row (its outcome was lost in a crash:
//     the note counts them) or was not whole when the sender went away;
//   - every attempt row of the delivery keeps texts fit to show: valid
//     UTF-8 without NUL or other control characters, within the stored
//     bounds.
func (au Audit) checkHostile(byID map[string]*DeliveryRecord, arrivals map[string][]*Arrival) CheckResult {
	c := CheckResult{Name: CheckHostile}
	ids := make([]string, 0, len(arrivals))
	for id, as := range arrivals {
		if slices.ContainsFunc(as, func(a *Arrival) bool { return a.Hostile != "" }) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	answers, compared, unrecorded := 0, 0, 0
	byAnswer := map[string]int{}
	for _, id := range ids {
		as := arrivals[id]
		c.Checked++
		r := byID[id]
		if r == nil {
			c.fail("delivery %s got hostile answers but has no record: %s", id, describeArrivals(id, as))
			continue
		}
		sends := map[int]int{}
		for _, a := range as {
			sends[a.Attempt]++
		}
		for _, a := range as {
			if a.Hostile == "" {
				continue
			}
			answers++
			byAnswer[a.Hostile]++
			h, ok := HostileAnswerNamed(a.Hostile)
			if !ok {
				c.fail("delivery %s attempt %d: unknown hostile answer %q", id, a.Attempt, a.Hostile)
				continue
			}
			got, recorded := r.AttemptOutcomes[a.Attempt]
			switch {
			case sends[a.Attempt] != 1, a.AnsweredAt.IsZero():
				continue
			case !recorded:
				unrecorded++
				continue
			}
			want := h.Recorded
			if au.Timeout > 0 && a.AnsweredAt.Sub(a.At) >= au.Timeout {
				want = "timeout" // whole only past the timeout (a loaded machine)
			}
			compared++
			if got != want {
				c.fail("delivery %s attempt %d: its receiver answered %q (whole after %s), the record says %s, want %s",
					id, a.Attempt, a.Hostile, a.AnsweredAt.Sub(a.At).Round(time.Millisecond), got, want)
			}
		}
		for _, n := range sortedKeys(r.AttemptSnippets) {
			if why := unfit(r.AttemptSnippets[n], deliveries.StoredSnippetMax); why != "" {
				c.fail("delivery %s attempt %d: its snippet %q %s", id, n, r.AttemptSnippets[n], why)
			}
		}
		for _, n := range sortedKeys(r.AttemptMessages) {
			if why := unfit(r.AttemptMessages[n], deliveries.StoredMessageMax); why != "" {
				c.fail("delivery %s attempt %d: its error message %q %s", id, n, r.AttemptMessages[n], why)
			}
		}
	}
	c.Note = fmt.Sprintf("%d hostile answers to %d deliveries, %d compared with their attempt rows, %d without a row (lost in a crash)",
		answers, c.Checked, compared, unrecorded)
	if len(byAnswer) > 0 {
		c.Note += "; " + countsByKind(byAnswer)
	}
	return c
}

// unfit says what makes s unfit to show and store, or "" when it is fit.
func unfit(s string, max int) string {
	var why []string
	if !utf8.ValidString(s) {
		why = append(why, "is not valid UTF-8")
	}
	if strings.ContainsFunc(s, func(r rune) bool {
		return (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f || (r >= 0x80 && r < 0xa0)
	}) {
		why = append(why, "holds NUL or control characters")
	}
	if len(s) > max {
		why = append(why, fmt.Sprintf("is %d bytes, over %d", len(s), max))
	}
	return strings.Join(why, ", ")
}

func sortedKeys(m map[int]string) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
