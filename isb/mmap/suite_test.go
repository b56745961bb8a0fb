package mmap_test

import (
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/mmap"
)

// factory makes topics in a fresh directory with 64 KiB segments, so the
// suite's volumes cross many rollovers.
func factory(opts ...mmap.Option) isbtest.Factory {
	return func(t testing.TB, name string, topicOpts ...isb.TopicOption) (*isb.Topic[isbtest.Item], error) {
		tp, err := mmap.NewTopic[isbtest.Item](t.TempDir(), name, append([]mmap.Option{mmap.SegmentSize(64 << 10)}, opts...), topicOpts...)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() {
			if err := tp.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return tp, nil
	}
}

func TestSuite(t *testing.T) {
	t.Run("Batch", func(t *testing.T) {
		isbtest.Run(t, factory(mmap.Flush(mmap.Batch(100)), mmap.MaxRetainedConsumedSegments(0)))
	})
	t.Run("Immediate", func(t *testing.T) {
		if testing.Short() {
			t.Skip("fsync per append: slow")
		}
		isbtest.Run(t, factory(mmap.Flush(mmap.Immediate())))
	})
}
