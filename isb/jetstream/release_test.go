package jetstream_test

import (
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/jetstream"
)

// TestNewGroupStartsPastWhatWasReleased: a commit releases what every group
// committed at once, while the stream is purged later (at a refresh). A
// group created in between starts past the release, not at the stream's
// first sequence, which the purge takes away a moment later (the suite's
// DeleteGroupRecomputesMin failed under -race with "offset 0 outside
// [2, 6)" before Head counted the release).
func TestNewGroupStartsPastWhatWasReleased(t *testing.T) {
	ctx := testCtx(t)
	srv := natstest.Start(t)
	nc := srv.Connect()
	prefix := freshPrefix()
	// Refreshes once a minute: the purge cannot happen during the test.
	tp := mustTopic(t, nc, prefix, nil, jetstream.Refresh(time.Minute))
	if err := tp.Producer(nil).ProduceBatch(ctx, seqs(0, 0, 6)); err != nil {
		t.Fatal(err)
	}
	a, err := tp.PullConsumer("a", isb.BatchSize(10), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var got []isbtest.Item
	for len(got) < 6 {
		b, err := a.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b.Items...)
	}
	if err := a.CommitTo(0, 4); err != nil {
		t.Fatal(err)
	}
	if e := tp.Earliest(0); e != 4 {
		t.Fatalf("Earliest(0) = %d right after the commit released 0..3, want 4", e)
	}
	late, err := tp.PullConsumer("late", isb.BatchSize(10))
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	b, err := late.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.Offset != 4 || !slices.Equal(b.Items, seqs(0, 4, 2)) {
		t.Fatalf("late group read %v from offset %d, want items 4 and 5 from 4", b.Items, b.Offset)
	}
}
