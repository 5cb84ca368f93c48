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

// TestShardRoundsBegun_CountsEachShardsRounds: each round begun counts for
// its shard of its number of shards only, from 0; a promise to claim
// leaves the count as it is, and a count made first promises nothing.
func TestShardRoundsBegun_CountsEachShardsRounds(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	begin := func(shard, shards int) {
		t.Helper()
		if err := f.store.BeginShardRound(ctx, shard, shards); err != nil {
			t.Fatal(err)
		}
	}
	begun := func(shard, shards int) int64 {
		t.Helper()
		n, err := f.store.ShardRoundsBegun(ctx, shard, shards)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := begun(0, 2); n != 0 {
		t.Fatalf("a shard without rounds has begun %d, want 0", n)
	}
	begin(0, 2)
	if err := f.store.PromiseShardClaims(ctx, 0, 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	begin(0, 2)
	begin(1, 2)
	for _, c := range []struct {
		shard, shards int
		want          int64
	}{{0, 2, 2}, {1, 2, 1}, {0, 4, 0}} {
		if n := begun(c.shard, c.shards); n != c.want {
			t.Errorf("shard %d of %d began %d rounds, want %d", c.shard, c.shards, n, c.want)
		}
	}
	promises, err := f.store.ShardClaimPromises(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := promises[1]; ok || promises[0] < 50*time.Second {
		t.Errorf("promises %v, want shard 0's minute kept by its next round's start, none for shard 1 (only begun)", promises)
	}
}
