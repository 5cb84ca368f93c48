package secrets_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks/secrets"
)

// TestResealAll_WalksEveryPageAndNamesAFailure: every record of pages
// longer than one batch is resealed once, in id order, and a record that
// cannot be resealed stops the walk with its name and the count so far.
func TestResealAll_WalksEveryPageAndNamesAFailure(t *testing.T) {
	ids := make([]string, secrets.ResealBatch+7)
	for i := range ids {
		ids[i] = fmt.Sprintf("id%04d", i)
	}
	list := func(_ context.Context, after string) ([]string, error) {
		var page []string
		for _, id := range ids {
			if id > after && len(page) < secrets.ResealBatch {
				page = append(page, id)
			}
		}
		return page, nil
	}
	seen := map[string]int{}
	n, err := secrets.ResealAll(context.Background(), "things", list, func(_ context.Context, id string) (int, error) {
		seen[id]++
		return 1, nil
	})
	if err != nil || n != len(ids) || len(seen) != len(ids) {
		t.Fatalf("resealed %d (%d distinct) of %d, err %v", n, len(seen), len(ids), err)
	}
	n, err = secrets.ResealAll(context.Background(), "things", list, func(_ context.Context, id string) (int, error) {
		if id == "id0003" {
			return 0, errors.New("no key opens it")
		}
		return 1, nil
	})
	if n != 3 || err == nil || !strings.Contains(err.Error(), "reseal things id0003: no key opens it") {
		t.Fatalf("failure: resealed %d, err %v", n, err)
	}
}
