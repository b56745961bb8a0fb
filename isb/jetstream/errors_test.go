package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/jetstream"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// freshPrefix is a namespace of its own on a shared server.
func freshPrefix() string { return fmt.Sprintf("e%d-", prefixes.Add(1)) }

// openTopic opens topic "orders" under prefix on nc (one process's view),
// closed at cleanup.
func openTopic(t *testing.T, nc *nats.Conn, prefix string, topicOpts []isb.TopicOption, opts ...jetstream.Option) (*isb.Topic[isbtest.Item], error) {
	t.Helper()
	all := append(testOptions(prefix), opts...)
	all = append(all, jetstream.Topic(topicOpts...))
	tp, err := jetstream.NewTopic[isbtest.Item](nc, "orders", all...)
	if err == nil {
		t.Cleanup(func() {
			if err := tp.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	return tp, err
}

func mustTopic(t *testing.T, nc *nats.Conn, prefix string, topicOpts []isb.TopicOption, opts ...jetstream.Option) *isb.Topic[isbtest.Item] {
	t.Helper()
	tp, err := openTopic(t, nc, prefix, topicOpts, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func jsOf(t *testing.T, nc *nats.Conn) natsjs.JetStream {
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// streamErrorOf checks that err is a *StreamError of kind naming stream.
func streamErrorOf(t *testing.T, what string, err, kind error, stream string) {
	t.Helper()
	var se *jetstream.StreamError
	if !errors.Is(err, kind) || !errors.As(err, &se) || se.Stream != stream {
		t.Fatalf("%s: %v; want a *jetstream.StreamError of kind %v naming stream %q", what, err, kind, stream)
	}
}

// A server that cannot be reached when the topic opens is a typed error
// naming the first stream, within RequestTimeout.
func TestUnreachableAtStart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + l.Addr().String()
	l.Close() // nothing listens there now
	nc, err := nats.Connect(url, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_, err = openTopic(t, nc, "u-", nil, jetstream.RequestTimeout(100*time.Millisecond))
	streamErrorOf(t, "opening a topic without a server", err, jetstream.ErrUnreachable, "u-orders-0")
}

// A stream deleted under a running consumer: a Pull blocked on it returns
// a typed error naming the stream, and so does a produce.
func TestStreamDeletedUnderConsumer(t *testing.T) {
	ctx := testCtx(t)
	nc := natstest.Start(t).Connect()
	prefix := freshPrefix()
	tp := mustTopic(t, nc, prefix, nil)
	if err := tp.Producer(nil).Produce(ctx, isbtest.Item{Seq: 1}); err != nil {
		t.Fatal(err)
	}
	c, err := tp.PullConsumer("g")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if b, err := c.Pull(ctx); err != nil || len(b.Items) != 1 {
		t.Fatalf("Pull = %v, %v; want the one item", b.Items, err)
	}
	pulled := make(chan error, 1)
	go func() {
		_, err := c.Pull(ctx) // blocks: nothing more to read
		pulled <- err
	}()
	stream := prefix + "orders-0"
	if err := jsOf(t, nc).DeleteStream(ctx, stream); err != nil {
		t.Fatal(err)
	}
	var re *isb.ReadError
	err = <-pulled
	streamErrorOf(t, "Pull blocked on a deleted stream", err, jetstream.ErrStreamDeleted, stream)
	if !errors.As(err, &re) || re.Partition != 0 {
		t.Fatalf("Pull error %v is not an *isb.ReadError of partition 0", err)
	}
	err = tp.Producer(nil).Produce(ctx, isbtest.Item{Seq: 2})
	streamErrorOf(t, "Produce into a deleted stream", err, jetstream.ErrStreamDeleted, stream)
}

// A message that does not decode is a *DecodeError naming the stream and
// offset, matching isb.ErrCorrupt: the consumer steps past it with Skip
// (counted), and the partition goes on with the next message.
func TestDecodeFailureStepsPast(t *testing.T) {
	ctx := testCtx(t)
	nc := natstest.Start(t).Connect()
	prefix := freshPrefix()
	tp := mustTopic(t, nc, prefix, nil)
	stream := prefix + "orders-0"
	pr := tp.Producer(nil)
	if err := pr.Produce(ctx, isbtest.Item{Seq: 0}); err != nil {
		t.Fatal(err)
	}
	if _, err := jsOf(t, nc).Publish(ctx, stream, []byte("not json")); err != nil { // offset 1
		t.Fatal(err)
	}
	if err := pr.Produce(ctx, isbtest.Item{Seq: 2}); err != nil {
		t.Fatal(err)
	}
	c, err := tp.PullConsumer("g", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := c.Pull(ctx)
	if err != nil || b.Offset != 0 || !slices.Equal(b.Items, []isbtest.Item{{Seq: 0}}) {
		t.Fatalf("first Pull = offset %d %v, %v; want offset 0 [seq 0] (the batch ends before the damaged message)", b.Offset, b.Items, err)
	}
	_, err = c.Pull(ctx)
	var de *jetstream.DecodeError
	if !errors.Is(err, isb.ErrCorrupt) || !errors.Is(err, codec.ErrDecode) || !errors.As(err, &de) || de.Stream != stream || de.Offset != 1 {
		t.Fatalf("Pull at the damaged message: %v; want a *DecodeError of stream %q offset 1 matching isb.ErrCorrupt", err, stream)
	}
	if off, err := c.Skip(0); err != nil || off != 1 {
		t.Fatalf("Skip = %d, %v; want 1", off, err)
	}
	b, err = c.Pull(ctx)
	if err != nil || b.Offset != 2 || !slices.Equal(b.Items, []isbtest.Item{{Seq: 2}}) {
		t.Fatalf("Pull after Skip = offset %d %v, %v; want offset 2 [seq 2]", b.Offset, b.Items, err)
	}
	if n := c.Skipped(); n != 1 {
		t.Fatalf("Skipped = %d; want 1", n)
	}
}

// A message deleted by hand inside the retained range is a gap: an error
// matching isb.ErrCorrupt that Skip steps past, never a silent jump.
func TestDeletedMessageIsAGap(t *testing.T) {
	ctx := testCtx(t)
	nc := natstest.Start(t).Connect()
	prefix := freshPrefix()
	tp := mustTopic(t, nc, prefix, nil)
	stream := prefix + "orders-0"
	if err := tp.Producer(nil).ProduceBatch(ctx, seqs(0, 0, 4)); err != nil {
		t.Fatal(err)
	}
	s, err := jsOf(t, nc).Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, 3); err != nil { // offset 2
		t.Fatal(err)
	}
	c, err := tp.PullConsumer("g", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := c.Pull(ctx)
	if err != nil || b.Offset != 0 || len(b.Items) != 2 {
		t.Fatalf("first Pull = offset %d %v, %v; want offsets 0 and 1", b.Offset, b.Items, err)
	}
	_, err = c.Pull(ctx)
	streamErrorOf(t, "Pull at a deleted message", err, jetstream.ErrGap, stream)
	if !errors.Is(err, isb.ErrCorrupt) {
		t.Fatalf("gap %v does not match isb.ErrCorrupt", err)
	}
	if _, err := c.Skip(0); err != nil {
		t.Fatal(err)
	}
	b, err = c.Pull(ctx)
	if err != nil || b.Offset != 3 || !slices.Equal(b.Items, []isbtest.Item{{Seq: 3}}) {
		t.Fatalf("Pull after Skip = offset %d %v, %v; want offset 3 [seq 3]", b.Offset, b.Items, err)
	}
}

// A stream that exists with other settings is a *MismatchError naming the
// stream and the setting; nothing is changed in the server.
func TestStreamWithOtherSettings(t *testing.T) {
	ctx := testCtx(t)
	nc := natstest.Start(t).Connect()
	js := jsOf(t, nc)

	prefix := freshPrefix()
	stream := prefix + "orders-0"
	if _, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: stream, Subjects: []string{stream}}); err != nil {
		t.Fatal(err)
	}
	_, err := openTopic(t, nc, prefix, nil)
	var me *jetstream.MismatchError
	if !errors.Is(err, jetstream.ErrMismatch) || !errors.As(err, &me) || me.Stream != stream || me.Setting != "format (the stream was not made by runnel)" {
		t.Fatalf("opening over a stream made by someone else: %v; want a *MismatchError of %q on its format", err, stream)
	}

	prefix = freshPrefix()
	stream = prefix + "orders-0"
	mustTopic(t, nc, prefix, []isb.TopicOption{isb.Partitions(2)}).Close()
	for _, c := range []struct {
		what    string
		topic   []isb.TopicOption
		opts    []jetstream.Option
		setting string
	}{
		{"another partition count", []isb.TopicOption{isb.Partitions(3)}, nil, "partitions"},
		{"another codec", []isb.TopicOption{isb.Partitions(2)}, []jetstream.Option{jetstream.WithCodec(codec.MsgPack[isbtest.Item]())}, "codec"},
		{"another MaxMsgs", []isb.TopicOption{isb.Partitions(2)}, []jetstream.Option{jetstream.MaxMsgs(7)}, "MaxMsgs"},
	} {
		_, err := openTopic(t, nc, prefix, c.topic, c.opts...)
		if !errors.As(err, &me) || me.Stream != stream || me.Setting != c.setting {
			t.Fatalf("%s: %v; want a *MismatchError of %q on %s", c.what, err, stream, c.setting)
		}
	}
	// Discard old would evict what no group consumed: refused.
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.Discard = natsjs.DiscardOld
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	_, err = openTopic(t, nc, prefix, []isb.TopicOption{isb.Partitions(2)})
	if !errors.As(err, &me) || me.Stream != stream || me.Setting != "Discard" {
		t.Fatalf("a stream switched to DiscardOld: %v; want a *MismatchError of %q on Discard", err, stream)
	}
}

// seqs returns items from..from+n-1 of producer p.
func seqs(p, from, n int) []isbtest.Item {
	items := make([]isbtest.Item, n)
	for i := range items {
		items[i] = isbtest.Item{Producer: p, Seq: from + i}
	}
	return items
}

// Transient tells what heals (a server restarting, a stream without a
// leader yet, a timeout) from what does not, in the errors of both of
// nats.go's JetStream APIs: the leader reads (internal/kvleader) use the
// older one, whose 503 is another type. A renewal of a claim that read
// such a 503 as final lost the claim during a server restart.
func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"timeout", nats.ErrTimeout, true},
		{"deadline", fmt.Errorf("read: %w", context.DeadlineExceeded), true},
		{"reconnecting", nats.ErrConnectionReconnecting, true},
		{"no responders", nats.ErrNoResponders, true},
		{"503", &natsjs.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{"503 of the older API", fmt.Errorf("get: %w", &nats.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}), true},
		{"JetStream not enabled, older API", &nats.APIError{Code: 503, ErrorCode: nats.JSErrCodeJetStreamNotEnabled}, true},
		{"storage full", &natsjs.APIError{Code: 503, ErrorCode: 10077, Description: "maximum messages exceeded"}, false},
		{"stream not found", &natsjs.APIError{Code: 404, ErrorCode: natsjs.JSErrCodeStreamNotFound}, false},
		{"stream not found, older API", &nats.APIError{Code: 404, ErrorCode: nats.JSErrCodeStreamNotFound}, false},
		{"wrong last sequence", &natsjs.APIError{Code: 400, ErrorCode: 10071}, false},
		{"closed", nats.ErrConnectionClosed, false},
	} {
		if got := jetstream.Transient(tc.err); got != tc.want {
			t.Errorf("Transient(%s: %v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
