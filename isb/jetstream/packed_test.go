package jetstream_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/jetstream"
)

// packedBackend opens a packed backend of topic "orders" (one partition)
// under prefix on nc, closed at cleanup.
func packedBackend(t *testing.T, nc *nats.Conn, prefix string, opts ...jetstream.Option) *jetstream.Backend[isbtest.Item] {
	t.Helper()
	b, err := jetstream.New[isbtest.Item](nc, append(append(testOptions(prefix), jetstream.Packed()), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open("orders", 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// appendWait appends items to l and returns the offset of the last.
func appendWait(t *testing.T, l isb.Log[isbtest.Item], items []isbtest.Item) int64 {
	t.Helper()
	w, err := l.Append(items)
	if err != nil {
		t.Fatal(err)
	}
	last, err := w.Wait(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// streamMsgs is how many messages stream holds.
func streamMsgs(t *testing.T, nc *nats.Conn, stream string) uint64 {
	t.Helper()
	s, err := jsOf(t, nc).Stream(testCtx(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().State.Msgs
}

// packed is the offset of item idx of the frame at seq.
func packed(seq, idx int64) int64 { return (seq-1)<<16 + idx }

// An append is cut into frames at FrameItems items and at FrameBytes
// bytes; every frame is one message, and the items come back in order.
func TestPackedFramesSplitAtCaps(t *testing.T) {
	nc := natstest.Start(t).Connect()
	for _, c := range []struct {
		name   string
		opt    jetstream.Option
		items  int
		frames uint64
	}{
		// 10 items of 4: 4, 4, 2.
		{"items", jetstream.FrameItems(4), 10, 3},
		// 40 items of JSON take more than 256 bytes: several frames,
		// each at most 256 bytes.
		{"bytes", jetstream.FrameBytes(256), 40, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := freshPrefix()
			b := packedBackend(t, nc, prefix, c.opt)
			l := b.Partition(0)
			items := seqs(0, 0, c.items)
			last := appendWait(t, l, items)
			n := streamMsgs(t, nc, prefix+"orders-0")
			if c.frames > 0 && n != c.frames {
				t.Fatalf("stream holds %d messages, want %d frames", n, c.frames)
			}
			if c.frames == 0 && n < 2 {
				t.Fatalf("stream holds %d messages, want several frames of at most 256 bytes", n)
			}
			if want := packed(int64(n), last&0xffff); last != want || l.Tail() != last+1 {
				t.Fatalf("last offset %d, tail %d; want %d and %d (in frame %d)", last, l.Tail(), want, want+1, n)
			}
			var got []isbtest.Item
			buf := make([]isbtest.Item, 100)
			for off := int64(0); off < l.Tail(); {
				first, its, err := l.Read(testCtx(t), off, len(buf), buf)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, its...)
				off = first + int64(len(its))
			}
			if !slices.Equal(got, items) {
				t.Fatalf("read back %v, want %v", got, items)
			}
			if c.frames == 0 {
				s, err := jsOf(t, nc).Stream(testCtx(t), prefix+"orders-0")
				if err != nil {
					t.Fatal(err)
				}
				for seq := uint64(1); seq <= n; seq++ {
					m, err := s.GetMsg(testCtx(t), seq)
					if err != nil || len(m.Data) > 256 {
						t.Fatalf("message %d: %d bytes, %v; want at most 256", seq, len(m.Data), err)
					}
				}
			}
		})
	}
}

// A read from every offset of a frame, and from its end, returns what the
// offsets hold: items of one frame from the index asked for, or at the
// end of a frame the next frame from its first offset.
func TestPackedReadAtEveryOffset(t *testing.T) {
	nc := natstest.Start(t).Connect()
	b := packedBackend(t, nc, freshPrefix())
	l := b.Partition(0)
	frames := [][]isbtest.Item{seqs(0, 0, 5), seqs(0, 5, 3), seqs(0, 8, 1)}
	for _, f := range frames {
		appendWait(t, l, f)
	}
	if tail := l.Tail(); tail != packed(3, 1) {
		t.Fatalf("tail %d, want %d (the end of the third frame)", tail, packed(3, 1))
	}
	buf := make([]isbtest.Item, 10)
	for fi, f := range frames {
		seq := int64(fi + 1)
		for idx := int64(0); idx <= int64(len(f)); idx++ {
			off := packed(seq, idx)
			if off >= l.Tail() {
				continue
			}
			wantFirst, want := off, f[idx:]
			if idx == int64(len(f)) { // the end: the next frame
				wantFirst, want = packed(seq+1, 0), frames[fi+1]
			}
			for _, max := range []int{1, 2, 10} {
				first, got, err := l.Read(testCtx(t), off, max, buf)
				w := want[:min(max, len(want))]
				if err != nil || first != wantFirst || !slices.Equal(got, w) {
					t.Fatalf("Read(%d, %d) = %d %v, %v; want %d %v", off, max, first, got, err, wantFirst, w)
				}
			}
		}
	}
	// Offsets past a frame's end that no read stops at (after a Skip)
	// move to the next frame too; offsets outside [Head, Tail) are refused.
	if first, got, err := l.Read(testCtx(t), packed(1, 200), 10, buf); err != nil || first != packed(2, 0) || !slices.Equal(got, frames[1]) {
		t.Fatalf("Read past the end of frame 1 = %d %v, %v; want the second frame", first, got, err)
	}
	if _, _, err := l.Read(testCtx(t), l.Tail(), 1, buf); !errors.Is(err, isb.ErrOutOfRange) {
		t.Fatalf("Read at the tail: %v; want ErrOutOfRange", err)
	}
	if n := l.Count(0, l.Tail()); n != 9 {
		t.Fatalf("Count(0, tail) = %d, want 9 items", n)
	}
	if n := l.Count(packed(1, 3), packed(2, 1)); n != 3 {
		t.Fatalf("Count(3 of frame 1, 1 of frame 2) = %d, want 3", n)
	}
}

// Something that is not a frame published into the stream is one damaged
// record at its message's first offset: Skip steps past the whole message
// and the next frame's items flow.
func TestPackedDamagedFrameSteppedOver(t *testing.T) {
	ctx := testCtx(t)
	nc := natstest.Start(t).Connect()
	prefix := freshPrefix()
	tp := mustTopic(t, nc, prefix, nil, jetstream.Packed())
	stream := prefix + "orders-0"
	pr := tp.Producer(nil)
	if _, err := pr.ProduceTo(ctx, 0, seqs(0, 0, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := jsOf(t, nc).Publish(ctx, stream, []byte(`{"producer":0,"seq":99}`)); err != nil { // sequence 2
		t.Fatal(err)
	}
	if _, err := pr.ProduceTo(ctx, 0, seqs(0, 3, 2)); err != nil {
		t.Fatal(err)
	}
	c, err := tp.PullConsumer("g")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := c.Pull(ctx)
	if err != nil || b.Offset != 0 || !slices.Equal(b.Items, seqs(0, 0, 3)) {
		t.Fatalf("first Pull = %d %v, %v; want the first frame", b.Offset, b.Items, err)
	}
	_, err = c.Pull(ctx)
	var de *jetstream.DecodeError
	if !errors.Is(err, isb.ErrCorrupt) || !errors.Is(err, jetstream.ErrFrame) || !errors.As(err, &de) || de.Stream != stream || de.Offset != packed(2, 0) {
		t.Fatalf("Pull at the damaged message: %v; want a *DecodeError of %q at %d matching ErrFrame and isb.ErrCorrupt", err, stream, packed(2, 0))
	}
	if off, err := c.Skip(0); err != nil || off != packed(2, 0) {
		t.Fatalf("Skip = %d, %v; want %d", off, err, packed(2, 0))
	}
	b, err = c.Pull(ctx)
	if err != nil || b.Offset != packed(3, 0) || !slices.Equal(b.Items, seqs(0, 3, 2)) {
		t.Fatalf("Pull after Skip = %d %v, %v; want the third frame at %d", b.Offset, b.Items, err, packed(3, 0))
	}
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := tp.Pending("g"); n != 0 {
		t.Fatalf("Pending after the last frame = %d, want 0", n)
	}
}

// A message missing between frames (deleted by hand) is a gap at its
// first offset, stepped over by one Skip.
func TestPackedDeletedFrameIsAGap(t *testing.T) {
	ctx := testCtx(t)
	nc := natstest.Start(t).Connect()
	prefix := freshPrefix()
	tp := mustTopic(t, nc, prefix, nil, jetstream.Packed())
	stream := prefix + "orders-0"
	pr := tp.Producer(nil)
	for i := range 3 {
		if _, err := pr.ProduceTo(ctx, 0, seqs(0, 2*i, 2)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := jsOf(t, nc).Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, 2); err != nil {
		t.Fatal(err)
	}
	c, err := tp.PullConsumer("g", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if b, err := c.Pull(ctx); err != nil || !slices.Equal(b.Items, seqs(0, 0, 2)) {
		t.Fatalf("first Pull = %v, %v", b.Items, err)
	}
	_, err = c.Pull(ctx)
	streamErrorOf(t, "Pull at a deleted frame", err, jetstream.ErrGap, stream)
	if off, err := c.Skip(0); err != nil || off != packed(2, 0) {
		t.Fatalf("Skip = %d, %v; want %d", off, err, packed(2, 0))
	}
	if b, err := c.Pull(ctx); err != nil || b.Offset != packed(3, 0) || !slices.Equal(b.Items, seqs(0, 4, 2)) {
		t.Fatalf("Pull after Skip = %d %v, %v; want the third frame", b.Offset, b.Items, err)
	}
}

// A stream made unpacked refuses a packed backend, and a packed one an
// unpacked backend, with a *MismatchError naming the stream and the
// format.
func TestPackedFormatMismatch(t *testing.T) {
	nc := natstest.Start(t).Connect()
	for _, c := range []struct {
		name          string
		made, opened  []jetstream.Option
		stored, asked string
	}{
		{"unpacked opened packed", nil, []jetstream.Option{jetstream.Packed()}, "1", "2"},
		{"packed opened unpacked", []jetstream.Option{jetstream.Packed()}, nil, "2", "1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := freshPrefix()
			mustTopic(t, nc, prefix, nil, c.made...).Close()
			_, err := openTopic(t, nc, prefix, nil, c.opened...)
			var me *jetstream.MismatchError
			if !errors.As(err, &me) || !errors.Is(err, jetstream.ErrMismatch) || me.Stream != prefix+"orders-0" ||
				me.Setting != "format" || me.Stored != c.stored || me.Asked != c.asked {
				t.Fatalf("%v; want a *MismatchError of stream %q on its format (%s stored, %s asked)", err, prefix+"orders-0", c.stored, c.asked)
			}
		})
	}
}

// Two backends on two connections append to one packed partition: each
// learns the other's frames (announcements), so both know the exact tail
// (the end of the last frame) and count every item as pending.
func TestPackedTailAndPendingAcrossBackends(t *testing.T) {
	ctx := testCtx(t)
	srv := natstest.Start(t)
	prefix := freshPrefix()
	// A slow refresh: what the backends learn, they learn from each other.
	opts := []jetstream.Option{jetstream.Packed(), jetstream.Refresh(time.Hour)}
	a := mustTopic(t, srv.Connect(), prefix, nil, opts...)
	b := mustTopic(t, srv.Connect(), prefix, nil, opts...)
	var last int64
	total := 0
	for i, tp := range []*isb.Topic[isbtest.Item]{a, b, a, b, b} {
		n := 3 + i
		off, err := tp.Producer(nil).ProduceTo(ctx, 0, seqs(i, 0, n))
		if err != nil {
			t.Fatal(err)
		}
		last, total = max(last, off), total+n
	}
	want := last + 1
	deadline := time.Now().Add(10 * time.Second)
	for {
		ta, tb := a.Pending("g"), b.Pending("g")
		if ta == int64(total) && tb == int64(total) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Pending(g) = %d and %d after 10s, want %d in both", ta, tb, total)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, err := b.PullConsumer("g", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []isbtest.Item
	var end int64
	for len(got) < total {
		bt, err := c.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, end = append(got, bt.Items...), bt.End()
	}
	if end != want {
		t.Fatalf("the last batch ends at %d, want the tail %d", end, want)
	}
	if err := c.CommitTo(0, end); err != nil {
		t.Fatal(err)
	}
	// (Topic a counts from the head: a topic knows the commits of the
	// groups it has members of.)
	if n := b.Pending("g"); n != 0 {
		t.Fatalf("Pending(g) after the commit of the tail = %d, want 0", n)
	}
	slices.SortFunc(got, func(x, y isbtest.Item) int { return (x.Producer-y.Producer)*1000 + x.Seq - y.Seq })
	var all []isbtest.Item
	for i := range 5 {
		all = append(all, seqs(i, 0, 3+i)...)
	}
	if !slices.Equal(got, all) {
		t.Fatalf("read %v, want %v exactly once", got, all)
	}
}

// A full frame (FrameItems of 4, offsets contiguous into the next frame
// only at 65,536) and the usage limit, which counts items: a packed
// partition is full at UsageLimit of MaxMsgs items, not frames.
func TestPackedUsageCountsItems(t *testing.T) {
	ctx := testCtx(t)
	nc := natstest.Start(t).Connect()
	prefix := freshPrefix()
	tp := mustTopic(t, nc, prefix, []isb.TopicOption{isb.WithFullMode(isb.FullFail)},
		jetstream.Packed(), jetstream.MaxMsgs(40), jetstream.UsageLimit(0.25)) // 10 items
	pr := tp.Producer(nil)
	if _, err := tp.PullConsumer("g"); err != nil { // a group: usage counts from its commit
		t.Fatal(err)
	}
	if _, err := pr.ProduceTo(ctx, 0, seqs(0, 0, 6)); err != nil {
		t.Fatal(err)
	}
	if _, err := pr.ProduceTo(ctx, 0, seqs(0, 6, 4)); err != nil {
		t.Fatalf("10 items with a limit of 10: %v", err)
	}
	_, err := pr.ProduceTo(ctx, 0, seqs(0, 10, 1))
	if !errors.Is(err, isb.ErrFull) {
		t.Fatalf("an 11th item: %v; want ErrFull (two frames, but 10 items)", err)
	}
	if !strings.Contains(err.Error(), "10 items uncommitted") {
		t.Fatalf("the error %q does not count the items", err)
	}
}
