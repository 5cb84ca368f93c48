package ui

import "fmt"

// Webhooks is what the UI needs from the subscriptions store.
type Webhooks interface{}

// Deliveries is what the UI needs from the delivery engine.
type Deliveries interface{}

func webhooksPath(accountID int64) string {
	return fmt.Sprintf("/ui/accounts/%d/webhooks", accountID)
}

// webhookRoutes lists the pages of Account Settings › Webhooks.
func (s *Server) webhookRoutes() {}
