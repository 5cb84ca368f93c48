package goroutines_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/goroutines"
)

// TestPool_ReusesAnIdleGoroutine: the first round's tasks, all at once,
// start a goroutine each; every later round's tasks are taken by those
// goroutines, idle again, and no other runs them.
func TestPool_ReusesAnIdleGoroutine(t *testing.T) {
	tests := []struct {
		name       string
		concurrent int
	}{
		{"OneAtATime", 1},
		{"EightAtOnce", 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := goroutines.New(time.Minute)
			var mu sync.Mutex
			ran := map[uint64]int{} // tasks by goroutine id
			for round := range 20 {
				var wg sync.WaitGroup
				release := make(chan struct{})
				for range tt.concurrent {
					wg.Add(1)
					task := func() {
						defer wg.Done()
						mu.Lock()
						ran[goroutineID()]++
						mu.Unlock()
						<-release // all of a round at once
					}
					if round == 0 {
						p.Go(task)
					} else {
						goIdle(t, p, task)
					}
				}
				close(release)
				wg.Wait()
			}
			if len(ran) != tt.concurrent {
				t.Errorf("%d goroutines ran %d tasks (%v), want %d", len(ran), 20*tt.concurrent, ran, tt.concurrent)
			}
		})
	}
}

// TestPool_AnIdleGoroutineEnds: the pool's goroutines end after their
// idle time.
func TestPool_AnIdleGoroutineEnds(t *testing.T) {
	before := runtime.NumGoroutine()
	p := goroutines.New(20 * time.Millisecond)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		p.Go(func() { defer wg.Done(); time.Sleep(5 * time.Millisecond) })
	}
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left, want %d", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// goIdle hands task to an idle goroutine of p as soon as one waits.
func goIdle(t *testing.T, p *goroutines.Pool, task func()) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !goroutines.TakenByIdle(p, task) {
		if time.Now().After(deadline) {
			t.Fatal("no goroutine of the pool became idle")
		}
		runtime.Gosched()
	}
}

// goroutineID reads the running goroutine's id from its stack header.
func goroutineID() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	var id uint64
	for _, c := range buf[len("goroutine "):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
