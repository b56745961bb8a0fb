package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// A pipeline on durable storage: its buffers live under a data directory,
// and a resumable source (the generator) continues after what the last run
// acknowledged, so a second run over the same directory does not repeat
// the first.
func ExampleMMap() {
	dir, err := os.MkdirTemp("", "runnel-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	runOnce := func(count int64) {
		p := pipeline.New("orders", pipeline.WithStorage(pipeline.MMap(dir)))
		ids := pipeline.Source(p, "ids", vertex.Generator(func(i int64) int64 { return 100 + i }).WithCount(count))
		var mu sync.Mutex
		var got []int64
		pipeline.Sink(p, "print", ids, vertex.Func(func(_ context.Context, msgs []vertex.Message[int64]) error {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				got = append(got, m.Value)
			}
			return nil
		}))
		if err := p.Run(context.Background()); err != nil {
			panic(err)
		}
		slices.Sort(got) // the sink writes batches concurrently
		fmt.Println(got)
	}
	runOnce(3) // messages 0, 1, 2
	runOnce(5) // resumes at 3: messages 3, 4
	// Output:
	// [100 101 102]
	// [103 104]
}
