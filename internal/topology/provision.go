package topology

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// Provisioner makes a plan's accounts and webhooks in the service's own
// stores (identity for accounts, subscriptions for webhooks, with fresh
// secrets sealed by the service's keys), several at a time: ten thousand
// webhooks through the API would take longer than the benchmark.
type Provisioner struct {
	accounts *identity.Store
	webhooks *subscriptions.Store
	// Concurrency is how many rows are made at once (default 8).
	Concurrency int
	// Timeout bounds the whole provisioning (default 5 minutes).
	Timeout time.Duration
}

// NewProvisioner writes to the service's database through pool and seals
// secrets with secretKeys (SECRET_ENCRYPTION_KEYS of the API and workers).
func NewProvisioner(pool *pgxpool.Pool, secretKeys string) (*Provisioner, error) {
	keys, err := config.ParseSecretKeys(secretKeys)
	if err != nil {
		return nil, fmt.Errorf("provisioner: %w", err)
	}
	box, err := secrets.NewBox(keys)
	if err != nil {
		return nil, fmt.Errorf("provisioner: %w", err)
	}
	return &Provisioner{accounts: identity.NewStore(pool), webhooks: subscriptions.NewStore(pool, box)}, nil
}

// Part is one measured workload of a provisioned plan.
type Part struct {
	Name    string // "" when the plan has one part
	Traffic Traffic
}

// Provision makes plan's accounts, then its webhooks, each pointing at its
// own path on r and trusted there, and returns its parts with real ids.
func (p *Provisioner) Provision(ctx context.Context, plan Plan, r *Receiver) ([]Part, error) {
	return p.ProvisionAt(ctx, plan, func(int) *Receiver { return r })
}

// ProvisionAt is Provision with each webhook (by its index in the plan) at
// a receiver of its own choosing: a soak's failing webhooks point at a
// receiver that answers 500.
func (p *Provisioner) ProvisionAt(ctx context.Context, plan Plan, receiverOf func(webhook int) *Receiver) ([]Part, error) {
	timeout := p.Timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	accounts := make([]int64, len(plan.Accounts))
	err := p.each(ctx, len(accounts), func(i int) error {
		a, err := p.accounts.CreateAccount(ctx, fmt.Sprintf("bench %s %s %s", plan.Shape, plan.Accounts[i], run), "team")
		accounts[i] = a.ID
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("provision %d accounts: %w", len(accounts), err)
	}
	hooks := make([]string, len(plan.Webhooks))
	err = p.each(ctx, len(hooks), func(i int) error {
		spec, r := plan.Webhooks[i], receiverOf(i)
		in := webhooks.Subscription{
			AccountID: accounts[spec.Account], Name: fmt.Sprintf("bench %s %d", plan.Shape, i+1), Description: "topology bench",
			ClientURL: r.URLFor(i + 1), Active: true, JobIDs: []int64{},
			EventTypes: []string{webhooks.EventRunStarted, webhooks.EventRunCompleted, webhooks.EventRunErrored},
		}
		if spec.Job != 0 {
			in.JobIDs = []int64{spec.Job}
		}
		if err := in.Validate(); err != nil {
			return err
		}
		sub, secret, err := p.webhooks.Create(ctx, in)
		if err != nil {
			return err
		}
		hooks[i] = sub.ID
		r.Trust(sub.ID, secret, in.ClientURL)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("provision %d webhooks: %w", len(hooks), err)
	}
	resolve := func(specs []EventSpec) []Event {
		if len(specs) == 0 {
			return nil
		}
		events := make([]Event, len(specs))
		for i, s := range specs {
			ids := make([]string, len(s.Webhooks))
			for j, h := range s.Webhooks {
				ids[j] = hooks[h]
			}
			events[i] = Event{AccountID: accounts[s.Account], JobID: s.Job, Webhooks: ids, Type: s.Type, Run: s.Run}
		}
		return events
	}
	parts := make([]Part, len(plan.Parts))
	for i, pp := range plan.Parts {
		parts[i] = Part{Name: pp.Name, Traffic: Traffic{
			Warm: resolve(pp.Warm), Burst: resolve(pp.Burst), Paced: resolve(pp.Paced), Idle: resolve(pp.Idle),
			PacedInterval: pp.PacedInterval, Rate: pp.Rate,
		}}
	}
	return parts, nil
}

// each runs create(0..n-1) on Concurrency goroutines and returns the first
// error; after one, the rest are not started.
func (p *Provisioner) each(ctx context.Context, n int, create func(i int) error) error {
	workers := p.Concurrency
	if workers < 1 {
		workers = 8
	}
	var (
		next    atomic.Int64
		failed  atomic.Bool
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || failed.Load() {
					return
				}
				if err := ctx.Err(); err != nil {
					errOnce.Do(func() { first = err })
					failed.Store(true)
					return
				}
				if err := create(i); err != nil {
					errOnce.Do(func() { first = err })
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
