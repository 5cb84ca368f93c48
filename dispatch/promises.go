package dispatch

import (
	"context"
	"sync"
	"time"
)

// promiseReadEvery is how often, at most, the waker reads the shards'
// claim promises, and only while it is asked to wake shards.
const promiseReadEvery = 100 * time.Millisecond

// promiseMargin is taken off every promise: what the clocks' rates and the
// read may add.
const promiseMargin = 50 * time.Millisecond

// claimPromises follows the promises of steady shards' rounds to claim
// for a while (deliveries.Store.PromiseShardClaims): a delivery committed
// while its shard's promise holds is claimed by that round, or found by
// its last look for due work, so it needs no wake-up.
//
// A read's promises are counted from when the read was sent, on this
// process's clock: the database counts them from its statement's start,
// which is no earlier, so a commit acknowledged before sent+promise was
// made before the promise's end on the database's clock. Wake is called
// after the commit was acknowledged, so a shard covered at that time is
// covered for it.
type claimPromises struct {
	read func(ctx context.Context) (map[int]time.Duration, error)

	mu      sync.Mutex
	until   map[int]time.Time // by shard: what was committed before needs no wake-up
	readAt  time.Time         // when the last read was sent
	reading bool
}

func newClaimPromises(read func(ctx context.Context) (map[int]time.Duration, error)) *claimPromises {
	return &claimPromises{read: read, until: map[int]time.Time{}}
}

// covers says whether the shard's round is known to claim what was
// committed before now. It reads the promises again when the last read is
// promiseReadEvery old (in the background: this wake-up does not wait).
func (c *claimPromises) covers(shard int) bool {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.reading && now.Sub(c.readAt) >= promiseReadEvery {
		c.reading, c.readAt = true, now
		go c.refresh(now)
	}
	return now.Before(c.until[shard])
}

// refresh reads the promises, sent at sent; a read that fails leaves the
// promises known (each still holds until its time).
func (c *claimPromises) refresh(sent time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	promises, err := c.read(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reading = false
	if err != nil {
		return
	}
	for shard, d := range promises {
		if until := sent.Add(d - promiseMargin); until.After(c.until[shard]) {
			c.until[shard] = until
		}
	}
}
