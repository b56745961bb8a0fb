package pipeline_test

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// clicks are keyed by user, at event times in seconds after t0.
func clicks(t0 time.Time, at map[string][]int) []vertex.Message[string] {
	var out []vertex.Message[string]
	for _, user := range slices.Sorted(maps.Keys(at)) {
		for _, s := range at[user] {
			out = append(out, vertex.Message[string]{ID: fmt.Sprintf("%s@%d", user, s), Keys: []string{user},
				EventTime: t0.Add(time.Duration(s) * time.Second), Value: user})
		}
	}
	return out
}

// A count per user in ten-second windows. The source ends, which closes
// every window still open: Run returns after their results are written.
func ExampleReduce() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := pipeline.New("clicks")
	in := pipeline.Source(p, "clicks", vertex.FromMessages(clicks(t0, map[string][]int{"ada": {1, 4, 12}, "bob": {3, 19, 25}})))
	counts, _ := pipeline.Reduce(p, "per-10s", in, vertex.Fixed(10*time.Second), vertex.Counting[string]())
	var mu sync.Mutex
	var lines []string
	pipeline.Sink(p, "print", counts, vertex.Func(func(_ context.Context, ms []vertex.Message[vertex.Windowed[int64]]) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range ms {
			w := m.Value.Window
			lines = append(lines, fmt.Sprintf("%s-%s %s %d", w.Start.Format("04:05"), w.End.Format("04:05"), m.Value.Keys[0], m.Value.Value))
		}
		return nil
	}))
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// 00:00-00:10 ada 2
	// 00:00-00:10 bob 1
	// 00:10-00:20 ada 1
	// 00:10-00:20 bob 1
	// 00:20-00:30 bob 1
}

// Sessions of one user end after a gap of 5 seconds without a click; a
// streaming reducer receives each session's clicks and emits its length.
func ExampleReduceStream() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := pipeline.New("sessions")
	in := pipeline.Source(p, "clicks", vertex.FromMessages(clicks(t0, map[string][]int{"ada": {1, 4, 8, 20}, "bob": {2}})))
	length := func(_ context.Context, w vertex.Window, _ []string, msgs iter.Seq[vertex.Message[string]], emit func(string) error) error {
		n := 0
		for range msgs {
			n++
		}
		return emit(fmt.Sprintf("%d clicks in %v", n, w.End.Sub(w.Start)))
	}
	sessions, _ := pipeline.ReduceStream(p, "sessions", in, vertex.Session(5*time.Second), length)
	var mu sync.Mutex
	var lines []string
	pipeline.Sink(p, "print", sessions, vertex.Func(func(_ context.Context, ms []vertex.Message[vertex.Windowed[string]]) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range ms {
			lines = append(lines, fmt.Sprintf("%s from %s: %s", m.Value.Keys[0], m.Value.Window.Start.Format("04:05"), m.Value.Value))
		}
		return nil
	}))
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// ada from 00:01: 3 clicks in 12s
	// ada from 00:20: 1 clicks in 5s
	// bob from 00:02: 1 clicks in 5s
}
