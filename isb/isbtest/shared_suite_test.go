package isbtest_test

import (
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
)

// The shared-storage suite on the SharedStore double.
func TestSharedStoreSuite(t *testing.T) {
	isbtest.RunShared(t, func(_ testing.TB, limit int64) isbtest.SharedStorage {
		var opts []isbtest.SharedOption
		if limit > 0 {
			opts = append(opts, isbtest.SharedLimit(limit))
		}
		store := isbtest.NewSharedStore[isbtest.Item](opts...)
		return isbtest.SharedStorage{Open: func(t testing.TB, opts ...isb.TopicOption) (*isb.Topic[isbtest.Item], error) {
			return sharedTopic(t, store, "orders", opts...)
		}}
	})
}
