package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// feedPageLimit is the page size listen reads the feed in.
const feedPageLimit = 500

// catchUpState is how far listen has caught up with a webhook's feed on
// this computer: every delivery numbered up to After is dealt with, and
// Forwarded lists those above it already forwarded.
type catchUpState struct {
	After     int64   `json:"after"`
	Forwarded []int64 `json:"forwarded,omitempty"`
}

// feedItem is an entry of the webhook's feed (GET .../feed).
type feedItem struct {
	Sequence      string `json:"sequence"`
	DeliveryID    string `json:"delivery_id"`
	EventID       string `json:"event_id"`
	EventType     string `json:"event_type"`
	Status        string `json:"status"`
	Body          string `json:"body"`
	Authorization string `json:"authorization"`
}

// catchUp forwards, oldest first, the webhook's deliveries that ended
// without success while no listen took them (failed once their retries
// ran out, or skipped while the webhook was inactive), each once per
// computer: the state file under the data directory records how far it
// got. A delivery still pending is left to the relay; should it fail, the
// next start forwards it. Errors only cut the catch-up short.
func (l *listener) catchUp(ctx context.Context, accountID int64, opened openedListener, stateDir string) error {
	statePath := filepath.Join(stateDir, "listen", opened.WebhookID+".json")
	state, err := readCatchUpState(statePath)
	if err != nil {
		return err
	}
	feedPath := fmt.Sprintf("/api/v3/accounts/%d/webhooks/subscription/%s/feed", accountID, opened.WebhookID)
	settled := true // every delivery so far is final: After may move
	for after := state.After; ; {
		var page []feedItem
		if err := l.api.call(ctx, http.MethodGet, fmt.Sprintf("%s?after=%d&limit=%d", feedPath, after, feedPageLimit), nil, &page); err != nil {
			return fmt.Errorf("read the webhook's feed: %w", err)
		}
		if len(page) == 0 {
			return nil
		}
		before := fmt.Sprint(state)
		for _, item := range page {
			n, err := strconv.ParseInt(item.Sequence, 10, 64)
			if err != nil {
				return fmt.Errorf("feed entry %q: %w", item.Sequence, err)
			}
			after = n
			final := deliveries.IsFinal(item.Status)
			missed := item.Status == deliveries.StatusFailed || item.Status == deliveries.StatusSkipped
			if missed && !slices.Contains(state.Forwarded, n) {
				l.forwardMissed(ctx, opened.HMACSecret, item)
				state.Forwarded = append(state.Forwarded, n)
			}
			if settled = settled && final; settled {
				state.After = n
			}
		}
		// Recorded page by page: a catch-up cut short forwards nothing twice.
		state.Forwarded = slices.DeleteFunc(state.Forwarded, func(n int64) bool { return n <= state.After })
		if fmt.Sprint(state) != before {
			if err := writeCatchUpState(statePath, state); err != nil {
				return err
			}
		}
	}
}

// forwardMissed POSTs one missed delivery to the local endpoint as it was
// sent (its exact body, Authorization from the feed, webhook-signature made
// with the secret) and prints its line.
func (l *listener) forwardMissed(ctx context.Context, secret string, item feedItem) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	body := []byte(item.Body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.forwardTo, bytes.NewReader(body))
	if err != nil {
		l.printf("catch-up  %s  %s  #%s: %v", item.EventType, item.DeliveryID, item.Sequence, err)
		return
	}
	now := time.Now()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", item.Authorization)
	req.Header.Set(webhooks.HeaderDeliveryID, item.DeliveryID)
	req.Header.Set(webhooks.HeaderEventID, item.EventID)
	req.Header.Set(webhooks.HeaderStandardID, item.DeliveryID)
	req.Header.Set(webhooks.HeaderStandardTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(webhooks.HeaderStandardSignature, webhooks.SignStandard(secret, item.DeliveryID, now, body))
	req.Header.Set(webhooks.HeaderSequence, item.Sequence)
	started := time.Now()
	resp, err := l.local.Do(req)
	if err != nil {
		l.printf("catch-up  %s  %s  #%s (%s)  -> no answer (%v)", item.EventType, item.DeliveryID, item.Sequence, item.Status, err)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	l.printf("catch-up  %s  %s  #%s (%s)  -> %d %s in %d ms", item.EventType, item.DeliveryID, item.Sequence, item.Status,
		resp.StatusCode, http.StatusText(resp.StatusCode), time.Since(started).Milliseconds())
}

func readCatchUpState(path string) (catchUpState, error) {
	var s catchUpState
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read catch-up state: %w", err)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return catchUpState{}, fmt.Errorf("catch-up state %s: %w", path, err)
	}
	return s, nil
}

func writeCatchUpState(path string, s catchUpState) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write catch-up state: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("write catch-up state: %w", err)
	}
	return os.Rename(tmp, path)
}
