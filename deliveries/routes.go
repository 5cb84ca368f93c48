package deliveries

// Routes: who takes a webhook's due deliveries.
const (
	// RouteShared: the webhook's shard, in rounds shared with other
	// webhooks (the usual case).
	RouteShared = "shared"
	// RouteOwn: the webhook's own lane workflow, after one of its attempts
	// outlasted a shared round's patience (a slow or hung receiver), until
	// that lane has nothing to do.
	RouteOwn = "own"
	// RoutePaused: nobody; an operator paused the webhook's deliveries.
	// They wait, durably, until it is resumed.
	RoutePaused = "paused"
)
