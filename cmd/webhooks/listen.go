package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/listeners"
)

const listenUsage = `Receives a webhook's deliveries on this computer, without any inbound port,
and forwards each to --forward-to with its exact body and headers (signatures
included), printing one line per delivery: its event type, delivery id and
attempt, and the local answer (status, milliseconds).

It signs in with an API token (--token, else WEBHOOKS_API_TOKEN, else the
token webhooks dev keeps in WEBHOOKS_DATA_DIR) and opens the account's
listener called --name: a webhook whose deliveries the API relays to this
command over a long poll. The same name reuses the same webhook; deliveries
made while nobody listens fail and are retried, as for any receiver that is
down. Deliveries are signed, recorded and retried as for any webhook: the
local answer is the delivery's answer. The signing secret is printed at
start so the local endpoint can verify signatures.`

// listenPollWait is how long each long poll waits for an attempt.
const listenPollWait = 25 * time.Second

// maxListenInFlight bounds the deliveries forwarded at once.
const maxListenInFlight = 16

func runListen(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "listen", listenUsage)
	defaultAPI := "http://127.0.0.1:8080"
	if a := env.getenv("HTTP_ADDR"); a != "" {
		defaultAPI = "http://" + a
	}
	forwardTo := fs.String("forward-to", "", "local URL each delivery is POSTed to, such as http://localhost:3000/webhooks (required)")
	apiURL := fs.String("api", defaultAPI, "base URL of the API")
	token := fs.String("token", "", "API token (default: WEBHOOKS_API_TOKEN, else the token webhooks dev keeps)")
	account := fs.Int64("account", 0, "account id (default: the one account the token reaches)")
	name := fs.String("name", "webhooks listen", "listener name: the same name reuses the same webhook")
	events := fs.String("events", strings.Join(webhooks.EventTypes, ","), "event types to receive, comma separated")
	var jobs stringList
	fs.Var(&jobs, "job", "a job id to receive events of (repeatable; default: every job)")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	target, err := url.Parse(*forwardTo)
	if *forwardTo == "" || err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		fmt.Fprintln(env.stderr, "--forward-to must be an http or https URL, such as http://localhost:3000/webhooks")
		fs.Usage()
		return errUsage
	}
	jobIDs := make([]int64, 0, len(jobs))
	for _, j := range jobs {
		id, err := strconv.ParseInt(j, 10, 64)
		if err != nil || id <= 0 {
			return fmt.Errorf("--job %q is not a job id", j)
		}
		jobIDs = append(jobIDs, id)
	}
	tok := firstNonEmpty(*token, env.getenv("WEBHOOKS_API_TOKEN"), devDemoToken(env.getenv))
	if tok == "" {
		return fmt.Errorf("an API token is required: --token, WEBHOOKS_API_TOKEN, or a webhooks dev with WEBHOOKS_DATA_DIR %s", devDataDir(env.getenv))
	}
	l := &listener{
		env:       env,
		api:       &apiClient{base: strings.TrimRight(*apiURL, "/"), token: tok, http: &http.Client{}},
		forwardTo: target.String(),
		local: &http.Client{
			Transport:     &http.Transport{Proxy: nil, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: maxListenInFlight},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	accountID := *account
	if accountID == 0 {
		if accountID, err = l.api.onlyAccount(ctx); err != nil {
			return err
		}
	}
	var opened openedListener
	path := fmt.Sprintf("/api/v3/accounts/%d/webhooks/listeners", accountID)
	if err := l.api.call(ctx, http.MethodPost, path, map[string]any{
		"name": *name, "event_types": splitList(*events), "job_ids": jobIDs,
	}, &opened); err != nil {
		return fmt.Errorf("open listener %q: %w", *name, err)
	}
	l.attemptsPath = fmt.Sprintf("%s/%s/attempts", path, opened.ID)
	scope := "every job"
	if len(jobIDs) > 0 {
		scope = "jobs " + strings.Join(jobs, ", ")
	}
	fmt.Fprintf(env.stdout, "Listening as %q (listener %s, webhook %s) for %s of %s in account %d.\n",
		opened.Name, opened.ID, opened.WebhookID, strings.Join(splitList(*events), ", "), scope, accountID)
	fmt.Fprintf(env.stdout, "Forwarding to %s. Signing secret: %s (Standard Webhooks: %s).\n",
		l.forwardTo, opened.HMACSecret, opened.StandardWebhooksSecret)
	fmt.Fprintln(env.stdout, "Ctrl-C stops; deliveries made meanwhile are retried to the next listen with this name.")
	if err := l.catchUp(ctx, accountID, opened, devDataDir(env.getenv)); err != nil { // listen_catchup.go
		l.printf("catch-up stopped: %v", err)
	}
	return l.run(ctx)
}

// listener is one running `webhooks listen`.
type listener struct {
	env          *environment
	api          *apiClient
	forwardTo    string
	local        *http.Client
	attemptsPath string
	printMu      sync.Mutex
}

// run polls until ctx ends, forwarding each attempt in the background;
// then it lets the forwards in flight finish and answer.
func (l *listener) run(ctx context.Context) error {
	var inFlight sync.WaitGroup
	defer inFlight.Wait()
	slots := make(chan struct{}, maxListenInFlight)
	backoff := time.Second
	for ctx.Err() == nil {
		att, err := l.next(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			switch apiStatus(err) {
			case http.StatusNotFound:
				return fmt.Errorf("the listener is gone (was its webhook deleted?); start listen again: %w", err)
			case http.StatusUnauthorized, http.StatusForbidden:
				return err
			case http.StatusTooManyRequests:
				l.printf("the API refused the poll (%v); polling again in %s", err, backoff)
			default:
				l.printf("API unreachable (%v); polling again in %s", err, backoff)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 15*time.Second)
			continue
		}
		backoff = time.Second
		if att == nil {
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		inFlight.Add(1)
		go func() {
			defer inFlight.Done()
			defer func() { <-slots }()
			// A forward started before Ctrl-C still answers: the attempt
			// is recorded with the local answer rather than timing out.
			l.forward(context.WithoutCancel(ctx), *att)
		}()
	}
	return nil
}

// next long polls for the next attempt; nil when none came.
func (l *listener) next(ctx context.Context) (*listenerAttempt, error) {
	ctx, cancel := context.WithTimeout(ctx, listenPollWait+15*time.Second)
	defer cancel()
	var att listenerAttempt
	err := l.api.call(ctx, http.MethodGet, fmt.Sprintf("%s/next?wait=%d", l.attemptsPath, int(listenPollWait.Seconds())), nil, &att)
	if err != nil || att.ID == "" {
		return nil, err
	}
	return &att, nil
}

// forward POSTs one attempt to the local endpoint, answers it and prints
// its line.
func (l *listener) forward(ctx context.Context, att listenerAttempt) {
	body, err := base64.StdEncoding.DecodeString(att.BodyBase64)
	if err != nil {
		l.printf("%s  %s  attempt %d: the API sent a body that is not base64: %v", att.EventType, att.DeliveryID, att.Attempt, err)
		return
	}
	// Leave time to carry the answer back before the relay gives up.
	within := time.Duration(att.AnswerWithinMs)*time.Millisecond - 300*time.Millisecond
	fctx, cancel := context.WithTimeout(ctx, max(within, 200*time.Millisecond))
	defer cancel()
	ans := l.callLocal(fctx, att, body)
	ctx, cancelAnswer := context.WithTimeout(ctx, 10*time.Second)
	defer cancelAnswer()
	err = l.api.call(ctx, http.MethodPost, fmt.Sprintf("%s/%s/answer", l.attemptsPath, att.ID), ans, nil)
	l.printf("%s", attemptLine(att, ans, err))
}

// callLocal makes the local request and returns its answer for the API.
func (l *listener) callLocal(ctx context.Context, att listenerAttempt, body []byte) localAnswer {
	started := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.forwardTo, bytes.NewReader(body))
	if err != nil {
		return localAnswer{Error: err.Error()}
	}
	for k, vs := range att.Headers {
		req.Header[k] = append([]string(nil), vs...)
	}
	resp, err := l.local.Do(req)
	if err != nil {
		return localAnswer{Error: localError(ctx, err), DurationMs: time.Since(started).Milliseconds()}
	}
	defer resp.Body.Close()
	head, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil && ctx.Err() != nil {
		return localAnswer{Error: localError(ctx, err), DurationMs: time.Since(started).Milliseconds()}
	}
	ans := localAnswer{StatusCode: resp.StatusCode, DurationMs: time.Since(started).Milliseconds(), Headers: map[string][]string{}}
	for _, name := range listeners.AnswerHeaders() {
		if v := resp.Header.Values(name); len(v) > 0 {
			ans.Headers[name] = v
		}
	}
	if len(head) > 0 {
		ans.BodyBase64 = base64.StdEncoding.EncodeToString(head)
	}
	return ans
}

// localError says why the local endpoint gave no answer.
func localError(ctx context.Context, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "no answer before the relay's deadline"
	}
	return err.Error()
}

