package main

import (
	"log/slog"

	"go.temporal.io/sdk/log"
)

// newTemporalLogger routes the Temporal SDK's logs into our slog logger.
func newTemporalLogger(logger *slog.Logger) log.Logger {
	return log.NewStructuredLogger(logger.With("component", "temporal-sdk"))
}
