// Package config reads the service's configuration from environment variables
// once, at start, into a typed and validated struct that is passed down.
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/jobhooks/jobhooks/formats"
	"github.com/jobhooks/jobhooks/inflight"
	"github.com/jobhooks/jobhooks/secrets"
)

// Where a shard's rounds run (DELIVERY_SHARD_ROUNDS).
const (
	ShardRoundsLocal     = "local"
	ShardRoundsAnyWorker = "any-worker"
)

// Config is every setting the binary reads. The `env` tags are the variable
// names; README's configuration table lists them with their defaults.
type Config struct {
	DatabaseURL string `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/webhooks?sslmode=disable"`

	TemporalAddress   string `env:"TEMPORAL_ADDRESS" envDefault:"127.0.0.1:7233"`
	TemporalNamespace string `env:"TEMPORAL_NAMESPACE" envDefault:"default"`
	TemporalTaskQueue string `env:"TEMPORAL_TASK_QUEUE" envDefault:"webhooks"`
	// TemporalGRPCCompression is how requests to Temporal (and its answers)
	// are compressed: gzip (the SDK's default) or none, which spares both
	// sides the CPU where the network between them is not the cost.
	TemporalGRPCCompression string `env:"TEMPORAL_GRPC_COMPRESSION" envDefault:"gzip"`
	// TemporalWebUIURL, when set, makes the web UI link each delivery to
	// its workflow run in the Temporal Web UI (dev sets its own).
	TemporalWebUIURL string `env:"TEMPORAL_WEB_UI_URL"`

	HTTPAddr  string `env:"HTTP_ADDR" envDefault:"127.0.0.1:8080"`
	AdminAddr string `env:"ADMIN_ADDR" envDefault:"127.0.0.1:9090"`
	// AdminPprof serves Go's runtime profiles on ADMIN_ADDR under /debug/pprof/.
	AdminPprof bool `env:"ADMIN_PPROF" envDefault:"false"`
	// PublicBaseURL is used in links shown to people (UI, dev banner).
	PublicBaseURL string `env:"PUBLIC_BASE_URL"`
	// RelayBaseURL is where workers reach the API for the listener relay
	// (webhooks listen): listeners' webhooks deliver to RelayBaseURL +
	// /relay/v1/{token}, and that address alone is allowed whatever the
	// destination policy says. Empty turns listening off.
	RelayBaseURL string `env:"RELAY_BASE_URL"`
	// ListenMaxPollsPerListener, ListenMaxPollsPerAccount and
	// ListenMaxHeldPerAccount bound, across API processes, the long polls
	// open on one listener and on an account's listeners, and the
	// attempts the relay holds for an account's listeners; over a bound
	// the API answers 429.
	ListenMaxPollsPerListener int `env:"LISTEN_MAX_POLLS_PER_LISTENER" envDefault:"4"`
	ListenMaxPollsPerAccount  int `env:"LISTEN_MAX_POLLS_PER_ACCOUNT" envDefault:"20"`
	ListenMaxHeldPerAccount   int `env:"LISTEN_MAX_HELD_PER_ACCOUNT" envDefault:"100"`

	// SecretKeys encrypt hmac_secrets at rest: "id:base64key[,id:base64key...]",
	// 32-byte AES-256 keys, the first one used for new secrets.
	SecretKeys string `env:"SECRET_ENCRYPTION_KEYS"`
	// SigningKeyRotationOverlap is how long an account's signing key keeps
	// signing (a second "v1a" signature) and stays published after a
	// rotation replaced it.
	SigningKeyRotationOverlap time.Duration `env:"SIGNING_KEY_ROTATION_OVERLAP" envDefault:"24h"`
	// InternalAPIToken authenticates event ingestion (/internal/v1/...).
	InternalAPIToken string `env:"INTERNAL_API_TOKEN"`

	// DestinationAllowCIDRs lets operators allow non-global destinations
	// (for example an internal receiver network), comma separated.
	DestinationAllowCIDRs   []string `env:"DESTINATION_ALLOW_CIDRS" envSeparator:","`
	DestinationRequireHTTPS bool     `env:"DESTINATION_REQUIRE_HTTPS" envDefault:"false"`

	DeliveryTimeout          time.Duration `env:"DELIVERY_TIMEOUT" envDefault:"10s"`
	DeliveryRetryInitial     time.Duration `env:"DELIVERY_RETRY_INITIAL_INTERVAL" envDefault:"30s"`
	DeliveryRetryBackoff     float64       `env:"DELIVERY_RETRY_BACKOFF_COEFFICIENT" envDefault:"4"`
	DeliveryRetryMaxInterval time.Duration `env:"DELIVERY_RETRY_MAX_INTERVAL" envDefault:"3h"`
	DeliveryRetryAfterMax    time.Duration `env:"DELIVERY_RETRY_AFTER_MAX" envDefault:"1h"`
	// DeliveryRetention is how long delivery records and events are kept
	// (the retention Schedule's purge runs every tenth of it, between a
	// minute and an hour: worker.RetentionInterval).
	DeliveryRetention time.Duration `env:"DELIVERY_RETENTION" envDefault:"720h"`
	// DeliveryAutoDisableAfter deactivates a webhook whose deliveries all
	// failed for this long (0: never), with at least
	// DeliveryAutoDisableMinFailures failed deliveries in a row.
	DeliveryAutoDisableAfter       time.Duration `env:"DELIVERY_AUTO_DISABLE_AFTER" envDefault:"120h"`
	DeliveryAutoDisableMinFailures int           `env:"DELIVERY_AUTO_DISABLE_MIN_FAILURES" envDefault:"10"`
	// DeliveryBreakerThreshold opens a webhook's endpoint breaker after
	// that many attempts in a row failed as an outage (0: never): an
	// incident starts. A webhook that holds its deliveries during an
	// outage then has them wait, and one probe goes per backoff step, from
	// DeliveryBreakerProbeFirst doubling up to DeliveryBreakerProbeMax.
	DeliveryBreakerThreshold  int           `env:"DELIVERY_BREAKER_THRESHOLD" envDefault:"5"`
	DeliveryBreakerProbeFirst time.Duration `env:"DELIVERY_BREAKER_PROBE_FIRST" envDefault:"15s"`
	DeliveryBreakerProbeMax   time.Duration `env:"DELIVERY_BREAKER_PROBE_MAX" envDefault:"1m"`
	// DeliveryBreakerRampStart is how many attempts the drain starts in its
	// first second after the breaker closed, doubling each second until
	// DeliveryBreakerRampFull a second (then only the in-flight cap holds).
	DeliveryBreakerRampStart int `env:"DELIVERY_BREAKER_RAMP_START" envDefault:"2"`
	DeliveryBreakerRampFull  int `env:"DELIVERY_BREAKER_RAMP_FULL" envDefault:"256"`
	// DeliveryOnOutage is what an open breaker does to the deliveries of a
	// webhook whose delivery settings do not say (on_outage): "retry" (the
	// spec's behaviour: each keeps its retry schedule and ends failed after
	// its attempts) or "hold" (they wait, attempts unspent, for a probe).
	DeliveryOnOutage string `env:"DELIVERY_ON_OUTAGE" envDefault:"retry"`
	// DeliveryOrderMaxWait bounds how long a delivery of a run waits for an
	// earlier event of the same run (per-run order).
	DeliveryOrderMaxWait time.Duration `env:"DELIVERY_ORDER_MAX_WAIT" envDefault:"1h"`
	// IncidentNoticeAfter: an open breaker is told to the account once its
	// incident lasted this long; IncidentQuiet: an incident ends once the
	// breaker stayed closed this long; NoticesMaxPerHour bounds an
	// account's notices.
	IncidentNoticeAfter time.Duration `env:"INCIDENT_NOTICE_AFTER" envDefault:"10m"`
	IncidentQuiet       time.Duration `env:"INCIDENT_QUIET" envDefault:"10m"`
	NoticesMaxPerHour   int           `env:"NOTICES_MAX_PER_HOUR" envDefault:"20"`
	// DeliveryReplayRate bounds the deliveries a replay sends a second to
	// one webhook, so a recovering receiver is not flattened.
	DeliveryReplayRate int `env:"DELIVERY_REPLAY_RATE" envDefault:"10"`
	// DeliveryLateAnswerWait is how long after DELIVERY_TIMEOUT an attempt
	// keeps listening, outside any attempt slot, to record a late answer.
	DeliveryLateAnswerWait time.Duration `env:"DELIVERY_LATE_ANSWER_WAIT" envDefault:"20s"`
	PayloadToolName        string        `env:"PAYLOAD_TOOL_NAME" envDefault:"dbt"`
	// RunURLTemplate, when set, links each run in Slack, Teams and
	// PagerDuty bodies: {accountId}, {projectId}, {environmentId}, {jobId}
	// and {runId} are replaced by the event's values (formats.RunLinks).
	RunURLTemplate             string `env:"RUN_URL_TEMPLATE"`
	WorkerMaxConcurrentDeliver int    `env:"WORKER_MAX_CONCURRENT_DELIVERIES" envDefault:"2000"`
	// WorkerMaxConcurrentDeliverPerAccount is the most of those attempt
	// slots one account holds at once (0: half of them).
	WorkerMaxConcurrentDeliverPerAccount int `env:"WORKER_MAX_CONCURRENT_DELIVERIES_PER_ACCOUNT" envDefault:"0"`
	// WorkerMaxConcurrentRounds bounds the rounds (shards' and own lanes'; and workflow tasks)
	// a worker runs at once; a round waiting for attempt slots holds one.
	WorkerMaxConcurrentRounds int `env:"WORKER_MAX_CONCURRENT_ROUNDS" envDefault:"1000"`
	// DeliveryMaxInFlightPerWebhook bounds the adaptive in-flight limit of
	// one webhook on one worker: the limit starts at
	// DeliveryInitialInFlight and grows while its receiver answers at
	// about its unloaded latency (docs/delivery.md, "In-flight limits").
	// Its default is inflight.DefaultMaxLimit (defaultsInCode).
	DeliveryMaxInFlightPerWebhook int `env:"DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK"`
	// DeliveryMaxInFlightPerDestination bounds the limit shared by the
	// webhooks whose client_urls have one scheme, host and port. Its
	// default is inflight.DefaultMaxDestinationLimit (defaultsInCode).
	DeliveryMaxInFlightPerDestination int `env:"DELIVERY_MAX_IN_FLIGHT_PER_DESTINATION"`
	// DeliveryInitialInFlight is where a webhook's limit starts (and
	// starts again after 10 idle minutes); at most
	// DeliveryMaxInFlightPerWebhook.
	DeliveryInitialInFlight int `env:"DELIVERY_INITIAL_IN_FLIGHT" envDefault:"16"`
	// DeliveryInitialInFlightPerDestination is where a destination's limit
	// starts (again after 10 idle minutes); at most
	// DeliveryMaxInFlightPerDestination.
	DeliveryInitialInFlightPerDestination int `env:"DELIVERY_INITIAL_IN_FLIGHT_PER_DESTINATION" envDefault:"32"`
	// DeliveryPageSize is how many due deliveries one claim of a round
	// takes.
	DeliveryPageSize int `env:"DELIVERY_PAGE_SIZE" envDefault:"200"`
	// DeliveryShards is how many shard workflows take deliveries (1-16:
	// each owns whole destination buckets, deliveries.MaxShards); every
	// API and worker process must use the same number.
	DeliveryShards int `env:"DELIVERY_SHARDS" envDefault:"2"`
	// DeliveryShardRounds is where a shard's rounds run: "local" (a local
	// activity on the worker that holds the shard's workflow, its outcomes
	// a marker) or "any-worker" (an activity any worker takes, so the
	// shards' rounds spread over the workers; three history events a round
	// rather than one, each starting from the in-flight limits the shard's
	// earlier rounds learned). The workers' setting; the API's is not read.
	DeliveryShardRounds string `env:"DELIVERY_SHARD_ROUNDS" envDefault:"local"` // ShardRoundsLocal or ShardRoundsAnyWorker
	// DeliverySharedPatience is how long an attempt of a shard's round may
	// run (rounds never wait for it): one still running then is handed over
	// and its webhook moves to a lane of its own. It stretches while the
	// worker's answers are slow (activities/patience.go).
	DeliverySharedPatience time.Duration `env:"DELIVERY_SHARED_PATIENCE" envDefault:"500ms"`
	// DeliveryLaneIdleTimeout is how long a webhook's own lane waits with
	// nothing pending before the webhook goes back to its shard.
	DeliveryLaneIdleTimeout time.Duration `env:"DELIVERY_LANE_IDLE_TIMEOUT" envDefault:"1m"`
	// DeliveryOverdueGrace is how long a delivery may be overdue before
	// the sweeper (every minute) wakes whoever takes it (its shard or its
	// webhook's own lane).
	DeliveryOverdueGrace time.Duration `env:"DELIVERY_OVERDUE_GRACE" envDefault:"1m"`
	// DeliveryRoundLinger is how long a round (a shard's or an own lane's)
	// keeps looking for newly due deliveries before it returns.
	DeliveryRoundLinger time.Duration `env:"DELIVERY_ROUND_LINGER" envDefault:"50ms"`
	// DeliveryClaimGather bounds how long a shard's round lets deliveries
	// gather after a claim that found a few, before it claims again.
	DeliveryClaimGather time.Duration `env:"DELIVERY_CLAIM_GATHER" envDefault:"20ms"`
	// IngestMaxGroupEvents bounds the events stored by one group commit.
	IngestMaxGroupEvents int `env:"INGEST_MAX_GROUP_EVENTS" envDefault:"500"`
	// IngestFlushers is how many group commits an API process runs at once.
	IngestFlushers int `env:"INGEST_FLUSHERS" envDefault:"2"`
	// IngestLinger is how long a group commit waits for more events to
	// share its statement while events arrive steadily (0: never); an
	// idle API stores each event at once, and a wait ends early when the
	// stream goes quiet.
	IngestLinger time.Duration `env:"INGEST_LINGER" envDefault:"20ms"`

	ShutdownGrace time.Duration `env:"SHUTDOWN_GRACE_PERIOD" envDefault:"20s"`
	LogLevel      string        `env:"LOG_LEVEL" envDefault:"info"`
	// DataDir holds dev-mode state: the Temporal dev server's database and
	// the generated secret key.
	DataDir string `env:"WEBHOOKS_DATA_DIR" envDefault:".webhooks-dev"`
}

