package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// apiClient calls the API with a token, as listen does.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

// apiError is an error answer of the API: its status and user_message.
type apiError struct {
	Code    int
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// apiStatus is the status code of an API error answer; 0 for other errors.
func apiStatus(err error) int {
	var e *apiError
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// call sends body (JSON, nil for none) and decodes the envelope's data into
// out (when not nil). Error answers come back as *apiError.
func (c *apiClient) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Token "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	var env struct {
		Data   json.RawMessage `json:"data"`
		Status struct {
			UserMessage string `json:"user_message"`
		} `json:"status"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%s %s: %s: not an API answer: %.200s", method, path, resp.Status, bytes.TrimSpace(raw))
	}
	if resp.StatusCode >= 300 {
		msg := env.Status.UserMessage
		if msg == "" {
			msg = strings.TrimSpace(resp.Status)
		}
		return &apiError{Code: resp.StatusCode, Message: msg}
	}
	if out != nil && string(env.Data) != "null" {
		if err := json.Unmarshal(env.Data, out); err != nil {
			return fmt.Errorf("%s %s: unexpected data: %w", method, path, err)
		}
	}
	return nil
}

// onlyAccount returns the id of the one account the token reaches.
func (c *apiClient) onlyAccount(ctx context.Context) (int64, error) {
	var accounts []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	if err := c.call(ctx, http.MethodGet, "/api/v2/accounts", nil, &accounts); err != nil {
		return 0, fmt.Errorf("list the token's accounts: %w", err)
	}
	if len(accounts) != 1 {
		names := make([]string, 0, len(accounts))
		for _, a := range accounts {
			names = append(names, fmt.Sprintf("%d (%s)", a.ID, a.Name))
		}
		return 0, fmt.Errorf("the token reaches %d accounts (%s): choose one with --account", len(accounts), strings.Join(names, ", "))
	}
	return accounts[0].ID, nil
}

// openedListener is the API's answer to opening a listener.
type openedListener struct {
	ID                     string `json:"id"`
	Name                   string `json:"name"`
	WebhookID              string `json:"webhook_id"`
	HMACSecret             string `json:"hmac_secret"`
	StandardWebhooksSecret string `json:"standard_webhooks_secret"`
}

// listenerAttempt is one attempt of a delivery handed to this listener.
type listenerAttempt struct {
	ID             string              `json:"id"`
	DeliveryID     string              `json:"delivery_id"`
	EventType      string              `json:"event_type"`
	Attempt        int                 `json:"attempt"`
	Headers        map[string][]string `json:"headers"`
	BodyBase64     string              `json:"body_base64"`
	AnswerWithinMs int64               `json:"answer_within_ms"`
}

// localAnswer is the local endpoint's answer, as the API takes it.
type localAnswer struct {
	StatusCode int                 `json:"status_code,omitempty"`
	Headers    map[string][]string `json:"headers,omitempty"`
	BodyBase64 string              `json:"body_base64,omitempty"`
	Error      string              `json:"error,omitempty"`
	DurationMs int64               `json:"duration_ms"`
}
