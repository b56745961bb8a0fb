package watermark

import (
	"testing"
	"time"
)

func TestTimelineLookup(t *testing.T) {
	tl := newTimeline(3)
	if _, ok := tl.lookup(100); ok {
		t.Fatal("empty timeline answered a lookup")
	}
	for _, w := range []WMB{{Offset: 10, Watermark: ms(100)}, {Offset: 20, Watermark: ms(200)}, {Offset: 30, Watermark: ms(300)}} {
		if !tl.put(w) {
			t.Fatalf("put %v refused", w)
		}
	}
	cases := []struct {
		offset int64
		want   time.Time
		ok     bool
	}{
		{5, time.Time{}, false},
		{10, time.Time{}, false}, // exclusive: the WMB at 10 says nothing about 10
		{11, ms(100), true},
		{20, ms(100), true},
		{21, ms(200), true},
		{31, ms(300), true},
		{1 << 40, ms(300), true},
	}
	for _, c := range cases {
		got, ok := tl.lookup(c.offset)
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("lookup(%d) = %v,%v; want %v,%v", c.offset, got, ok, c.want, c.ok)
		}
	}
	// A fourth entry pushes the oldest out of the ring of 3.
	tl.put(WMB{Offset: 40, Watermark: ms(400)})
	if got, ok := tl.lookup(15); ok {
		t.Errorf("lookup(15) after eviction = %v, want nothing", got)
	}
	if got, _ := tl.lookup(25); !got.Equal(ms(200)) {
		t.Errorf("lookup(25) after eviction = %v, want %v", got, ms(200))
	}
}

func TestTimelinePutRules(t *testing.T) {
	tl := newTimeline(4)
	steps := []struct {
		w      WMB
		accept bool
	}{
		{WMB{Offset: 10, Watermark: ms(100)}, true},
		{WMB{Offset: 5, Watermark: ms(150)}, false},             // older offset: stale
		{WMB{Offset: 20, Watermark: ms(90)}, false},             // backwards in time
		{WMB{Offset: 10, Watermark: ms(100)}, false},            // same
		{WMB{Offset: 10, Watermark: ms(120)}, true},             // same offset, later: update
		{WMB{Offset: 10, Watermark: ms(120), Idle: true}, true}, // turns idle
		{WMB{Offset: 10, Watermark: ms(130), Idle: true}, true}, // idle advances in place
		{WMB{Offset: 15, Watermark: ms(130)}, true},             // active again
	}
	for i, s := range steps {
		if got := tl.put(s.w); got != s.accept {
			t.Fatalf("step %d put(%v) = %v, want %v", i, s.w, got, s.accept)
		}
	}
	if tl.n != 2 {
		t.Fatalf("timeline holds %d entries, want 2", tl.n)
	}
	if got, _ := tl.lookup(11); !got.Equal(ms(130)) {
		t.Fatalf("lookup(11) = %v, want %v", got, ms(130))
	}
	if h, _ := tl.newest(); h.Offset != 15 || h.Idle {
		t.Fatalf("newest = %v, want active at 15", h)
	}
}
