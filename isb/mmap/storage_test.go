package mmap_test

import (
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/mmap"
)

// storage is a fresh directory; every Backend opens it again, so a Backend
// made after another closed recovers what that one kept (a restart).
func storage(t testing.TB) isbtest.Storage {
	dir := t.TempDir()
	return isbtest.Storage{
		New: func() (isb.Backend[isbtest.Item], error) {
			return mmap.New[isbtest.Item](dir, mmap.SegmentSize(64<<10), mmap.Flush(mmap.Batch(100)))
		},
		Durable: true,
	}
}

// The Log-level contract and the restart checks (TestSuite runs the
// behaviour suite).
func TestLogContract(t *testing.T) { isbtest.LogContract(t, storage) }

func TestReopen(t *testing.T) { isbtest.Reopen(t, storage) }
