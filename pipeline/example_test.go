package pipeline_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/watermark"
)

// A source, a map and a sink: Run returns once the slice is exhausted and
// everything has reached the sink.
func Example() {
	p := pipeline.New("squares")
	nums := pipeline.Source(p, "nums", vertex.FromSlice([]int{1, 2, 3, 4}))
	squares := pipeline.Map(p, "square", nums, func(_ context.Context, v int) (int, error) { return v * v, nil })
	var mu sync.Mutex
	var got []int
	pipeline.Sink(p, "collect", squares, vertex.Func(func(_ context.Context, msgs []vertex.Message[int]) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got = append(got, m.Value)
		}
		return nil
	}))
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	slices.Sort(got)
	fmt.Println(got)
	// Output: [1 4 9 16]
}

// A split by tags and a join: short and long words take different paths
// and meet again in one sink.
func ExampleJoin() {
	p := pipeline.New("branches")
	words := pipeline.Source(p, "words", vertex.FromSlice([]string{"a", "streaming", "go", "dataflow"}))
	tagged := pipeline.FlatMap(p, "measure", words, func(_ context.Context, m vertex.Message[string]) ([]vertex.Message[string], error) {
		out := vertex.Derive(m, m.Value)
		out.Tags = []string{"short"}
		if len(m.Value) > 3 {
			out.Tags = []string{"long"}
		}
		return []vertex.Message[string]{out}, nil
	})
	upper := pipeline.Map(p, "upper", tagged.Tagged("long"), func(_ context.Context, s string) (string, error) {
		return strings.ToUpper(s), nil
	})
	var mu sync.Mutex
	var got []string
	pipeline.Sink(p, "all", pipeline.Join(tagged.Tagged("short"), upper), vertex.Func(func(_ context.Context, msgs []vertex.Message[string]) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got = append(got, m.Value)
		}
		return nil
	}))
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	slices.Sort(got)
	fmt.Println(got)
	// Output: [DATAFLOW STREAMING a go]
}

// Stats reports each vertex's counters, while running or after.
func ExamplePipeline_Stats() {
	p := pipeline.New("counted")
	src := pipeline.Source(p, "gen", vertex.Generator(func(i int64) int64 { return i }).WithCount(1000))
	pipeline.Sink(p, "drop", src, vertex.Blackhole[int64]())
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range p.Stats() {
		fmt.Printf("%s: read %d, written %d, acked %d, pending %d\n", s.Name, s.Read, s.Written, s.Acked, s.Pending)
	}
	// Output:
	// gen: read 1000, written 1000, acked 1000, pending 0
	// drop: read 1000, written 1000, acked 1000, pending 0
}

// Event-time watermarks are on by default. With MaxDelay 5s, a message more
// than 5s behind the earliest event of an earlier batch arrives late; the
// sink sees the Late flag, and Stats report the source's watermark.
func ExampleWatermarks() {
	at := func(sec int64) time.Time { return time.Unix(sec, 0).UTC() }
	events := []vertex.Message[string]{
		{ID: "a", EventTime: at(100)},
		{ID: "b", EventTime: at(120)},
		{ID: "c", EventTime: at(112)}, // behind 120-5s: late
		{ID: "d", EventTime: at(117)}, // within 5s: on time
	}
	p := pipeline.New("events", pipeline.Watermarks(pipeline.WatermarkConfig{MaxDelay: 5 * time.Second}))
	src := pipeline.Source(p, "events", vertex.FromMessages(events), vertex.BatchSize(1))
	var mu sync.Mutex
	var lines []string
	pipeline.Sink(p, "print", src, vertex.Func(func(_ context.Context, msgs []vertex.Message[string]) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			lines = append(lines, fmt.Sprint(m.ID, " late: ", m.Late))
		}
		return nil
	}))
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	slices.Sort(lines) // the sink's workers run concurrently
	fmt.Println(strings.Join(lines, "\n"))
	// The exhausted source ended its stream: every vertex reached the final
	// watermark, which closes any window still open.
	fmt.Println("sink at the final watermark:", p.Stats()[1].Watermark.Equal(watermark.Max))
	// Output:
	// a late: false
	// b late: false
	// c late: true
	// d late: false
	// sink at the final watermark: true
}
