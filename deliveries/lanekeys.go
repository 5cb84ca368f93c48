package deliveries

import (
	"crypto/md5" //nolint:gosec // a hash for spreading webhooks over shards, not for security
	"fmt"
)

// Lane keys: a shard owns a contiguous range of them, and the claims read
// the due deliveries of each of its keys. A key's high four bits are its
// destination's bucket and its low four bits the webhook's, and a shard
// owns whole buckets: every webhook of one destination (DestinationKey) is
// in one shard, so one worker at a time sends to it and keeps its in-flight
// limit, while a destination's many webhooks still spread over sixteen
// keys (a busy webhook's backlog hides no other: the claim reads the
// others of a full key).
const (
	// LaneKeys is how many lane keys there are.
	LaneKeys = 256
	// MaxShards is how many shards the lane keys can be split into: one
	// destination bucket each at most.
	MaxShards = LaneKeys >> webhookKeyBits

	webhookKeyBits = 4
	webhookKeyMask = 1<<webhookKeyBits - 1
)

// LaneKey is a webhook's lane key: the high four bits of the first byte of
// the MD5 of its destination key and the low four of its id's. The
// database derives the same (webhook_lane_key, migration 00041) in
// webhook_subscriptions.lane_key, which is what the service reads.
func LaneKey(destinationKey, webhookID string) int {
	dest := md5.Sum([]byte(destinationKey)) //nolint:gosec // see the import
	own := md5.Sum([]byte(webhookID))       //nolint:gosec // see the import
	return int(dest[0]&^webhookKeyMask) | int(own[0]&webhookKeyMask)
}

// ShardOf is the shard, of shards, that owns lane key key.
func ShardOf(key, shards int) int {
	return (key >> webhookKeyBits) * shards / MaxShards
}

// ShardKeys is the range [lo, hi) of lane keys that shard n of shards
// owns: whole destination buckets.
func ShardKeys(n, shards int) (lo, hi int) {
	lo = (n*MaxShards + shards - 1) / shards << webhookKeyBits
	hi = ((n+1)*MaxShards + shards - 1) / shards << webhookKeyBits
	return lo, hi
}

// ValidShards reports whether shards is a usable number of shards.
func ValidShards(shards int) error {
	if shards < 1 || shards > MaxShards {
		return fmt.Errorf("the number of shards must be 1-%d, not %d", MaxShards, shards)
	}
	return nil
}
