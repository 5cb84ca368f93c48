package deliveries

import (
	"testing"
)

func TestShardKeys_PartitionTheLaneKeys(t *testing.T) {
	for _, shards := range []int{1, 2, 3, 7, 8, 16, 100, 256} {
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
		id   string
		want int
	}{
		{"wsu_abc", 0xe5}, // md5("wsu_abc") = e56cab90...
		{"", 0xd4},        // md5("") = d41d8cd9...
	}
	for _, tt := range tests {
		if got := LaneKey(tt.id); got != tt.want {
			t.Errorf("LaneKey(%q) = %d, want %d", tt.id, got, tt.want)
		}
	}
}

func TestValidShards(t *testing.T) {
	for _, tt := range []struct {
		n  int
		ok bool
	}{{0, false}, {1, true}, {8, true}, {256, true}, {257, false}, {-1, false}} {
		if err := ValidShards(tt.n); (err == nil) != tt.ok {
			t.Errorf("ValidShards(%d) = %v, want ok %v", tt.n, err, tt.ok)
		}
	}
}
