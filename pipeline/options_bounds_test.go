package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/internal/vconfig"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// TestRunRefusesSizesPastTheirBounds: Run of a pipeline on the default
// memory storage with a vertex size far past its bound returns an
// *isb.OptionError naming the vertex option before anything is opened.
// BufferCapacity(1 << 45) used to reach memory storage, which sized a
// free-segment list of 2^33 slots from it: "fatal error: runtime: out of
// memory"; BufferCapacity(1 << 50) was refused naming isb's Capacity.
func TestRunRefusesSizesPastTheirBounds(t *testing.T) {
	for _, tc := range []struct {
		option string
		opt    vertex.Option
	}{
		{"BatchSize", vertex.BatchSize(1 << 40)},
		{"BufferCapacity", vertex.BufferCapacity(1 << 45)},
		{"BufferCapacity", vertex.BufferCapacity(1 << 50)},
		{"BufferCapacity", vertex.BufferCapacity(vconfig.MaxBufferCapacity + 1)},
	} {
		p := New("bounds")
		Sink(p, "out", Source(p, "src", vertex.FromSlice(ints(10))), vertex.Blackhole[int](), tc.opt)
		err := p.Run(context.Background())
		var oe *isb.OptionError
		if !errors.As(err, &oe) || !errors.Is(err, ErrInvalidOption) {
			t.Errorf("Run with %s past its bound: %v; want an *isb.OptionError", tc.option, err)
			continue
		}
		if oe.Package != "vertex" || oe.Option != tc.option || !strings.Contains(err.Error(), `vertex "out"`) {
			t.Errorf("Run with %s past its bound: %v (%+v); want vertex's %s on vertex \"out\"", tc.option, err, oe, tc.option)
		}
	}
}

// TestRunAtBufferCapacityBound: the largest BufferCapacity runs on memory
// storage, whose derived free-segment pool is capped (a million segments
// per partition otherwise, past memory.MaxFreeSegments' bound).
func TestRunAtBufferCapacityBound(t *testing.T) {
	p := New("bound")
	Sink(p, "out", Source(p, "src", vertex.FromSlice(ints(100))), vertex.Blackhole[int](),
		vertex.BufferCapacity(vconfig.MaxBufferCapacity))
	if err := p.Run(context.Background()); err != nil {
		t.Fatalf("Run with BufferCapacity(%d): %v", int64(vconfig.MaxBufferCapacity), err)
	}
}
