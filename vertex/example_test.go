package vertex_test

import (
	"context"
	"fmt"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// Tag conditions select the edges a message takes.
func ExampleCondition() {
	urgent := vertex.And(vertex.AnyTag("error", "fatal"), vertex.Not(vertex.AnyTag("test")))
	fmt.Println(urgent)
	fmt.Println(urgent.Match([]string{"error"}), urgent.Match([]string{"error", "test"}), urgent.Match(nil))
	// Output:
	// and(any(error,fatal),not(any(test)))
	// true false false
}

// A generator of 5 keyed messages, read in batches of 2.
func ExampleGenerator() {
	g := vertex.Generator(func(i int64) string { return fmt.Sprint("event-", i) }).WithCount(5).WithKeys(2)
	for {
		msgs, err := g.Read(context.Background(), 2)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, m := range msgs {
			fmt.Println(m.ID, m.Keys, m.Value)
		}
	}
	// Output:
	// 0 [k0] event-0
	// 1 [k1] event-1
	// 2 [k0] event-2
	// 3 [k1] event-3
	// 4 [k0] event-4
	// EOF
}

// Sliding windows of one minute every 20 seconds, shifted by 5 seconds: a
// message belongs to length/slide = 3 windows, latest start first.
func ExampleWindowing_Assign() {
	w := vertex.Sliding(time.Minute, 20*time.Second).WithOffset(5 * time.Second)
	at := time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC)
	for _, win := range w.Assign(at) {
		fmt.Println(win.Start.Format("15:04:05"), "-", win.End.Format("15:04:05"))
	}
	// Output:
	// 10:00:25 - 10:01:25
	// 10:00:05 - 10:01:05
	// 09:59:45 - 10:00:45
}
