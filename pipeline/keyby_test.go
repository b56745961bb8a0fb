package pipeline

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/vertex"
)

// view is a timestamped record as a user keeps it in a durable topic.
type view struct {
	Page string
	At   time.Time
}

// A topic of timestamped records, its event times taken by FromTopic's
// WithEventTime and its keys set by KeyBy in one call, counted per page in
// one-minute windows: every window exact, and the reduce's Stats report
// its results (Results) apart from its late messages (Late; none, since
// the records come in event-time order).
func TestKeyByAndTopicEventTimes(t *testing.T) {
	topic, err := memory.NewTopic[view]("views")
	if err != nil {
		t.Fatal(err)
	}
	defer topic.Close()
	base := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	pages := []string{"home", "cart", "help"}
	var items []view
	want := map[string]int64{} // "page minute" -> count
	for i := range 600 {
		v := view{Page: pages[i%3], At: base.Add(time.Duration(i) * 500 * time.Millisecond)}
		items = append(items, v)
		want[v.Page+" "+v.At.Truncate(time.Minute).Format("15:04")]++
	}
	if err := topic.Producer(nil).ProduceBatch(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	p := New("views")
	src := Source(p, "src", vertex.FromTopic(topic, "g").EndWhenEmpty().WithPollInterval(20*time.Millisecond).
		WithEventTime(func(v view) time.Time { return v.At }))
	keyed := KeyBy(p, "by-page", src, func(v view) []string { return []string{v.Page} })
	counts, late := Reduce(p, "per-minute", keyed, vertex.Fixed(time.Minute), vertex.Counting[view]())
	out := newCollector[vertex.Windowed[int64]]()
	lateOut := newCollector[view]()
	Sink(p, "out", counts, out)
	Sink(p, "late", late, lateOut)
	runWithin(t, p, 30*time.Second)
	got := map[string]int64{}
	for _, w := range out.values() {
		got[w.Keys[0]+" "+w.Window.Start.UTC().Format("15:04")] += w.Value
	}
	if !maps.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	for _, s := range p.Stats() {
		if s.Name != "per-minute" {
			continue
		}
		if s.Results != int64(len(want)) || s.Late != 0 || len(lateOut.values()) != 0 {
			t.Errorf("reduce stats: Results %d, Late %d (late sink %d); want %d, 0, 0", s.Results, s.Late, len(lateOut.values()), len(want))
		}
	}
}
