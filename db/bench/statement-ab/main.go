// Command statement-ab compares two texts of one hot statement by what
// each costs the database a call with nothing to do (docs/performance.md,
// "A statement's fixed cost"): both run on their generic plans, each on
// its own connection, in alternating blocks, and the CPU of each backend
// is read from /proc (the server must run on this machine). Interleaving
// in blocks of a fraction of a second keeps this box's drift out of the
// ratio, which a run per side does not. Run it through ./run, which takes
// the texts from two revisions.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks/internal/procstat"
)

// emptyArgs are each statement's parameters in sqlc's order, carrying
// nothing: no events, a lane key with nothing due, no outcomes.
var emptyArgs = map[string][]any{
	"IngestEventsWithoutRouting": {[]string{}, []int64{}, []string{}, []string{}, []string{}, [][]byte{}, []string{}, [][]byte{}, []int64{}},
	"ClaimShared":                {int32(0), int32(1), int64(16), int64(200), []byte("{}"), int64(16), []byte("{}"), int64(32), int64(1000), int64(60000), "statement-ab", ""},
	"RecordAttempts": {int64(1000), int64(60000), []string{}, []string{}, []int32{}, []time.Time{}, []int32{}, []int32{},
		[]string{}, []string{}, []string{}, []string{}, []int64{}, [][]byte{}, []string{}, []int32{}, []bool{}, []time.Time{},
		int32(0), "retry", int64(0), int32(0)},
}

type side struct {
	conn *pgx.Conn
	sql  string
	pid  int
	cpu  time.Duration
	n    int
}

func main() {
	url := flag.String("url", "postgres://postgres@127.0.0.1:5432/statement_ab?sslmode=disable", "database")
	statement := flag.String("statement", "ClaimShared", "IngestEventsWithoutRouting, ClaimShared or RecordAttempts")
	blocks := flag.Int("blocks", 20, "blocks of each side")
	block := flag.Int("block", 200, "calls a block")
	flag.Parse()
	args, ok := emptyArgs[*statement]
	if !ok || flag.NArg() != 2 {
		log.Fatalf("usage: statement-ab -statement %s a.sql b.sql", strings.Join([]string{"IngestEventsWithoutRouting", "ClaimShared", "RecordAttempts"}, "|"))
	}
	ctx := context.Background()
	var sides [2]*side
	for i, file := range flag.Args() {
		text, err := os.ReadFile(file)
		if err != nil {
			log.Fatal(err)
		}
		s, err := open(ctx, *url, string(text))
		if err != nil {
			log.Fatalf("%s: %v", file, err)
		}
		for range 30 { // the generic plan made and cached
			if err := s.call(ctx, args); err != nil {
				log.Fatalf("%s: %v", file, err)
			}
		}
		sides[i] = s
	}
	for k := range *blocks {
		for j := range 2 {
			s := sides[(k+j)%2] // A first, then B first, and so on
			before, err := procstat.Read(s.pid)
			if err != nil {
				log.Fatalf("the backend's CPU (is the server on this machine?): %v", err)
			}
			for range *block {
				if err := s.call(ctx, args); err != nil {
					log.Fatal(err)
				}
			}
			after, err := procstat.Read(s.pid)
			if err != nil {
				log.Fatal(err)
			}
			s.cpu += after.Own - before.Own
			s.n += *block
		}
	}
	a, b := sides[0].perCall(), sides[1].perCall()
	fmt.Printf("%s: A %.3f ms a call, B %.3f ms a call, B/A %.3f (%d calls each)\n", *statement, a, b, b/a, sides[0].n)
}

func open(ctx context.Context, url, text string) (*side, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	// The store's plan settings (deliveries.withGenericIndexPlans): a
	// statement planned otherwise is another plan, with other nodes to start.
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan; SET jit = off; SET enable_seqscan = off"); err != nil {
		return nil, err
	}
	s := &side{conn: conn, sql: text}
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&s.pid); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *side) call(ctx context.Context, args []any) error {
	rows, err := s.conn.Query(ctx, s.sql, args...)
	if err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

func (s *side) perCall() float64 {
	return float64(s.cpu) / float64(time.Millisecond) / float64(s.n)
}