// Load reads the configuration from getenv and validates it.
func Load(getenv func(string) string) (Config, error) {
	var cfg Config
	environ := map[string]string{}
	for _, name := range Names() {
		if v := getenv(name); v != "" {
			environ[name] = v
		}
	}
	for name, v := range defaultsInCode() {
		if _, set := environ[name]; !set {
			environ[name] = v
		}
	}
	if err := env.ParseWithOptions(&cfg, env.Options{Environment: environ}); err != nil {
		return Config{}, nameVariables(err)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// defaultsInCode are the defaults that are constants of the packages that
// use them, so a package built without a configuration (tests, tools)
// takes the same value as a worker; a struct tag cannot name a constant.
func defaultsInCode() map[string]string {
	return map[string]string{
		"DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK":     strconv.Itoa(inflight.DefaultMaxLimit),
		"DELIVERY_MAX_IN_FLIGHT_PER_DESTINATION": strconv.Itoa(inflight.DefaultMaxDestinationLimit),
	}
}

// nameVariables rewrites env's parse errors, which name Go struct fields, so
// that each names the environment variable at fault instead.
func nameVariables(err error) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return fmt.Errorf("configuration: %w", err)
	}
	var errs []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			name := pe.Name
			if f, ok := reflect.TypeFor[Config]().FieldByName(pe.Name); ok {
				name = f.Tag.Get("env")
			}
			errs = append(errs, fmt.Errorf("configuration: %s: cannot parse as %s: %w", name, pe.Type, pe.Err))
			continue
		}
		errs = append(errs, fmt.Errorf("configuration: %w", e))
	}
	return errors.Join(errs...)
}

