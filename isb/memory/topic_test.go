package memory_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/memory"
)

// The shared behaviour suite, on the default segment size and on segments so
// small that nearly every pull stops at a boundary and every few items
// recycle one.
func TestSuite(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []memory.Option
	}{
		{"default", nil},
		{"segment=3", []memory.Option{memory.SegmentSize(3), memory.MaxFreeSegments(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isbtest.Run(t, func(tb testing.TB, name string, opts ...isb.TopicOption) (*isb.Topic[isbtest.Item], error) {
				b, err := memory.New[isbtest.Item](tc.opts...)
				if err != nil {
					return nil, err
				}
				topic, err := isb.NewTopic(name, b, opts...)
				if err != nil {
					return nil, err
				}
				tb.Cleanup(func() { topic.Close() })
				return topic, nil
			})
		})
	}
}

func TestNewTopic(t *testing.T) {
	topic, err := memory.NewTopic[string]("words", isb.Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	defer topic.Close()
	if topic.Name() != "words" || topic.Partitions() != 2 {
		t.Fatalf("topic %q with %d partitions; want words with 2", topic.Name(), topic.Partitions())
	}
	if _, err := memory.NewTopic[string]("bad", isb.Partitions(0)); !errors.Is(err, isb.ErrInvalidOption) {
		t.Errorf("NewTopic with 0 partitions = %v; want ErrInvalidOption", err)
	}
}

// A pull returns at most one segment's items, and they alias storage, so a
// segment boundary ends a batch early, and committed segments are reused.
func TestTopicPullStopsAtSegmentBoundary(t *testing.T) {
	b, err := memory.New[int](memory.SegmentSize(4))
	if err != nil {
		t.Fatal(err)
	}
	topic, err := isb.NewTopic("n", b)
	if err != nil {
		t.Fatal(err)
	}
	defer topic.Close()
	ctx := context.Background()
	c, err := topic.PullConsumer("g", isb.BatchSize(100))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := topic.Producer(nil).ProduceBatch(ctx, []int{0, 1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	var got [][]int
	for range 2 {
		batch, err := c.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, slices.Clone(batch.Items))
	}
	if want := [][]int{{0, 1, 2, 3}, {4, 5}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v; want %v", got, want)
	}
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	if h := b.Log(0).Head(); h != 6 {
		t.Errorf("head after the only group committed everything = %d; want 6", h)
	}
	if g := groupsOf(t, b); !slices.Equal(g, []string{"g"}) {
		t.Errorf("Groups = %v; want [g]", g)
	}
}
