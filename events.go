package webhooks

// Event types a subscription can name, in the order the spec lists them.
const (
	EventRunStarted   = "job.run.started"
	EventRunCompleted = "job.run.completed"
	EventRunErrored   = "job.run.errored"
)

// EventTypes lists every valid event type.
var EventTypes = []string{EventRunStarted, EventRunCompleted, EventRunErrored}
