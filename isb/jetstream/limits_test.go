package jetstream_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/jetstream"
)

// A writer that opens on a buffer another process filled is full before
// its first append (Numaflow 3422: writers started before the first usage
// check wrote into a full buffer), and room made by a commit in yet
// another process is seen without a round trip per produce.
func TestWriterStartsFull(t *testing.T) {
	ctx := testCtx(t)
	srv := natstest.Start(t)
	prefix := freshPrefix()
	limits := []jetstream.Option{jetstream.MaxMsgs(10), jetstream.UsageLimit(0.5)} // full at 5 uncommitted
	fail := []isb.TopicOption{isb.WithFullMode(isb.FullFail)}

	a := mustTopic(t, srv.Connect(), prefix, fail, limits...)
	if err := a.Producer(nil).ProduceBatch(ctx, seqs(0, 0, 5)); err != nil {
		t.Fatal(err)
	}
	b := mustTopic(t, srv.Connect(), prefix, fail, limits...) // another process
	err := b.Producer(nil).Produce(ctx, isbtest.Item{Producer: 1})
	streamErrorOf(t, "first produce of a writer opened on a full buffer", err, isb.ErrFull, prefix+"orders-0")
	if ok, err := b.Producer(nil).TryProduce(ctx, isbtest.Item{Producer: 1}); ok || err != nil {
		t.Fatalf("TryProduce on a full buffer = %v, %v; want false, nil", ok, err)
	}

	// A third process consumes three and commits: the writer sees room
	// for three.
	c := mustTopic(t, srv.Connect(), prefix, nil, limits...)
	cons, err := c.PullConsumer("g", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if _, err := cons.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cons.CommitTo(0, 3); err != nil {
		t.Fatal(err)
	}
	// A FullWait writer of a fourth process waits for that commit to
	// become known to it (the commit watch wakes it) and stores 3.
	waiting := mustTopic(t, srv.Connect(), prefix, nil, limits...)
	if err := waiting.Producer(nil).ProduceBatch(ctx, seqs(2, 0, 3)); err != nil {
		t.Fatalf("FullWait produce of 3 after a commit made room for 3: %v", err)
	}
	// Once the writer knows of those 3 (their announcement), the buffer is
	// full again for it.
	waitFor(t, "the writer learns the other appends", func() bool { return b.Used() == 8 })
	err = b.Producer(nil).Produce(ctx, isbtest.Item{Producer: 1})
	streamErrorOf(t, "produce past the limit", err, isb.ErrFull, prefix+"orders-0")
}

// waitFor polls cond (bounded) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// The stream refuses messages at MaxMsgs (DiscardNew): nothing anyone has
// not consumed is ever discarded, a writer that did not know the usage
// gets ErrFull from the stream itself, and a partition whose groups
// committed everything is emptied by retention so producers go on.
func TestNeverDiscardsUnconsumed(t *testing.T) {
	ctx := testCtx(t)
	srv := natstest.Start(t)
	nc := srv.Connect()
	prefix := freshPrefix()
	stream := prefix + "orders-0"
	limits := []jetstream.Option{jetstream.MaxMsgs(8), jetstream.UsageLimit(1)}
	fail := []isb.TopicOption{isb.WithFullMode(isb.FullFail)}
	// A writer that refreshes once a minute: it knows nothing of what the
	// raw publishes below store (they announce nothing). OnError sees the
	// publish the stream refuses.
	var failures []string
	var fmu sync.Mutex
	onError := jetstream.OnError(func(op string, err error) {
		fmu.Lock()
		defer fmu.Unlock()
		failures = append(failures, op)
	})
	blind := mustTopic(t, srv.Connect(), prefix, fail, append(limits, jetstream.Refresh(time.Minute), onError)...)
	js := jsOf(t, nc)
	for i := range 8 {
		if _, err := js.Publish(ctx, stream, []byte(fmt.Sprintf(`{"s":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	err := blind.Producer(nil).Produce(ctx, isbtest.Item{Seq: 8})
	streamErrorOf(t, "produce past MaxMsgs by a writer that did not know the usage", err, isb.ErrFull, stream)
	fmu.Lock()
	if !slices.Equal(failures, []string{"publish"}) {
		t.Errorf("OnError saw %v, want one publish", failures)
	}
	fmu.Unlock()
	if st := streamState(t, js, stream); st.Msgs != 8 || st.FirstSeq != 1 {
		t.Fatalf("stream holds %d messages from %d after a refused produce; want 8 from 1 (none discarded)", st.Msgs, st.FirstSeq)
	}

	tp := mustTopic(t, nc, prefix, fail, limits...)
	cons, err := tp.PullConsumer("g", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	err = tp.Producer(nil).Produce(ctx, isbtest.Item{Seq: 8})
	streamErrorOf(t, "produce past the usage limit", err, isb.ErrFull, stream)
	var got []isbtest.Item
	for len(got) < 8 {
		b, err := cons.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b.Items...)
	}
	if !slices.Equal(got, seqs(0, 0, 8)) {
		t.Fatalf("read %v; want seq 0 to 7", got)
	}
	if err := cons.Commit(); err != nil {
		t.Fatal(err)
	}
	// Retention deletes what g committed; then the stream takes more.
	// (Earliest says 8 as soon as the commit releases them, before the
	// purge: ask the stream.)
	waitFor(t, "retention deletes the committed messages", func() bool { return streamState(t, js, stream).Msgs == 0 })
	if err := tp.Producer(nil).Produce(ctx, isbtest.Item{Seq: 8}); err != nil {
		t.Fatalf("produce after everything was committed and deleted: %v", err)
	}
	if st := streamState(t, js, stream); st.Msgs != 1 || st.FirstSeq != 9 {
		t.Fatalf("stream holds %d messages from %d; want 1 from 9", st.Msgs, st.FirstSeq)
	}
}

func streamState(t *testing.T, js natsjs.JetStream, stream string) natsjs.StreamState {
	t.Helper()
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().State
}

// A Pull blocked on a partition wakes on a message that a writer outside
// runnel published (no announcement): the refresh finds it.
func TestPullWakesOnUnannouncedAppend(t *testing.T) {
	ctx := testCtx(t)
	nc := natstest.Start(t).Connect()
	prefix := freshPrefix()
	tp := mustTopic(t, nc, prefix, nil)
	c, err := tp.PullConsumer("g")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pulled := make(chan isb.Batch[isbtest.Item], 1)
	go func() {
		b, err := c.Pull(ctx)
		if err != nil {
			t.Error(err)
		}
		b.Items = slices.Clone(b.Items)
		pulled <- b
	}()
	if _, err := jsOf(t, nc).Publish(ctx, prefix+"orders-0", []byte(`{"p":7,"s":1}`)); err != nil {
		t.Fatal(err)
	}
	if b := <-pulled; b.Offset != 0 || !slices.Equal(b.Items, []isbtest.Item{{Producer: 7, Seq: 1}}) {
		t.Fatalf("Pull = offset %d %v; want offset 0 [{7 1}]", b.Offset, b.Items)
	}
}
