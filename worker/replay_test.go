package worker_test

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
)

// missedWhileInactive deactivates sub, ingests n events (recorded as
// skipped, in order) and activates it again; it returns the event ids and
// the time before the first.
func missedWhileInactive(t *testing.T, e *env, subID string, n int) ([]string, time.Time) {
	t.Helper()
	if code, out := e.call(http.MethodPut, accountPath(e, "/subscription/"+subID), e.token, map[string]any{"active": false}); code != http.StatusOK {
		t.Fatalf("deactivate: %d %v", code, out)
	}
	since := time.Now().Add(-time.Second)
	var ids []string
	for i := range n {
		id := e.post(webhooks.EventRunCompleted, int64(i), "")
		if d := e.waitDelivery(id, subID); d.Status != deliveries.StatusSkipped {
			t.Fatalf("event while inactive: %s", d.Status)
		}
		ids = append(ids, id)
		time.Sleep(5 * time.Millisecond) // distinct created_at: a defined order
	}
	if code, out := e.call(http.MethodPut, accountPath(e, "/subscription/"+subID), e.token, map[string]any{"active": true}); code != http.StatusOK {
		t.Fatalf("activate: %d %v", code, out)
	}
	return ids, since
}

func (e *env) startReplay(subID string, body map[string]any) (string, int) {
	e.t.Helper()
	code, out := e.call(http.MethodPost, accountPath(e, "/subscription/"+subID+"/deliveries/replay"), e.token, body)
	if code != http.StatusAccepted {
		e.t.Fatalf("replay: %d %v", code, out)
	}
	data := out["data"].(map[string]any)
	return data["replay_id"].(string), int(data["deliveries"].(float64))
}

func (e *env) replay(subID, id string) map[string]any {
	e.t.Helper()
	code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+subID+"/replays/"+id), e.token, nil)
	if code != http.StatusOK {
		e.t.Fatalf("get replay: %d %v", code, out)
	}
	return out["data"].(map[string]any)
}

// TestReplay_SendsWhatWasMissedOnceInOrderAtTheRate: events skipped while a
// webhook was inactive are sent after it is back, each once, oldest first,
// no faster than the rate; a second replay sends nothing (they succeeded
// since); bad requests and other accounts change nothing.
func TestReplay_SendsWhatWasMissedOnceInOrderAtTheRate(t *testing.T) {
	e := newEnv(t, true, map[string]string{"DELIVERY_REPLAY_RATE": "2", "DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK": "1"})
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	ids, since := missedWhileInactive(t, e, sub.ID, 5)

	for _, bad := range []map[string]any{
		{"since": "yesterday"},
		{"since": since.Format(time.RFC3339), "until": since.Add(-time.Hour).Format(time.RFC3339)},
		{"since": since.Format(time.RFC3339), "status": []string{"succeeded"}},
	} {
		if code, _ := e.call(http.MethodPost, accountPath(e, "/subscription/"+sub.ID+"/deliveries/replay"), e.token, bad); code != http.StatusBadRequest {
			t.Errorf("replay %v: %d, want 400", bad, code)
		}
	}
	id, n := e.startReplay(sub.ID, map[string]any{"since": since.Format(time.RFC3339)})
	if n != len(ids) {
		t.Fatalf("replay will send %d, want %d", n, len(ids))
	}
	waitFor(t, func() bool { return e.replay(sub.ID, id)["status"] == deliveries.ReplayCompleted })
	if r := e.replay(sub.ID, id); r["sent"] != float64(len(ids)) || r["total"] != float64(len(ids)) {
		t.Errorf("replay = %v", r)
	}
	waitFor(t, func() bool { return len(rc.got()) >= len(ids) })
	got := rc.got()
	if len(got) != len(ids) {
		t.Fatalf("receiver got %d, want %d", len(got), len(ids))
	}
	for i, r := range got {
		if r.Header.Get("Webhook-Event-Id") != ids[i] || !r.Signed {
			t.Errorf("arrival %d is event %s (signed %v), want %s: oldest first", i, r.Header.Get("Webhook-Event-Id"), r.Signed, ids[i])
		}
	}
	// 2 a second: the 5th went out no sooner than 2 batches (2 s) after the 1st.
	if span := got[4].ArrivedAt.Sub(got[0].ArrivedAt); span < 1900*time.Millisecond {
		t.Errorf("5 replayed deliveries in %s at a rate of 2/s", span)
	}
	// Once their records say succeeded (a record follows its arrival by a
	// moment), a second replay has nothing to send.
	waitFor(t, func() bool {
		code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID+"/deliveries?status=succeeded"), e.token, nil)
		data, _ := out["data"].([]any)
		return code == http.StatusOK && len(data) == len(ids)
	})
	if _, again := e.startReplay(sub.ID, map[string]any{"since": since.Format(time.RFC3339)}); again != 0 {
		t.Errorf("a second replay would send %d; they have succeeded since", again)
	}
}

