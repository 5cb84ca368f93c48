package webhooks

// TestDelivery is a test delivery (spec 4.5): one signed attempt of a built
// body, whatever the webhook's state (an inactive webhook can be tested).
// The dispatch service builds it, the test-delivery workflow carries it and
// fills in its own id and run id (recorded with the attempt), and the
// activity sends it. It is a plain value in this package because the
// activity cannot take a type of the workflows package (which imports the
// activities), and the dispatch service should not import the activities.
type TestDelivery struct {
	DeliveryID     string
	SubscriptionID string
	AccountID      int64
	EventID        string
	EventType      string
	// Sample is the test event as a delivery's body is built from it: the
	// spec's body (BuildPayload) or the webhook's format.
	Sample        PayloadEnvelope
	WorkflowID    string
	WorkflowRunID string
}
