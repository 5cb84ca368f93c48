package deliveries

import (
	"crypto/md5" //nolint:gosec // the lane key's hash
	"fmt"
	"testing"
)

func TestShardKeys_PartitionTheLaneKeys(t *testing.T) {
	for _, shards := range []int{1, 2, 3, 5, 7, 8, 11, 16} {
		owner := make([]int, LaneKeys)
		for i := range owner {
			owner[i] = -1
		}
		for n := range shards {
			lo, hi := ShardKeys(n, shards)
			for k := lo; k < hi; k++ {
				if owner[k] != -1 {
					t.Fatalf("shards=%d: key %d owned by %d and %d", shards, k, owner[k], n)
				}
				owner[k] = n
			}
		}
		for k, n := range owner {
			if n == -1 {
				t.Fatalf("shards=%d: key %d has no shard", shards, k)
			}
			if got := ShardOf(k, shards); got != n {
				t.Fatalf("shards=%d: ShardOf(%d) = %d, but shard %d's range holds it", shards, k, got, n)
			}
		}
	}
}

func TestLaneKey(t *testing.T) {
	tests := []struct {
		destination, id string
		want            int
	}{
		// md5("1 https://h.example:443") = dd..., md5("wsu_abc") = e5...
		{"1 https://h.example:443", "wsu_abc", 0xd5},
		// md5("wsu_other") = ..., the low four bits of the webhook's
		{"1 https://h.example:443", "wsu_other", 0xd0 | lowNibble("wsu_other")},
		// md5("") = d4..., md5("wsu_abc") = e5...
		{"", "wsu_abc", 0xd5},
	}
	for _, tt := range tests {
		if got := LaneKey(tt.destination, tt.id); got != tt.want {
			t.Errorf("LaneKey(%q, %q) = %#x, want %#x", tt.destination, tt.id, got, tt.want)
		}
	}
}

func lowNibble(s string) int {
	sum := md5.Sum([]byte(s)) //nolint:gosec // the lane key's hash
	return int(sum[0] & 0x0f)
}

// TestLaneKey_ADestinationIsInOneShard: whatever the number of shards, the
// webhooks of one destination are all in one shard, and they still spread
// over sixteen lane keys.
func TestLaneKey_ADestinationIsInOneShard(t *testing.T) {
	for _, shards := range []int{1, 2, 3, 7, 16} {
		for d := range 50 {
			dest := fmt.Sprintf("%d https://receiver-%d.example:443", d%5, d)
			keys := map[int]bool{}
			shardsSeen := map[int]bool{}
			for i := range 200 {
				key := LaneKey(dest, fmt.Sprintf("wsu_%d_%d", d, i))
				keys[key] = true
				shardsSeen[ShardOf(key, shards)] = true
			}
			if len(shardsSeen) != 1 {
				t.Fatalf("shards=%d: destination %q's webhooks are in shards %v", shards, dest, shardsSeen)
			}
			if len(keys) != 16 {
				t.Fatalf("destination %q's 200 webhooks have %d lane keys, want 16", dest, len(keys))
			}
		}
	}
}

func TestValidShards(t *testing.T) {
	for _, tt := range []struct {
		n  int
		ok bool
	}{{0, false}, {1, true}, {8, true}, {16, true}, {17, false}, {256, false}, {-1, false}} {
		if err := ValidShards(tt.n); (err == nil) != tt.ok {
			t.Errorf("ValidShards(%d) = %v, want ok %v", tt.n, err, tt.ok)
		}
	}
}
