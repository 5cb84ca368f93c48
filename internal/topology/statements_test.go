package topology

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/testenv"
)

func TestStatementName(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{"-- name: IngestEvents :many\n-- Stores events...\nWITH ev AS (SELECT 1)", "IngestEvents"},
		{"  -- name: ClaimShared :many\nSELECT 1", "ClaimShared"},
		{"SELECT pg_backend_pid()", "SELECT pg_backend_pid()"},
		{"UPDATE webhook_deliveries SET a = $1, b = $2 WHERE id = $3", "UPDATE webhook_deliveries SET a = $1,"},
	} {
		if got := statementName(tc.query); got != tc.want {
			t.Errorf("statementName(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
}

func TestStatements_PerDelivery(t *testing.T) {
	before := Statements{
		"IngestEvents":   {Calls: 10, Rows: 100, Exec: time.Second, WALBytes: 1000, WALFPI: 100},
		"RecordAttempts": {Calls: 5, Rows: 50, Exec: time.Second, WALBytes: 500},
	}
	after := Statements{
		"IngestEvents":   {Calls: 110, Rows: 1100, Exec: 61 * time.Second, WALBytes: 201000, WALFPI: 300},
		"RecordAttempts": {Calls: 55, Rows: 550, Exec: 21 * time.Second, WALBytes: 100500, Plans: 40, Plan: 200 * time.Millisecond},
		"NextDue":        {Calls: 20, Rows: 20, Exec: time.Second},
		// Planned, not yet run (a connection prepared it): still counted.
		"ClaimShared": {Plans: 3, Plan: 30 * time.Millisecond},
		"[temporal]":  {Calls: 1000, Rows: 1000, Exec: 10 * time.Second, WALBytes: 50000},
		"Unchanged":   {},
	}
	got := after.Since(before).PerDelivery(1000, 1)
	names := make([]string, len(got))
	for i, c := range got {
		names[i] = c.Name
	}
	if strings.Join(names, ",") != "IngestEvents,other,[temporal],all" {
		t.Fatalf("lines %v, want the top statement, the rest of the service's, each other database, all", names)
	}
	ingest, all := got[0], got[len(got)-1]
	if ingest.MsPerDelivery != 60 || ingest.CallsPerDelivery != 0.1 || ingest.RowsPerCall != 10 || ingest.WALBytesPerDelivery != 200 ||
		ingest.FPIPerDelivery != 0.2 {
		t.Errorf("IngestEvents per delivery %+v, want 60 ms, 0.1 calls, 10 rows a call, 200 WAL bytes, 0.2 full-page images", ingest)
	}
	if other := got[1]; other.MsPerDelivery != 21 || other.CallsPerDelivery != 0.07 || other.PlansPerDelivery != 0.043 ||
		other.PlanMsPerDelivery != 0.23 {
		t.Errorf("other %+v, want RecordAttempts, NextDue and ClaimShared: 21 ms, 0.07 calls, 0.043 plans for 0.23 ms", other)
	}
	if ingest.PlansPerDelivery != 0 || ingest.PlanMsPerDelivery != 0 {
		t.Errorf("IngestEvents planned %+v, want never", ingest)
	}
	if all.MsPerDelivery != 91 || all.WALBytesPerDelivery != 350 {
		t.Errorf("all %+v, want 91 ms and 350 WAL bytes a delivery", all)
	}
	if got := after.Since(before).PerDelivery(0, 8); got != nil {
		t.Errorf("no deliveries: %v, want none", got)
	}
}

func TestTables_PerDelivery(t *testing.T) {
	before := Tables{"webhook_deliveries": {Inserts: 10, Updates: 10, HOTUpdates: 5, Indexes: 12, Bytes: 8192,
		Relations: map[string]int64{"heap": 8192, "webhook_deliveries_pkey": 0, "toast": 0}}}
	after := Tables{
		"webhook_deliveries": {Inserts: 110, Updates: 310, HOTUpdates: 105, Indexes: 12, Bytes: 8192 + 100*1500,
			Relations: map[string]int64{"heap": 8192 + 100*1000, "webhook_deliveries_pkey": 100 * 500, "toast": 0}},
		"webhook_delivery_attempts": {Inserts: 100, Indexes: 1},
		"accounts":                  {Inserts: 3, Indexes: 1},
		"untouched":                 {Indexes: 4},
	}
	got := after.PerDelivery(before, 100)
	if len(got) != 3 || got[0].Name != "webhook_deliveries" || got[1].Name != "webhook_delivery_attempts" {
		t.Fatalf("tables %+v, want deliveries, attempts, accounts: the most index writes first, untouched left out", got)
	}
	// 100 inserts + 300 updates of which 100 HOT: 300 non-HOT rows x 12 indexes.
	if d := got[0]; d.Inserts != 1 || d.Updates != 3 || d.HOTShare != 1.0/3 || d.IndexWrites != 36 || d.Bytes != 1500 {
		t.Errorf("deliveries %+v, want 1 insert, 3 updates a third HOT, 36 index writes, 1,500 bytes a delivery", d)
	}
	// By relation: what grew, largest first; TOAST did not grow.
	want := []RelationBytes{{"heap", 1000}, {"webhook_deliveries_pkey", 500}}
	if !slices.Equal(got[0].Relations, want) {
		t.Errorf("deliveries by relation %+v, want %+v", got[0].Relations, want)
	}
	table := RelationTable(got, 1000)
	if !strings.Contains(table, "webhook_deliveries_pkey") || strings.Contains(table, "webhook_delivery_attempts") {
		t.Errorf("relation table:\n%s\nwant the deliveries' relations only (the attempts grew by 0 B)", table)
	}
	if got := after.PerDelivery(before, 0); got != nil {
		t.Errorf("no deliveries: %v, want none", got)
	}
}

// TestReadTables_Relations: a partitioned table's relations come back
// under its own names (a partition's index of the parent's under the
// parent index's name, an index of the partition's own under the parent's
// name with its suffix), and heap, maps, TOAST and indexes add up to the
// table's whole size.
func TestReadTables_Relations(t *testing.T) {
	db := testenv.NewMigratedDatabase(t)
	for _, stmt := range []string{
		`CREATE TABLE sized (id int NOT NULL, k int, v text) PARTITION BY RANGE (id)`,
		`CREATE INDEX sized_k_idx ON sized (k)`,
		`CREATE TABLE sized_p1 PARTITION OF sized FOR VALUES FROM (0) TO (1000)`,
		`CREATE TABLE sized_p2 PARTITION OF sized FOR VALUES FROM (1000) TO (2000)`,
		`ALTER TABLE sized_p1 ADD PRIMARY KEY (id)`,
		`ALTER TABLE sized_p2 ADD PRIMARY KEY (id)`,
		// Short rows; then five made long enough (9.6 KB) to go to TOAST.
		`INSERT INTO sized SELECT g, g % 7, md5(g::text) FROM generate_series(0, 1999) g`,
		`UPDATE sized SET v = (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 300) i) WHERE id < 5`,
		`VACUUM sized`,
	} {
		if _, err := db.Pool.Exec(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	tables, err := ReadTables(t.Context(), db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	got := tables["sized"]
	if _, apart := tables["sized_p1"]; apart {
		t.Error("a partition is listed apart from its table")
	}
	var sum int64
	for _, rel := range []string{"heap", "maps", "toast", "sized_k_idx", "sized_pkey"} {
		if got.Relations[rel] <= 0 {
			t.Errorf("relation %s: %d bytes, want some (all: %v)", rel, got.Relations[rel], got.Relations)
		}
	}
	for _, n := range got.Relations {
		sum += n
	}
	if len(got.Relations) != 5 || sum != got.Bytes {
		t.Errorf("relations %v add up to %d, want the table's %d in five relations", got.Relations, sum, got.Bytes)
	}
}