// Names returns every environment variable the binary reads.
func Names() []string {
	var names []string
	params, _ := env.GetFieldParams(&Config{})
	for _, p := range params {
		names = append(names, p.Key)
	}
	return names
}

// Validate checks every value and names the variable at fault.
func (c Config) Validate() error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("configuration: %s: %s", name, fmt.Sprintf(format, args...)))
	}
	if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		bad("DATABASE_URL", "must be a postgres:// URL")
	}
	for name, addr := range map[string]string{"TEMPORAL_ADDRESS": c.TemporalAddress, "HTTP_ADDR": c.HTTPAddr, "ADMIN_ADDR": c.AdminAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			bad(name, "must be host:port, got %q", addr)
		}
	}
	if c.TemporalNamespace == "" {
		bad("TEMPORAL_NAMESPACE", "must not be empty")
	}
	if c.TemporalTaskQueue == "" {
		bad("TEMPORAL_TASK_QUEUE", "must not be empty")
	}
	if c.PublicBaseURL != "" {
		if u, err := url.Parse(c.PublicBaseURL); err != nil || u.Host == "" {
			bad("PUBLIC_BASE_URL", "must be an absolute URL")
		}
	}
	if c.RelayBaseURL != "" {
		if u, err := url.Parse(c.RelayBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			bad("RELAY_BASE_URL", "must be an absolute http or https URL without credentials, query or fragment, such as http://webhooks-api:8080")
		}
	}
	for _, bound := range []struct {
		name  string
		value int
	}{
		{"LISTEN_MAX_POLLS_PER_LISTENER", c.ListenMaxPollsPerListener},
		{"LISTEN_MAX_POLLS_PER_ACCOUNT", c.ListenMaxPollsPerAccount},
		{"LISTEN_MAX_HELD_PER_ACCOUNT", c.ListenMaxHeldPerAccount},
	} {
		if bound.value < 1 {
			bad(bound.name, "must be at least 1")
		}
	}
	if c.SecretKeys != "" {
		if _, err := ParseSecretKeys(c.SecretKeys); err != nil {
			bad("SECRET_ENCRYPTION_KEYS", "%v", err)
		}
	}
	// Receivers may cache the published keys for 5 minutes (the JWKS's
	// Cache-Control): a shorter overlap would fail deliveries they verify.
	if c.SigningKeyRotationOverlap < 10*time.Minute || c.SigningKeyRotationOverlap > 720*time.Hour {
		bad("SIGNING_KEY_ROTATION_OVERLAP", "must be between 10m and 720h")
	}
	if c.InternalAPIToken != "" && len(c.InternalAPIToken) < 32 {
		bad("INTERNAL_API_TOKEN", "must be at least 32 characters")
	}
	if _, err := c.AllowedCIDRs(); err != nil {
		bad("DESTINATION_ALLOW_CIDRS", "%v", err)
	}
	if c.DeliveryTimeout <= 0 || c.DeliveryTimeout > time.Minute {
		bad("DELIVERY_TIMEOUT", "must be between 0 and 1m")
	}
	if c.DeliveryRetryInitial <= 0 {
		bad("DELIVERY_RETRY_INITIAL_INTERVAL", "must be positive")
	}
	if c.DeliveryRetryBackoff < 1 {
		bad("DELIVERY_RETRY_BACKOFF_COEFFICIENT", "must be at least 1")
	}
	if c.DeliveryRetryMaxInterval < c.DeliveryRetryInitial {
		bad("DELIVERY_RETRY_MAX_INTERVAL", "must not be below DELIVERY_RETRY_INITIAL_INTERVAL")
	}
	if c.DeliveryRetryAfterMax < 0 {
		bad("DELIVERY_RETRY_AFTER_MAX", "must not be negative")
	}
	if c.DeliveryAutoDisableAfter < 0 {
		bad("DELIVERY_AUTO_DISABLE_AFTER", "must not be negative (0 turns it off)")
	}
	if c.DeliveryAutoDisableMinFailures < 1 {
		bad("DELIVERY_AUTO_DISABLE_MIN_FAILURES", "must be at least 1")
	}
	if c.DeliveryBreakerThreshold < 0 || c.DeliveryBreakerThreshold > 1000 {
		bad("DELIVERY_BREAKER_THRESHOLD", "must be between 0 (off) and 1000")
	}
	if c.DeliveryBreakerProbeFirst < 100*time.Millisecond {
		bad("DELIVERY_BREAKER_PROBE_FIRST", "must be at least 100ms")
	}
	if c.DeliveryBreakerProbeMax < c.DeliveryBreakerProbeFirst {
		bad("DELIVERY_BREAKER_PROBE_MAX", "must not be below DELIVERY_BREAKER_PROBE_FIRST")
	}
	if c.DeliveryBreakerRampStart < 0 {
		bad("DELIVERY_BREAKER_RAMP_START", "must not be negative (0: no ramp)")
	}
	if c.DeliveryBreakerRampFull < c.DeliveryBreakerRampStart {
		bad("DELIVERY_BREAKER_RAMP_FULL", "must not be below DELIVERY_BREAKER_RAMP_START")
	}
	if c.TemporalGRPCCompression != "gzip" && c.TemporalGRPCCompression != "none" {
		bad("TEMPORAL_GRPC_COMPRESSION", "must be gzip (the default) or none")
	}
	if c.DeliveryOnOutage != "retry" && c.DeliveryOnOutage != "hold" {
		bad("DELIVERY_ON_OUTAGE", "must be retry (the default: deliveries keep their retry schedule) or hold")
	}
	if c.DeliveryOrderMaxWait < time.Second || c.DeliveryOrderMaxWait > 7*24*time.Hour {
		bad("DELIVERY_ORDER_MAX_WAIT", "must be between 1s and 168h")
	}
	if c.IncidentNoticeAfter < 0 {
		bad("INCIDENT_NOTICE_AFTER", "must not be negative")
	}
	if c.IncidentQuiet < 0 {
		bad("INCIDENT_QUIET", "must not be negative")
	}
	if c.NoticesMaxPerHour < 0 {
		bad("NOTICES_MAX_PER_HOUR", "must not be negative (0: no bound)")
	}
	if c.DeliveryReplayRate < 1 || c.DeliveryReplayRate > 1000 {
		bad("DELIVERY_REPLAY_RATE", "must be between 1 and 1000")
	}
	if c.DeliveryLateAnswerWait < 0 || c.DeliveryLateAnswerWait > 5*time.Minute {
		bad("DELIVERY_LATE_ANSWER_WAIT", "must be between 0 and 5m")
	}
	if c.DeliveryRetention < time.Minute {
		bad("DELIVERY_RETENTION", "must be at least 1m")
	}
	if c.PayloadToolName == "" || strings.ContainsAny(c.PayloadToolName, " \"\\") {
		bad("PAYLOAD_TOOL_NAME", "must be a short name such as dbt")
	}
	if err := formats.ValidateRunURLTemplate(c.RunURLTemplate); err != nil {
		bad("RUN_URL_TEMPLATE", "%v", err)
	}
	if c.WorkerMaxConcurrentDeliver < 1 {
		bad("WORKER_MAX_CONCURRENT_DELIVERIES", "must be at least 1")
	}
	if c.WorkerMaxConcurrentDeliverPerAccount < 0 || c.WorkerMaxConcurrentDeliverPerAccount > c.WorkerMaxConcurrentDeliver {
		bad("WORKER_MAX_CONCURRENT_DELIVERIES_PER_ACCOUNT", "must be between 0 (half of WORKER_MAX_CONCURRENT_DELIVERIES) and WORKER_MAX_CONCURRENT_DELIVERIES")
	}
	if c.WorkerMaxConcurrentRounds < 1 {
		bad("WORKER_MAX_CONCURRENT_ROUNDS", "must be at least 1")
	}
	if c.DeliveryMaxInFlightPerWebhook < 1 {
		bad("DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK", "must be at least 1")
	}
	if c.DeliveryMaxInFlightPerDestination < 1 {
		bad("DELIVERY_MAX_IN_FLIGHT_PER_DESTINATION", "must be at least 1")
	}
	if c.DeliveryInitialInFlight < 1 {
		bad("DELIVERY_INITIAL_IN_FLIGHT", "must be at least 1")
	}
	if c.DeliveryInitialInFlightPerDestination < 1 {
		bad("DELIVERY_INITIAL_IN_FLIGHT_PER_DESTINATION", "must be at least 1")
	}
	if c.DeliveryPageSize < 1 || c.DeliveryPageSize > 1000 {
		bad("DELIVERY_PAGE_SIZE", "must be between 1 and 1000")
	}
	if c.DeliveryShards < 1 || c.DeliveryShards > 16 { // deliveries.MaxShards
		bad("DELIVERY_SHARDS", "must be between 1 and 16")
	}
	if c.DeliveryShardRounds != ShardRoundsLocal && c.DeliveryShardRounds != ShardRoundsAnyWorker {
		bad("DELIVERY_SHARD_ROUNDS", `must be "`+ShardRoundsLocal+`" or "`+ShardRoundsAnyWorker+`"`)
	}
	if c.DeliverySharedPatience < 10*time.Millisecond || c.DeliverySharedPatience > c.DeliveryTimeout {
		bad("DELIVERY_SHARED_PATIENCE", "must be between 10ms and DELIVERY_TIMEOUT")
	}
	if c.DeliveryLaneIdleTimeout <= 0 {
		bad("DELIVERY_LANE_IDLE_TIMEOUT", "must be positive")
	}
	if c.DeliveryOverdueGrace <= 0 {
		bad("DELIVERY_OVERDUE_GRACE", "must be positive")
	}
	if c.DeliveryRoundLinger < 0 || c.DeliveryRoundLinger > 10*time.Second {
		bad("DELIVERY_ROUND_LINGER", "must be between 0 and 10s")
	}
	if c.IngestMaxGroupEvents < 1 {
		bad("INGEST_MAX_GROUP_EVENTS", "must be at least 1")
	}
	if c.IngestFlushers < 1 {
		bad("INGEST_FLUSHERS", "must be at least 1")
	}
	if c.DeliveryClaimGather < time.Millisecond || c.DeliveryClaimGather > time.Second {
		bad("DELIVERY_CLAIM_GATHER", "must be between 1ms and 1s")
	}
	if c.IngestLinger < 0 || c.IngestLinger > time.Second {
		bad("INGEST_LINGER", "must be between 0 and 1s")
	}
	if c.ShutdownGrace < 0 {
		bad("SHUTDOWN_GRACE_PERIOD", "must not be negative")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("LOG_LEVEL", "must be debug, info, warn or error")
	}
	return errors.Join(errs...)
}

