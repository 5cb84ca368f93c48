// Package goroutines runs short tasks on goroutines it keeps for a while
// after each task, so a task that goes deep (an HTTP request through its
// client, a signature) runs on a stack already grown by the ones before it
// instead of growing a new goroutine's stack, copy by copy, every time.
package goroutines

import "time"

// Pool runs each task at once: on an idle goroutine of the pool, or on a
// new one when none is idle. It bounds nothing; a goroutine idle for the
// pool's idle time ends. The zero Pool is not usable: use New (a nil
// *Pool runs each task on a new goroutine).
type Pool struct {
	tasks chan func()
	idle  time.Duration
}

// New returns a pool whose goroutines end after idle without a task.
func New(idle time.Duration) *Pool {
	return &Pool{tasks: make(chan func()), idle: idle}
}

// Go runs task on a goroutine of the pool (of its own when p is nil).
func (p *Pool) Go(task func()) {
	if p == nil {
		go task()
		return
	}
	select {
	case p.tasks <- task: // an idle goroutine took it
	default:
		go p.run(task)
	}
}

func (p *Pool) run(task func()) {
	timer := time.NewTimer(p.idle)
	defer timer.Stop()
	for {
		task()
		timer.Reset(p.idle)
		select {
		case task = <-p.tasks:
		case <-timer.C:
			return
		}
	}
}
