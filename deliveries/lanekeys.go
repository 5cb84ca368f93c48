package deliveries

import (
	"crypto/md5" //nolint:gosec // a hash for spreading webhooks over shards, not for security
	"fmt"
)

// LaneKeys is how many lane keys webhooks are spread over; a shard owns a
// contiguous range of them.
const LaneKeys = 256

// LaneKey is a webhook's lane key: the first byte of the MD5 of its id.
// The database derives the same (webhook_lane_key, migration 00014).
func LaneKey(subscriptionID string) int {
	sum := md5.Sum([]byte(subscriptionID)) //nolint:gosec // see the import
	return int(sum[0])
}

// ShardOf is the shard, of shards, that owns lane key key.
func ShardOf(key, shards int) int {
	return key * shards / LaneKeys
}

// ShardKeys is the range [lo, hi) of lane keys that shard n of shards owns.
func ShardKeys(n, shards int) (lo, hi int) {
	lo = (n*LaneKeys + shards - 1) / shards
	hi = ((n+1)*LaneKeys + shards - 1) / shards
	return lo, hi
}

// ValidShards reports whether shards is a usable number of shards.
func ValidShards(shards int) error {
	if shards < 1 || shards > LaneKeys {
		return fmt.Errorf("the number of shards must be 1-%d, not %d", LaneKeys, shards)
	}
	return nil
}
