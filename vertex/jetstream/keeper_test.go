package jetstream

import (
	"context"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/vertex"
)

// A message held in flight for several AckWaits is not delivered again:
// the source keeps it in progress, and the messages it has queued and not
// yet handed out too. A batch of 10 of 50 is read and held
// unacknowledged for three AckWaits and a half while the other 40 wait in
// the queue (the server would have delivered all 50 again three times
// without the keeper); then the 40 are read, all 50 acknowledged, and
// neither the consumer nor the source counts a redelivery.
func TestInProgressPastAckWait(t *testing.T) {
	const n, first = 50, 10
	const ackWait = 300 * time.Millisecond
	srv := natstest.Start(t)
	nc := srv.Connect()
	js := newJS(t, nc)
	createStream(t, js, "in")
	publishIDs(t, js, "in", 0, n, 1)
	src, err := NewSource(context.Background(), SourceConfig{Conn: nc, Stream: "in", Durable: "slow", AckWait: ackWait})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()
	waitFor(t, 10*time.Second, "every message in the source's queue", func() bool { return src.queued() == n })
	held, err := src.Read(ctx, first)
	if err != nil || len(held) != first {
		t.Fatalf("read %d messages (%v), want %d", len(held), err, first)
	}
	time.Sleep(ackWait*3 + ackWait/2)
	if q := src.queued(); q != n-first {
		t.Fatalf("%d messages queued after the wait, want the %d not read: some were delivered again", q, n-first)
	}
	rest, err := src.Read(ctx, n)
	if err != nil || len(rest) != n-first {
		t.Fatalf("read %d messages (%v), want the %d left", len(rest), err, n-first)
	}
	for _, b := range [][]vertex.Message[[]byte]{held, rest} {
		if err := src.Ack(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.Consumer(ctx, "in", "slow")
	if err != nil {
		t.Fatal(err)
	}
	var info *natsjs.ConsumerInfo
	waitFor(t, 10*time.Second, "every acknowledgement at the server", func() bool {
		info, err = cons.Info(ctx)
		return err == nil && info.NumAckPending == 0
	})
	if info.NumRedelivered != 0 || src.Redelivered() != 0 || info.AckFloor.Stream != n {
		t.Fatalf("consumer: %d redelivered, ack floor %d; source: %d redelivered; want 0, %d, 0",
			info.NumRedelivered, info.AckFloor.Stream, src.Redelivered(), n)
	}
}
