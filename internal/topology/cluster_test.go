package topology_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/internal/topology"
)

// cluster is a Temporal server on fresh PostgreSQL databases for one test.
type cluster struct {
	Server    *topology.TemporalServer
	Namespace string
	Databases []string // persistence and visibility
}

func postgresTarget(t testing.TB) topology.PostgresTarget {
	t.Helper()
	u, err := url.Parse(testenv.AdminDatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	return topology.PostgresTarget{Host: u.Hostname(), Port: port, User: u.User.Username(), Password: pw}
}

// startCluster builds (cached) and starts Temporal on PostgreSQL; every
// database and process it makes is removed when t ends.
func startCluster(t testing.TB, tuning topology.ServerTuning) *cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	bins, err := topology.EnsureTemporalBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprintf("%d", time.Now().UnixNano())
	db, vis := "temporal_topo_"+suffix, "temporal_topo_vis_"+suffix
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := topology.DropDatabases(ctx, testenv.AdminDatabaseURL(), db, vis); err != nil {
			t.Errorf("drop Temporal databases: %v", err)
		}
	})
	pg := postgresTarget(t)
	if err := topology.SetupTemporalSchema(ctx, bins, pg, db, vis); err != nil {
		t.Fatal(err)
	}
	srv, err := topology.StartTemporalServer(ctx, bins, pg, db, vis, "default", tuning, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Logf("Temporal server stop: %v", err)
		}
	})
	return &cluster{Server: srv, Namespace: "default", Databases: []string{db, vis}}
}

func TestTemporalServer_RunsOnPostgreSQL(t *testing.T) {
	c := startCluster(t, topology.DefaultTuning)
	if c.Server.Address == "" {
		t.Fatal("no frontend address")
	}
}
