package eventfilter_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/jobhooks/jobhooks/eventfilter"
)

func TestCache_CompilesEachTextOnceAndStaysBounded(t *testing.T) {
	c := eventfilter.NewCache(3)
	a1, err := c.Get(`data.jobId == "1"`)
	if err != nil {
		t.Fatal(err)
	}
	if a2, _ := c.Get(`data.jobId == "1"`); a2 != a1 {
		t.Error("the same text was compiled twice")
	}
	if _, err := c.Get(`data.jobId ==`); err == nil {
		t.Error("a text that does not compile came back without its error")
	}
	if _, err := c.Get(`data.jobId ==`); err == nil {
		t.Error("a cached compile error was lost")
	}
	for i := range 10 {
		if _, err := c.Get(fmt.Sprintf(`data.jobId == "%d"`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Len(); n != 3 {
		t.Errorf("Len = %d, want the bound 3", n)
	}
}

func TestCache_ConcurrentGets(t *testing.T) {
	c := eventfilter.NewCache(100)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				f, err := c.Get(fmt.Sprintf(`data.runStatusCode == %d`, j%10))
				if err != nil || f == nil {
					t.Errorf("worker %d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := c.Len(); n != 10 {
		t.Errorf("Len = %d, want 10", n)
	}
}
