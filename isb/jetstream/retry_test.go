package jetstream

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb/isbtest"
)

// A frame sent again after its acknowledgement was lost (what complete
// does for a round not answered within AckTimeout) is stored once: the
// server answers the repeat with the first one's sequence, because the
// frame carries one message id. The write completes with the offsets of
// the first, and the stream holds each frame once.
func TestPackedRetryAfterLostAckNotDuplicated(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc := natstest.Start(t).Connect()
	b, err := New[isbtest.Item](nc, Packed(), FrameItems(3), Prefix("retry-"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open("orders", 1); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	l := b.parts[0]
	items := make([]isbtest.Item, 7) // frames of 3, 3 and 1
	for i := range items {
		items[i] = isbtest.Item{Seq: i}
	}
	w := &write[isbtest.Item]{l: l, sc: new(scratch)}
	if w.msgs, err = l.encodeFrames(w.sc, items); err != nil || len(w.msgs) != 3 {
		t.Fatalf("encodeFrames: %d messages, %v; want 3 frames", len(w.msgs), err)
	}
	// The first round is stored, but its answers go unread: lost.
	first, r := l.b.pub.send(l.ctx, w.msgs)
	res, err := l.b.pub.await(ctx, first, r, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	stored := make([]uint64, len(res))
	for i, x := range res {
		if x.err != nil {
			t.Fatalf("frame %d: %v", i, x.err)
		}
		stored[i] = x.seq
	}
	// The retry: the same messages, the same ids.
	w.id, w.r = l.b.pub.send(l.ctx, w.msgs)
	last, err := w.Complete(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if want := join(stored[2], 0, frameShift); last != want {
		t.Fatalf("the retried write's last offset = %d, want %d (the first round's last frame, item 0)", last, want)
	}
	info, err := l.s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Msgs; n != 3 {
		t.Fatalf("stream holds %d messages after a retry of 3 frames, want 3", n)
	}
	buf := make([]isbtest.Item, 10)
	var got []isbtest.Item
	for off := int64(0); off < l.Tail(); {
		at, its, err := l.Read(ctx, off, len(buf), buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, its...)
		off = at + int64(len(its))
	}
	if len(got) != len(items) {
		t.Fatalf("read %v, want %v once", got, items)
	}
	for i := range got {
		if got[i] != items[i] {
			t.Fatalf("read %v, want %v once", got, items)
		}
	}
}
