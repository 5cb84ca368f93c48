package secrets

import (
	"context"
	"fmt"
)

// ResealBatch is how many records a reseal lists at a time.
const ResealBatch = 500

// ResealAll walks the records not sealed with the primary key a page at a
// time, in id order: list returns up to ResealBatch ids after the given
// one, and resealOne reseals one (under its row's lock) and says how many
// secrets it resealed. It returns how many were resealed in all; what names
// the records in errors.
func ResealAll(ctx context.Context, what string, list func(ctx context.Context, after string) ([]string, error),
	resealOne func(ctx context.Context, id string) (int, error)) (int, error) {
	resealed, after := 0, ""
	for {
		ids, err := list(ctx, after)
		if err != nil {
			return resealed, fmt.Errorf("reseal %s: %w", what, err)
		}
		for _, id := range ids {
			n, err := resealOne(ctx, id)
			resealed += n
			if err != nil {
				return resealed, fmt.Errorf("reseal %s %s: %w", what, id, err)
			}
			after = id
		}
		if len(ids) < ResealBatch {
			return resealed, nil
		}
	}
}
