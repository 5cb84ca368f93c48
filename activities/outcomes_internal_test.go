package activities

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jobhooks/jobhooks/deliveries"
)

func TestOutcomeError_KeepsShortMessagesAndTheEndsOfLongOnes(t *testing.T) {
	longURL := "https://hooks.example.com/" + strings.Repeat("a", 2000)
	refused := `Post "` + longURL + `": dial tcp 10.0.0.1:443: connect: connection refused`
	tests := []struct {
		name, msg string
		want      string // "" : checked by its parts below
	}{
		{name: "short", msg: "receiver answered 503 Service Unavailable", want: "receiver answered 503 Service Unavailable"},
		{name: "empty", msg: "", want: ""},
		{name: "exactly the bound", msg: strings.Repeat("x", outcomeErrorMax), want: strings.Repeat("x", outcomeErrorMax)},
		{name: "a connection error naming a long client_url", msg: refused},
		{name: "multi-byte runes at both cuts", msg: strings.Repeat("é", 40) + strings.Repeat("ü", 200) + strings.Repeat("ß", 40)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outcomeError(tt.msg)
			if tt.want != "" || tt.msg == "" {
				if got != tt.want {
					t.Fatalf("outcomeError = %q, want %q", got, tt.want)
				}
				return
			}
			if len(got) > outcomeErrorMax || !utf8.ValidString(got) {
				t.Fatalf("outcomeError = %q (%d bytes, valid UTF-8 %v), want at most %d bytes of valid UTF-8", got, len(got), utf8.ValidString(got), outcomeErrorMax)
			}
			head, tail, ok := strings.Cut(got, "…")
			if !ok || !strings.HasPrefix(tt.msg, head) || !strings.HasSuffix(tt.msg, tail) || len(head) < outcomeErrorHead-3 || len(tail) < 50 {
				t.Fatalf("outcomeError = %q, want the message's start and end joined by …", got)
			}
		})
	}
	if got := outcomeError(refused); !strings.HasSuffix(got, "connect: connection refused") {
		t.Fatalf("outcomeError = %q, want the cause kept", got)
	}
}

// A shard round's marker holds an outcome per attempt, up to
// sharedRoundLimit of them: it must stay under what Temporal takes in one
// history event (2 MB by default) whatever the receivers answered, with
// room for the rest of the round's result.
func TestOutcome_ARoundsMarkerIsBounded(t *testing.T) {
	worst := outcomeOf(deliveries.AttemptRecord{
		DeliveryID: "0196a3f2-7c1e-7d2a-9b4e-5f6a7b8c9d0e", AttemptNumber: math.MaxInt32, Status: deliveries.StatusSucceeded,
		StatusCode: 599, RetryIn: 1000 * time.Hour, Duration: 1000 * time.Hour,
		// every character escaped in JSON (6 bytes each)
		ErrorMessage: strings.Repeat("<", 3000),
	})
	worst.Probe = true
	typical := outcomeOf(deliveries.AttemptRecord{
		DeliveryID: "0196a3f2-7c1e-7d2a-9b4e-5f6a7b8c9d0e", AttemptNumber: 1, Status: deliveries.StatusSucceeded,
		StatusCode: 200, Duration: 201 * time.Millisecond,
	})
	size := func(o Outcome) int {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	const markerMax = 3 << 19 // 1.5 MiB of Temporal's 2 MB: room for the result's other lists
	if got := sharedRoundLimit * size(worst); got > markerMax {
		t.Fatalf("a round of %d outcomes of %d bytes is %d bytes, want at most %d", sharedRoundLimit, size(worst), got, markerMax)
	}
	t.Logf("a round's outcomes: %d KB typical (%d bytes each), %d KB at worst", sharedRoundLimit*size(typical)/1000, size(typical), sharedRoundLimit*size(worst)/1000)
}