// attemptLine is what listen prints for one attempt: when, the event type,
// the delivery id and attempt, the local answer, and what the delivery
// becomes (answerErr: the API did not take the answer).
func attemptLine(att listenerAttempt, ans localAnswer, answerErr error) string {
	var local, outcome string
	if ans.Error != "" {
		local = fmt.Sprintf("no answer after %d ms (%s)", ans.DurationMs, ans.Error)
		outcome = attemptOutcome(att.Attempt, deliveries.KindConnection, 0)
	} else {
		local = fmt.Sprintf("%d %s in %d ms", ans.StatusCode, http.StatusText(ans.StatusCode), ans.DurationMs)
		kind := ""
		if ans.StatusCode < 200 || ans.StatusCode > 299 {
			kind = deliveries.KindHTTPStatus
		}
		outcome = attemptOutcome(att.Attempt, kind, ans.StatusCode)
		outcome = withDirective(outcome, kind, http.Header(ans.Headers).Get(webhooks.HeaderDirective))
	}
	switch {
	case apiStatus(answerErr) == http.StatusConflict:
		local += "; too late: the attempt had timed out"
		outcome = attemptOutcome(att.Attempt, deliveries.KindTimeout, 0)
	case answerErr != nil:
		local += fmt.Sprintf("; the answer did not reach the API (%v)", answerErr)
		outcome = attemptOutcome(att.Attempt, deliveries.KindTimeout, 0)
	}
	return fmt.Sprintf("%s  %s  attempt %d  -> %s  %s", att.EventType, att.DeliveryID, att.Attempt, local, outcome)
}