// TestReplay_CancelStopsIt: a cancelled replay sends no more.
func TestReplay_CancelStopsIt(t *testing.T) {
	e := newEnv(t, true, map[string]string{"DELIVERY_REPLAY_RATE": "1"})
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	_, since := missedWhileInactive(t, e, sub.ID, 5)
	id, _ := e.startReplay(sub.ID, map[string]any{"since": since.Format(time.RFC3339), "status": []string{"skipped"}})
	waitFor(t, func() bool { return len(rc.got()) >= 1 })
	code, out := e.call(http.MethodPost, accountPath(e, "/subscription/"+sub.ID+"/replays/"+id+"/cancel"), e.token, nil)
	if code != http.StatusOK || out["data"].(map[string]any)["status"] != deliveries.ReplayCancelled {
		t.Fatalf("cancel: %d %v", code, out)
	}
	sent := int(e.replay(sub.ID, id)["sent"].(float64))
	time.Sleep(2500 * time.Millisecond) // two more batches' time
	if r := e.replay(sub.ID, id); int(r["sent"].(float64)) != sent || sent >= 5 || len(rc.got()) > sent {
		t.Errorf("after cancel: replay %v, receiver got %d (sent when cancelled %d)", r, len(rc.got()), sent)
	}
	if code, _ := e.call(http.MethodPost, accountPath(e, "/subscription/"+sub.ID+"/replays/"+id+"/cancel"), e.token, nil); code != http.StatusNotFound {
		t.Errorf("cancelling a cancelled replay: %d, want 404", code)
	}
}

// TestReplay_SurvivesAWorkerKilled: a replay running on a worker that is
// SIGKILLed carries on with the next worker and sends each once.
func TestReplay_SurvivesAWorkerKilled(t *testing.T) {
	e := newEnv(t, false, map[string]string{"DELIVERY_REPLAY_RATE": "1"})
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	proc := startWorkerProcess(t, e.cfg)
	ids, since := missedWhileInactive(t, e, sub.ID, 4)
	id, _ := e.startReplay(sub.ID, map[string]any{"since": since.Format(time.RFC3339)})
	waitFor(t, func() bool { return len(rc.got()) >= 1 })
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
	e.startWorker(e.cfg)
	waitFor(t, func() bool { return e.replay(sub.ID, id)["status"] == deliveries.ReplayCompleted })
	waitFor(t, func() bool { return len(rc.got()) >= len(ids) })
	seen := map[string]int{}
	for _, r := range rc.got() {
		seen[r.Header.Get("Webhook-Event-Id")]++
	}
	for _, ev := range ids {
		if seen[ev] < 1 {
			t.Errorf("event %s never replayed", ev)
		}
	}
	if r := e.replay(sub.ID, id); r["sent"] != float64(len(ids)) {
		t.Errorf("replay = %v, want %d sent once each", r, len(ids))
	}
}

// TestReplay_PermissionsAndIsolation: starting or cancelling a replay needs
// write permission, reading one read permission; another account's
// credentials reach none of it, and change nothing.
func TestReplay_PermissionsAndIsolation(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	_, since := missedWhileInactive(t, e, sub.ID, 1)
	ids := identity.NewStore(e.db.Pool)
	_, reader, err := ids.CreateUser(context.Background(), identity.NewUser{AccountID: e.account.ID,
		Email: webhooks.NewID("r") + "@example.com", License: "read_only", PermissionSets: []string{"read_only"}})
	if err != nil {
		t.Fatal(err)
	}
	other := e.newAccount()
	_, stranger, err := ids.CreateUser(context.Background(), identity.NewUser{AccountID: other.ID,
		Email: webhooks.NewID("s") + "@example.com", License: "developer", PermissionSets: []string{"account_admin"}})
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"since": since.Format(time.RFC3339)}
	replayPath := accountPath(e, "/subscription/"+sub.ID+"/deliveries/replay")
	for _, token := range []string{reader, stranger} {
		if code, _ := e.call(http.MethodPost, replayPath, token, body); code != http.StatusForbidden {
			t.Errorf("start a replay without write permission on the account: %d, want 403", code)
		}
	}
	id, _ := e.startReplay(sub.ID, map[string]any{"since": since.Format(time.RFC3339)})
	getPath := accountPath(e, "/subscription/"+sub.ID+"/replays/"+id)
	if code, _ := e.call(http.MethodGet, getPath, reader, nil); code != http.StatusOK {
		t.Errorf("read-only user reads the replay: %d, want 200", code)
	}
	for _, c := range []struct {
		method, path, token string
	}{
		{http.MethodGet, getPath, stranger},
		{http.MethodPost, getPath + "/cancel", stranger},
		{http.MethodPost, getPath + "/cancel", reader},
	} {
		if code, _ := e.call(c.method, c.path, c.token, nil); code != http.StatusForbidden {
			t.Errorf("%s %s by another account or a reader: %d, want 403", c.method, c.path, code)
		}
	}
	// Another account's own path to the same ids finds nothing.
	foreign := "/api/v3/accounts/" + itoa(other.ID) + "/webhooks/subscription/" + sub.ID + "/replays/" + id
	if code, _ := e.call(http.MethodGet, foreign, stranger, nil); code != http.StatusNotFound {
		t.Errorf("replay through another account's path: %d, want 404", code)
	}
}
