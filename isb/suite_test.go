package isb_test

import (
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
)

// TestSuite runs the storage-agnostic behaviour suite on the reference
// slice backend, which also checks that the core keeps the Backend
// contract (no call after Close, commits and releases never backwards, no
// read below a release, one Append at a time per partition).
func TestSuite(t *testing.T) {
	isbtest.Run(t, func(tb testing.TB, name string, opts ...isb.TopicOption) (*isb.Topic[isbtest.Item], error) {
		tp, err := isb.NewTopic[isbtest.Item](name, isbtest.NewSliceBackend[isbtest.Item](), opts...)
		if err != nil {
			return nil, err
		}
		tb.Cleanup(func() {
			if err := tp.Close(); err != nil {
				tb.Errorf("Close: %v", err)
			}
		})
		return tp, nil
	})
}
