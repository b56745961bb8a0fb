package memory_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/memory"
)

// TestOptionUpperBounds: a size that feeds an allocation is refused past
// its bound with an *isb.OptionError naming it, and accepted at it.
func TestOptionUpperBounds(t *testing.T) {
	for _, tc := range []struct {
		option   string
		at, over memory.Option
	}{
		{"SegmentSize", memory.SegmentSize(memory.MaxSegmentSize), memory.SegmentSize(memory.MaxSegmentSize + 1)},
		{"SegmentSize", memory.SegmentSize(memory.MaxSegmentSize), memory.SegmentSize(1 << 40)},
		{"MaxFreeSegments", memory.MaxFreeSegments(memory.MaxMaxFreeSegments), memory.MaxFreeSegments(memory.MaxMaxFreeSegments + 1)},
		{"MaxFreeSegments", memory.MaxFreeSegments(memory.MaxMaxFreeSegments), memory.MaxFreeSegments(1 << 33)},
	} {
		_, err := memory.New[int](tc.over)
		var oe *isb.OptionError
		if !errors.As(err, &oe) || oe.Package != "memory" || oe.Option != tc.option || !errors.Is(err, isb.ErrInvalidOption) {
			t.Errorf("%s over its bound: %v; want an *isb.OptionError naming it", tc.option, err)
		}
		if _, err := memory.New[int](tc.at); err != nil {
			t.Errorf("%s at its bound: %v", tc.option, err)
		}
	}
}

// TestFreeListGrowsLazily: a partition's free list is not allocated up front
// from MaxFreeSegments. 64 partitions at the bound would take 32 MiB of
// slots if it were; opening them must take far less.
func TestFreeListGrowsLazily(t *testing.T) {
	b, err := memory.New[int](memory.MaxFreeSegments(memory.MaxMaxFreeSegments))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := b.Open("t", 64); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Fatalf("Open of 64 partitions with MaxFreeSegments(%d) allocated %d bytes", memory.MaxMaxFreeSegments, got)
	}
}
