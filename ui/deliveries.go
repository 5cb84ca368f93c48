package ui

import "net/http"

// deliveriesView is a webhook's Recent Deliveries.
type deliveriesView struct{}

// testResultView is the endpoint's answer to a test delivery.
type testResultView struct{}

// deliveryRoutes lists the delivery pages under a webhook's path.
func (s *Server) deliveryRoutes(base string) {}

// recentDeliveries returns the webhook's newest deliveries, or nil when the
// UI has no delivery engine.
func (s *Server) recentDeliveries(r *http.Request, accountID int64, subscriptionID string) (*deliveriesView, error) {
	return nil, nil
}
