package main

import (
	"fmt"

	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/ui"
)

// withUI adds the web UI to the API's dependencies. It calls the API's
// subscription use cases, so both apply the same rules; sessions are sealed
// with box.
func withUI(cfg config.Config, box *secrets.Box, deps api.Deps) (api.Deps, error) {
	u, err := ui.New(ui.Deps{
		Identity:      deps.Identity,
		Box:           box,
		Logger:        deps.Logger,
		PublicBaseURL: cfg.PublicBaseURL,
		Subscriptions: deps.Subscriptions,
		Deliveries:    deps.Deliveries,
		DeliveryReads: deps.DeliveryReads,
		// The same delivery settings use cases as the API.
		DeliverySettings: deps.DeliverySettings,
		TemporalWebUI:    cfg.TemporalWebUIURL,
		Namespace:        cfg.TemporalNamespace,
		Incidents:        deps.Incidents,
	})
	if err != nil {
		return api.Deps{}, fmt.Errorf("web UI: %w", err)
	}
	deps.UI = u
	return deps, nil
}
