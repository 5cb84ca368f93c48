package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/deliveryreads"
	"github.com/jobhooks/jobhooks/dispatch"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/subscriptions"
)

func TestNewServer_RequiresItsDependencies(t *testing.T) {
	subs, err := subscriptions.NewService(subscriptions.NewStore(nil, nil), &netguard.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	complete := func() api.Deps {
		return api.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Identity: identity.NewStore(nil), Subscriptions: subs}
	}
	if _, err := api.NewServer(complete()); err != nil {
		t.Fatalf("NewServer with every required dependency: %v", err)
	}
	for name, drop := range map[string]func(*api.Deps){
		"Logger":        func(d *api.Deps) { d.Logger = nil },
		"Identity":      func(d *api.Deps) { d.Identity = nil },
		"Subscriptions": func(d *api.Deps) { d.Subscriptions = nil },
		// The delivery service and its reads come together, or not at all.
		"DeliveryReads": func(d *api.Deps) { d.Deliveries = new(dispatch.Service) },
		"Deliveries":    func(d *api.Deps) { d.DeliveryReads = deliveryreads.NewService(nil) },
	} {
		deps := complete()
		drop(&deps)
		if h, err := api.NewServer(deps); err == nil || h != nil {
			t.Errorf("NewServer without %s = %v, %v; want an error", name, h, err)
		}
	}
}

// TestNewServer_LeavesGinModeAlone: gin's mode is process-wide, so building
// a server must not change it under other servers in the same process.
func TestNewServer_LeavesGinModeAlone(t *testing.T) {
	before := gin.Mode()
	t.Cleanup(func() { gin.SetMode(before) })
	gin.SetMode(gin.TestMode)
	subs, err := subscriptions.NewService(subscriptions.NewStore(nil, nil), &netguard.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.NewServer(api.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Identity: identity.NewStore(nil), Subscriptions: subs}); err != nil {
		t.Fatal(err)
	}
	if got := gin.Mode(); got != gin.TestMode {
		t.Fatalf("gin mode after NewServer = %q, want %q as it was", got, gin.TestMode)
	}
}

// TestNewServer_WithoutDeliveriesAnswers503: a server built without the
// delivery service answers its delivery routes 503 with Retry-After, never
// a 500.
func TestNewServer_WithoutDeliveriesAnswers503(t *testing.T) {
	s := newSubsAPI(t, nil)
	sub := s.mustCreateSub(t, nil)
	for _, path := range []string{
		s.subURL(s.Account.ID, sub.ID) + "/deliveries",
		s.subURL(s.Account.ID, sub.ID) + "/health",
		s.URL + "/api/v3/accounts/" + strconv.FormatInt(s.Account.ID, 10) + "/webhooks/deliveries",
	} {
		r := doJSON(t, http.MethodGet, path, s.Writer, nil)
		requireStatus(t, r, http.StatusServiceUnavailable)
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("%s: 503 without Retry-After", path)
		}
	}
}
