package memory_test

import (
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/memory"
)

// The Log-level contract, on segments small enough that reads stop at
// their boundaries. (TestSuite runs the behaviour suite; a memory Backend
// does not outlive its topic, so there is no reopen to check.)
func TestLogContract(t *testing.T) {
	isbtest.LogContract(t, func(testing.TB) isbtest.Storage {
		return isbtest.Storage{New: func() (isb.Backend[isbtest.Item], error) {
			return memory.New[isbtest.Item](memory.SegmentSize(3), memory.MaxFreeSegments(1))
		}}
	})
}
