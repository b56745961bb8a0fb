package isb_test

import (
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
)

// TestSuite runs the storage suites (Log contract, topic behaviour, reopen)
// on the reference slice backend, which also checks that the core keeps
// the Backend contract (no call after Close, commits and releases never
// backwards, no read below a release, one Append at a time per partition).
// Reopening is closing the backend and opening it again: it keeps its
// data, as durable storage does.
func TestSuite(t *testing.T) {
	isbtest.RunStorage(t, func(testing.TB) isbtest.Storage {
		b := isbtest.NewSliceBackend[isbtest.Item]()
		return isbtest.Storage{New: func() (isb.Backend[isbtest.Item], error) { return b, nil }, Durable: true}
	})
}

// TestSuiteStaged runs the storage suites on a backend whose writes are
// deferred (isb.Caps.Deferred) and complete at once when waited: the topic
// must behave the same when its Appends complete only at Write.Wait.
func TestSuiteStaged(t *testing.T) {
	isbtest.RunStorage(t, func(testing.TB) isbtest.Storage {
		b := isbtest.NewStagedBackend[isbtest.Item]()
		b.AllowAll()
		return isbtest.Storage{New: func() (isb.Backend[isbtest.Item], error) { return b, nil }, Durable: true}
	})
}
