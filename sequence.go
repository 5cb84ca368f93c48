package webhooks

// HeaderSequence carries a delivery's number among its webhook's
// deliveries of job-run events (1, 2, 3, ... in ingestion order, no gap):
// a receiver that sees a number skipped fetches it from the webhook's
// feed. Test deliveries carry none; a redelivery carries its original's.
const HeaderSequence = "webhook-sequence"
