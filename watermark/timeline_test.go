package watermark

import (
	"testing"
	"time"
)

// TestTimelineLookup asks, as a reader does, at ascending offsets: each
// answer is the newest WMB below the offset.
func TestTimelineLookup(t *testing.T) {
	tl := newTimeline(10)
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
}

// TestTimelineBound: with no lookups, entries beyond max fall out oldest
// first.
func TestTimelineBound(t *testing.T) {
	tl := newTimeline(3)
	for i := int64(1); i <= 4; i++ {
		tl.put(WMB{Offset: 10 * i, Watermark: ms(100 * i)})
	}
	if got, ok := tl.lookup(15); ok {
		t.Errorf("lookup(15) after the bound dropped offset 10 = %v, want nothing", got)
	}
	if got, _ := tl.lookup(25); !got.Equal(ms(200)) {
		t.Errorf("lookup(25) = %v, want %v", got, ms(200))
	}
}

// TestTimelineReaderBehind: a reader lagging 1000 WMBs behind its upstream
// (far more than the newest few a ring kept) finds the WMB below every
// message it reads, while the timeline drops what it read past and keeps
// its memory proportional to what it holds.
func TestTimelineReaderBehind(t *testing.T) {
	const n = 1000
	tl := newTimeline(DefaultTimelineLength)
	for i := int64(1); i <= n; i++ {
		tl.put(WMB{Offset: 10 * i, Watermark: ms(100 * i)})
	}
	for i := int64(1); i <= n; i++ {
		off := 10*i + 5 // a message after WMB i
		got, ok := tl.lookup(off)
		if !ok || !got.Equal(ms(100*i)) {
			t.Fatalf("lookup(%d) = %v,%v; want %v", off, got, ok, ms(100*i))
		}
		if h := tl.held(); len(h) != int(n-i+1) || h[0].Offset != 10*i {
			t.Fatalf("after lookup(%d): %d entries held from offset %d; want %d from %d", off, len(h), h[0].Offset, n-i+1, 10*i)
		}
		if len(tl.entries) > 2*len(tl.held())+32 {
			t.Fatalf("after lookup(%d): a slice of %d for %d entries held", off, len(tl.entries), len(tl.held()))
		}
	}
	// A lookup below what was dropped (a reader never goes back) finds
	// nothing: the conservative answer.
	if got, ok := tl.lookup(15); ok {
		t.Errorf("lookup(15) after reading past it = %v, want nothing", got)
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
	if n := len(tl.held()); n != 2 {
		t.Fatalf("timeline holds %d entries, want 2", n)
	}
	if got, _ := tl.lookup(11); !got.Equal(ms(130)) {
		t.Fatalf("lookup(11) = %v, want %v", got, ms(130))
	}
	if h, _ := tl.newest(); h.Offset != 15 || h.Idle {
		t.Fatalf("newest = %v, want active at 15", h)
	}
}
