package deliveries_test

import (
	"context"
	"testing"
	"time"
)

// TestShardClaimPromises_SayHowLongEachShardStillClaims: a promise is read
// back, as the time it has left, for its number of shards only; a newer
// promise replaces the shard's last; one past its time is left out.
func TestShardClaimPromises_SayHowLongEachShardStillClaims(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, p := range []struct {
		shard, shards int
		d             time.Duration
	}{{0, 2, time.Second}, {1, 2, 10 * time.Millisecond}, {1, 4, time.Minute}, {0, 2, 3 * time.Second}} {
		if err := f.store.PromiseShardClaims(ctx, p.shard, p.shards, p.d); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond) // shard 1 of 2's promise ends
	got, err := f.store.ShardClaimPromises(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("promises of 2 shards: %v, want shard 0's only", got)
	}
	if d := got[0]; d <= 2*time.Second || d > 3*time.Second {
		t.Errorf("shard 0 of 2 still claims for %s, want its last promise of 3s less the time since", d)
	}
	got, err = f.store.ShardClaimPromises(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := got[1]; len(got) != 1 || !ok || d <= 50*time.Second {
		t.Errorf("promises of 4 shards: %v, want shard 1's minute", got)
	}
}
