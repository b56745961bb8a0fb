// Command ok builds: the reduce's input stream carries the aggregator's
// input type. TestReduceTypeMismatchIsACompileError builds it beside bad.
package main

import (
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

func main() {
	p := pipeline.New("typed")
	words := pipeline.Source(p, "words", vertex.FromSlice([]string{"a"}))
	counts, _ := pipeline.Reduce(p, "count", words, vertex.Fixed(time.Second), vertex.Counting[string]())
	pipeline.Sink(p, "out", counts, vertex.Blackhole[vertex.Windowed[int64]]())
}