// withDirective is outcome as the local endpoint's Webhook-Delivery
// directive changes it (kind "": the answer was a 2xx).
func withDirective(outcome, kind, directive string) string {
	switch strings.ToLower(strings.TrimSpace(directive)) {
	case webhooks.DirectiveAbort:
		if kind != "" {
			return "failed (Webhook-Delivery: abort)"
		}
	case webhooks.DirectiveDisable:
		if kind != "" {
			outcome = "failed"
		}
		return outcome + "; the webhook is deactivated (Webhook-Delivery: disable)"
	}
	return outcome
}

// attemptOutcome is what a delivery becomes after this attempt, as the
// worker decides it (deliveries.Retryable). A test delivery has one
// attempt only, whatever this says.
func attemptOutcome(attempt int, kind string, status int) string {
	switch {
	case kind == "":
		return "succeeded"
	case deliveries.Retryable(kind, status) && attempt < deliveries.MaxAttempts:
		return "failed, will be retried"
	}
	return "failed"
}

// printf prints one line, stamped with the local time.
func (l *listener) printf(format string, args ...any) {
	l.printMu.Lock()
	defer l.printMu.Unlock()
	fmt.Fprintf(l.env.stdout, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// devDemoToken is the token a webhooks dev with WEBHOOKS_DATA_DIR shows,
// or "" when there is none.
func devDemoToken(getenv func(string) string) string {
	b, err := os.ReadFile(filepath.Join(devDataDir(getenv), devDemoTokenFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

func splitList(s string) []string {
	out := []string{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
