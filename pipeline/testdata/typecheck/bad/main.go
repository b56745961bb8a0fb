// Command bad must not build: a stream of strings into an aggregator of
// ints (TestReduceTypeMismatchIsACompileError).
package main

import (
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

func main() {
	p := pipeline.New("typed")
	words := pipeline.Source(p, "words", vertex.FromSlice([]string{"a"}))
	counts, _ := pipeline.Reduce(p, "count", words, vertex.Fixed(time.Second), vertex.Counting[int]())
	pipeline.Sink(p, "out", counts, vertex.Blackhole[vertex.Windowed[int64]]())
}