// AllowedCIDRs parses DESTINATION_ALLOW_CIDRS.
func (c Config) AllowedCIDRs() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range c.DestinationAllowCIDRs {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR", s)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// EncryptionKeys parses SECRET_ENCRYPTION_KEYS, which the API, the worker
// and secrets reencrypt require; other commands run without it.
func (c Config) EncryptionKeys() ([]secrets.Key, error) {
	if c.SecretKeys == "" {
		return nil, errors.New("configuration: SECRET_ENCRYPTION_KEYS: required to store and sign with webhook secrets")
	}
	keys, err := ParseSecretKeys(c.SecretKeys)
	if err != nil {
		return nil, fmt.Errorf("configuration: SECRET_ENCRYPTION_KEYS: %w", err)
	}
	return keys, nil
}

// ParseSecretKeys parses "id:base64key,..." into the keys of a secrets.Box.
func ParseSecretKeys(s string) ([]secrets.Key, error) {
	var keys []secrets.Key
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		id, b64, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok || id == "" {
			return nil, errors.New(`each key must be "id:base64key"`)
		}
		key, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(key) != 32 {
			return nil, fmt.Errorf("key %q must be 32 bytes, base64 encoded", id)
		}
		if seen[id] {
			return nil, fmt.Errorf("key id %q appears twice", id)
		}
		seen[id] = true
		keys = append(keys, secrets.Key{ID: id, Key: key})
	}
	return keys, nil
}
