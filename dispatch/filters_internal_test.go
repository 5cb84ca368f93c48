package dispatch

import (
	"context"
	"errors"
	"testing"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// TestJobNumber: the jobs webhooks name are matched as the ingestion
// statement matches them: digits only, at most 18.
func TestJobNumber(t *testing.T) {
	for _, tc := range []struct {
		jobID string
		want  int64
	}{
		{"42", 42}, {"0042", 42}, {"", -1}, {"4a", -1}, {"-4", -1}, {"123456789012345678", 123456789012345678},
		{"1234567890123456789", -1}, {"٤٢", -1},
	} {
		if got := jobNumber(tc.jobID); got != tc.want {
			t.Errorf("jobNumber(%q) = %d, want %d", tc.jobID, got, tc.want)
		}
	}
}

// alwaysStale is a store whose statement always finds routing changed.
type alwaysStale struct {
	eventStore
	statements, reads int
}

func (s *alwaysStale) IngestEvents(context.Context, []deliveries.NewEvent) ([]deliveries.IngestResult, []deliveries.RoutedWebhook, error) {
	s.statements++
	return nil, nil, &deliveries.StaleRoutingError{Accounts: []int64{1}}
}

func (s *alwaysStale) WebhookRouting(_ context.Context, ids []int64) ([]deliveries.AccountRouting, error) {
	s.reads++
	return []deliveries.AccountRouting{{AccountID: ids[0], Version: int64(s.reads)}}, nil
}

// TestCommitter_RoutingThatKeepsChangingIsAnOutage: a statement that
// keeps finding its accounts' routing changed is retried after each read,
// then its events are answered as an outage (try again), not split or
// refused one by one.
func TestCommitter_RoutingThatKeepsChangingIsAnOutage(t *testing.T) {
	store := &alwaysStale{}
	c := newTestCommitter(store)
	g := newGroup(deliveries.NewEvent{ID: "wev_1", AccountID: 1, Type: webhooks.EventRunErrored},
		deliveries.NewEvent{ID: "wev_2", AccountID: 1, Type: webhooks.EventRunErrored})
	c.flush([]*ingestGroup{g})
	if !errors.Is(g.err, errRoutingChanging) || !outage(g.err) || g.refused != nil {
		t.Fatalf("group err %v (outage %v), refused %v", g.err, outage(g.err), g.refused)
	}
	if store.statements != maxRoutingReads+1 || store.reads != maxRoutingReads {
		t.Errorf("%d statements, %d reads; want %d and %d", store.statements, store.reads, maxRoutingReads+1, maxRoutingReads)
	}
}
