package topology_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/freeport"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/internal/topology"
)

// chaosRun is a deployment under faults and what was done to it.
type chaosRun struct {
	t    *testing.T
	d    *deployment
	recv *topology.ChaosReceiver
	apis map[int64]topology.API // by account: its admin token
	// apiMu is held for writing while the API is down, so a webhook
	// operation never dies in flight with an unknown outcome.
	apiMu sync.RWMutex

	mu       sync.Mutex
	hooks    []*topology.AuditWebhook
	injected map[topology.FaultKind]int
	notes    map[topology.FaultKind][]string
	restarts int
	// startRetries are the restarts that exited before they were ready
	// and were started again.
	startRetries []string
	failures     []string
	// afterOutage is the longest history soon after the long database
	// outage.
	afterOutage []topology.WorkflowHistory
	windows     []topology.FaultWindow
}

func (c *chaosRun) count(k topology.FaultKind, note string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.injected[k]++
	if note != "" {
		c.notes[k] = append(c.notes[k], note)
	}
}

// failed notes a fault that could not be injected or undone: the run is
// then not the one planned, so the test fails.
func (c *chaosRun) failed(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
}

// runTrack injects steps one after another until ctx ends; a fault under
// way when it ends is still undone.
func (c *chaosRun) runTrack(ctx context.Context, steps []topology.FaultStep, wg *sync.WaitGroup) {
	defer wg.Done()
	for _, s := range steps {
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.Gap):
		}
		c.inject(ctx, s)
	}
}

func (c *chaosRun) inject(ctx context.Context, s topology.FaultStep) {
	start := time.Now()
	defer func() {
		if _, receiver := s.Kind.ReceiverMode(); receiver || s.Kind == topology.FaultDeactivate || s.Kind == topology.FaultRotateSecret {
			return // no process or database fault
		}
		c.mu.Lock()
		c.windows = append(c.windows, topology.FaultWindow{Kind: string(s.Kind), From: start, To: time.Now()})
		c.mu.Unlock()
	}()
	switch s.Kind {
	case topology.FaultWorkerKill:
		c.killWorker(ctx, s)
	case topology.FaultAPIKill:
		c.killAPI(ctx, s)
	case topology.FaultTemporalKill:
		c.killTemporal(ctx, s)
	case topology.FaultDatabaseCut, topology.FaultDatabaseOutage:
		c.cutDatabase(ctx, s)
	case topology.FaultDeactivate:
		c.deactivate(ctx, s)
	case topology.FaultRotateSecret:
		c.rotate(ctx, s)
	default:
		mode, _ := s.Kind.ReceiverMode()
		var ids []string
		for i := range s.Width {
			h := c.hooks[(s.Target+i)%len(c.hooks)]
			c.recv.SetMode(h.ID, mode)
			ids = append(ids, h.ID)
		}
		hold(ctx, s.Hold)
		for _, id := range ids {
			c.recv.SetMode(id, topology.AnswerOK)
		}
		c.count(s.Kind, "")
	}
}

func hold(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// restartCtx bounds a restart, which happens even after the chaos ended.
func restartCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 3*time.Minute)
}

// startProcess starts a process again and waits until it is ready. One
// that exits before it is ready is started again, up to startTries times,
// as an orchestrator would: on a PostgreSQL server shared with other runs,
// a start can find every connection slot taken for a moment ("too many
// clients"), which says nothing of the delivery core. The report lists
// every start tried again.
func (c *chaosRun) startProcess(name string, env []string, role string) (*topology.Process, error) {
	const startTries = 4
	for try := 1; ; try++ {
		c.mu.Lock()
		c.restarts++
		instance := fmt.Sprintf("%s-r%d", name, c.restarts)
		c.mu.Unlock()
		p, err := topology.StartProcess(c.d.bin, instance, c.d.dir, append(append([]string{}, c.d.env...), env...), role)
		if err != nil {
			return nil, err
		}
		c.t.Cleanup(func() { _ = p.Stop(10 * time.Second) })
		rctx, cancel := restartCtx()
		err = p.WaitReady(rctx, 2*time.Minute)
		cancel()
		if err == nil || try == startTries || !strings.Contains(err.Error(), "exited before it was ready") {
			return p, err
		}
		c.mu.Lock()
		c.startRetries = append(c.startRetries, fmt.Sprintf("%s at %s: %s", instance, time.Now().Format("15:04:05.000"), lastLine(err.Error())))
		c.mu.Unlock()
		time.Sleep(2 * time.Second)
	}
}

// lastLine is the last non-empty line of s (a process's last log line).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func (c *chaosRun) killWorker(ctx context.Context, s topology.FaultStep) {
	i := s.Target % len(c.d.workers)
	w := c.d.workers[i]
	if err := w.Kill(); err != nil {
		c.failed("SIGKILL %s: %v", w.Name, err)
		return
	}
	hold(ctx, s.Hold)
	addrs, err := freeport.Ports(2)
	if err != nil {
		c.failed("restart worker-%d: %v", i+1, err)
		return
	}
	nw, err := c.startProcess(fmt.Sprintf("worker-%d", i+1),
		[]string{fmt.Sprintf("HTTP_ADDR=127.0.0.1:%d", addrs[0]), fmt.Sprintf("ADMIN_ADDR=127.0.0.1:%d", addrs[1])}, "worker")
	if err != nil {
		c.failed("restart worker-%d: %v", i+1, err)
	}
	if nw != nil {
		c.d.workers[i] = nw
	}
	c.count(s.Kind, "")
}

