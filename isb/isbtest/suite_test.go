package isbtest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sliceFactory makes topics on a fresh SliceBackend.
func sliceFactory(t testing.TB, name string, opts ...isb.TopicOption) (*isb.Topic[isbtest.Item], error) {
	tp, err := isb.NewTopic[isbtest.Item](name, isbtest.NewSliceBackend[isbtest.Item](), opts...)
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

func TestSuiteOnSliceBackend(t *testing.T) { isbtest.Run(t, sliceFactory) }
