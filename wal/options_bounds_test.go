package wal

import (
	"errors"
	"testing"

	"github.com/runnel-dev/runnel/isb"
)

// TestOptionUpperBounds: a size that feeds memory the WAL holds is refused
// past its bound with an *isb.OptionError naming it; the bound itself opens
// (tidwall/wal grows its segment buffer as it writes, so an empty WAL with
// the largest sizes costs nothing).
func TestOptionUpperBounds(t *testing.T) {
	for _, tc := range []struct {
		option   string
		at, over Option
	}{
		{"SegmentSize", SegmentSize(MaxSegmentSize), SegmentSize(MaxSegmentSize + 1)},
		{"SegmentSize", SegmentSize(MaxSegmentSize), SegmentSize(1 << 40)},
		{"MaxBatchBytes", MaxBatchBytes(MaxMaxBatchBytes), MaxBatchBytes(MaxMaxBatchBytes + 1)},
		{"MaxBatchBytes", MaxBatchBytes(MaxMaxBatchBytes), MaxBatchBytes(1 << 40)},
	} {
		_, err := Open(t.TempDir(), CompactEvery(0), tc.over)
		var oe *isb.OptionError
		if !errors.As(err, &oe) || oe.Package != "wal" || oe.Option != tc.option || !errors.Is(err, isb.ErrInvalidOption) {
			t.Errorf("%s over its bound (%v): %v; want an *isb.OptionError naming it", tc.option, oe, err)
		}
		w, err := Open(t.TempDir(), CompactEvery(0), tc.at)
		if err != nil {
			t.Errorf("%s at its bound: %v", tc.option, err)
			continue
		}
		closeT(t, w)
	}
}