func (c *chaosRun) killAPI(ctx context.Context, s topology.FaultStep) {
	c.apiMu.Lock()
	defer c.apiMu.Unlock()
	if err := c.d.api.Kill(); err != nil {
		c.failed("SIGKILL api: %v", err)
		return
	}
	hold(ctx, s.Hold)
	addr := strings.TrimPrefix(c.d.API.BaseURL, "http://")
	api, err := c.startProcess("api", []string{"HTTP_ADDR=" + addr, "ADMIN_ADDR=" + c.d.api.Admin}, "serve")
	if err != nil {
		c.failed("restart api: %v", err)
	}
	if api != nil {
		c.d.api = api
	}
	c.count(s.Kind, "")
}

func (c *chaosRun) killTemporal(ctx context.Context, s topology.FaultStep) {
	srv := c.d.cluster.Server
	if err := srv.Kill(); err != nil {
		c.failed("SIGKILL Temporal: %v", err)
		return
	}
	hold(ctx, s.Hold)
	rctx, cancel := restartCtx()
	defer cancel()
	start := time.Now()
	if err := srv.Restart(rctx, c.d.cluster.Namespace); err != nil {
		c.failed("restart Temporal: %v", err)
		return
	}
	c.count(s.Kind, fmt.Sprintf("down %s", (s.Hold+time.Since(start)).Round(time.Second)))
}

func (c *chaosRun) cutDatabase(ctx context.Context, s topology.FaultStep) {
	start := time.Now()
	n, err := topology.CutDatabase(ctx, testenv.AdminDatabaseURL(), c.d.db.Name, s.Hold)
	if err != nil {
		c.failed("%s: %v", s.Kind, err)
		return
	}
	c.count(s.Kind, fmt.Sprintf("%s, %d connections ended", time.Since(start).Round(time.Second), n))
	if s.Kind != topology.FaultDatabaseOutage {
		return
	}
	// What the outage left in the histories, once the rounds it held back
	// have run.
	hold(ctx, 30*time.Second)
	hctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	longest, _, err := c.longestHistory(hctx)
	if err != nil {
		c.failed("workflow histories after the outage: %v", err)
		return
	}
	c.mu.Lock()
	c.afterOutage = append(c.afterOutage, longest)
	c.mu.Unlock()
}

// retry runs op with the API up until it succeeds or ctx ends.
func (c *chaosRun) retry(ctx context.Context, what string, op func(context.Context) error) bool {
	for {
		c.apiMu.RLock()
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := op(rctx)
		cancel()
		c.apiMu.RUnlock()
		if err == nil {
			return true
		}
		select {
		case <-ctx.Done():
			c.failed("%s: %v (last error %v)", what, ctx.Err(), err)
			return false
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (c *chaosRun) deactivate(ctx context.Context, s topology.FaultStep) {
	h := c.hooks[s.Target%len(c.hooks)]
	api := c.apis[h.AccountID]
	opCtx, cancel := restartCtx()
	defer cancel()
	span := topology.InactiveSpan{Requested: time.Now()}
	c.mu.Lock()
	h.Inactive = append(h.Inactive, span)
	k := len(h.Inactive) - 1
	c.mu.Unlock()
	if !c.retry(opCtx, "deactivate "+h.ID, func(ctx context.Context) error { return api.SetActive(ctx, h.AccountID, h.ID, false) }) {
		return
	}
	answered := time.Now()
	c.mu.Lock()
	h.Inactive[k].Answered = answered
	c.mu.Unlock()
	hold(ctx, s.Hold)
	requested := time.Now()
	c.mu.Lock()
	h.Inactive[k].ReactivateRequested = requested
	c.mu.Unlock()
	if !c.retry(opCtx, "reactivate "+h.ID, func(ctx context.Context) error { return api.SetActive(ctx, h.AccountID, h.ID, true) }) {
		return
	}
	c.mu.Lock()
	h.Inactive[k].ReactivateAnswered = time.Now()
	c.mu.Unlock()
	c.count(s.Kind, "")
}

func (c *chaosRun) rotate(ctx context.Context, s topology.FaultStep) {
	h := c.hooks[s.Target%len(c.hooks)]
	api := c.apis[h.AccountID]
	opCtx, cancel := restartCtx()
	defer cancel()
	from := time.Now()
	var secret string
	ok := c.retry(opCtx, "rotate the secret of "+h.ID, func(ctx context.Context) (err error) {
		secret, err = api.RotateSecret(ctx, h.AccountID, h.ID)
		return err
	})
	if !ok {
		return
	}
	answered := time.Now()
	c.mu.Lock()
	h.Secrets[len(h.Secrets)-1].Until = answered
	h.Secrets = append(h.Secrets, topology.SecretSpan{Secret: secret, From: from})
	c.mu.Unlock()
	c.count(s.Kind, "")
}
