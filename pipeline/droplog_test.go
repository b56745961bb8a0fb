package pipeline

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runnel-dev/runnel/vertex"
)

// Messages a vertex drops are in the log with their reason, rate-limited,
// and the lines add up to the count Stats gives: here the odd numbers,
// tagged "odd" with no edge taking that tag.
func TestDroppedMessagesAreLogged(t *testing.T) {
	core, obs := observer.New(zap.InfoLevel)
	p := New("drops", WithLogger(zap.New(core)))
	src := Source(p, "nums", vertex.FromSlice(ints(1000)), vertex.BatchSize(100))
	tagged := FlatMap(p, "tag", src, func(_ context.Context, m vertex.Message[int]) ([]vertex.Message[int], error) {
		out := vertex.Derive(m, m.Value)
		out.Tags = []string{"even"}
		if m.Value%2 == 1 {
			out.Tags = []string{"odd"}
		}
		return []vertex.Message[int]{out}, nil
	})
	got := newCollector[int]()
	Sink(p, "evens", tagged.Tagged("even"), got)
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var logged int64
	for _, e := range obs.FilterMessage("messages dropped").All() {
		f := e.ContextMap()
		if f["reason"] != "no matching edge" || f["vertex"] != "tag" {
			t.Errorf("drop line %v, want reason \"no matching edge\" from vertex tag", f)
		}
		logged += f["messages"].(int64)
	}
	var dropped int64
	for _, s := range p.Stats() {
		if s.Name == "tag" {
			dropped = s.Dropped
		}
	}
	if dropped != 500 || logged != 500 {
		t.Fatalf("Stats says %d dropped, the log %d; want 500 both", dropped, logged)
	}
	if n := obs.FilterMessage("messages dropped").Len(); n > 3 {
		t.Errorf("%d drop lines for 10 batches within the limit: want the first, then the rest at the end (at most 3 over a slow run)", n)
	}
	if v := sortedValues(got); len(v) != 500 || v[0] != 0 || v[499] != 998 {
		t.Errorf("the sink got %d values, want the 500 evens 0..998", len(v))
	}
}
