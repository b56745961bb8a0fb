package jetstream

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// Every invalid field is an *OptionError naming it.
func TestConfigErrors(t *testing.T) {
	nc := &nats.Conn{} // never used: validation fails first
	ok := SourceConfig{Conn: nc, Stream: "s", Durable: "d"}
	with := func(f func(*SourceConfig)) error {
		c := ok
		f(&c)
		_, err := NewSource(context.Background(), c)
		return err
	}
	sub := func(*vertex.Message[[]byte]) string { return "x" }
	for _, c := range []struct {
		option string
		err    error
	}{
		{"Conn", with(func(c *SourceConfig) { c.Conn = nil })},
		{"Stream", with(func(c *SourceConfig) { c.Stream = "" })},
		{"Stream", with(func(c *SourceConfig) { c.Stream = "a.b" })},
		{"Durable", with(func(c *SourceConfig) { c.Durable = "a/b" })},
		{"FilterSubjects", with(func(c *SourceConfig) { c.FilterSubjects = []string{"a..b"} })},
		{"DeliverPolicy", with(func(c *SourceConfig) { c.DeliverPolicy = natsjs.DeliverByStartSequencePolicy })},
		{"AckWait", with(func(c *SourceConfig) { c.AckWait = time.Millisecond })},
		{"MaxAckPending", with(func(c *SourceConfig) { c.MaxAckPending = -1 })},
		{"FetchBatch", with(func(c *SourceConfig) { c.FetchBatch = -1 })},
		{"PollInterval", with(func(c *SourceConfig) { c.PollInterval = -1 })},
		{"KeyTokens", with(func(c *SourceConfig) { c.KeyTokens = []int{-2} })},
		{"AckWait", with(func(c *SourceConfig) { c.Bind, c.AckWait = true, time.Second })},
		{"FilterSubjects", with(func(c *SourceConfig) { c.Bind, c.FilterSubjects = true, []string{"a"} })},
		{"Conn", func() error { _, err := NewSink(SinkConfig{Subject: "a"}); return err }()},
		{"Subject", func() error { _, err := NewSink(SinkConfig{Conn: nc}); return err }()},
		{"Subject", func() error { _, err := NewSink(SinkConfig{Conn: nc, Subject: "a.>"}); return err }()},
		{"SubjectOf", func() error { _, err := NewSink(SinkConfig{Conn: nc, Subject: "a", SubjectOf: sub}); return err }()},
		{"AckTimeout", func() error { _, err := NewSink(SinkConfig{Conn: nc, Subject: "a", AckTimeout: -1}); return err }()},
		{"MaxPending", func() error { _, err := NewSink(SinkConfig{Conn: nc, Subject: "a", MaxPending: -1}); return err }()},
	} {
		var oe *vertex.OptionError
		if !errors.As(c.err, &oe) || oe.Option != c.option || oe.Package != "jetstream" {
			t.Errorf("got %v, want an option error naming %s", c.err, c.option)
			continue
		}
		if !errors.Is(c.err, isb.ErrInvalidOption) || !strings.Contains(c.err.Error(), c.option) {
			t.Errorf("%v: not ErrInvalidOption, or without the option's name", c.err)
		}
	}
}

// Bind to a consumer that does not exist, or that acknowledges
// otherwise, is ErrConsumer; bind to a fitting one takes its AckWait.
func TestBind(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect()
	js := newJS(t, nc)
	createStream(t, js, "in")
	ctx := context.Background()
	if _, err := NewSource(ctx, SourceConfig{Conn: nc, Stream: "in", Durable: "none", Bind: true}); !errors.Is(err, ErrConsumer) {
		t.Fatalf("bind to a missing consumer: %v, want ErrConsumer", err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, "in", natsjs.ConsumerConfig{Durable: "all", AckPolicy: natsjs.AckAllPolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSource(ctx, SourceConfig{Conn: nc, Stream: "in", Durable: "all", Bind: true}); !errors.Is(err, ErrConsumer) {
		t.Fatalf("bind to an AckAll consumer: %v, want ErrConsumer", err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, "in", natsjs.ConsumerConfig{Durable: "ok", AckPolicy: natsjs.AckExplicitPolicy, AckWait: 7 * time.Second}); err != nil {
		t.Fatal(err)
	}
	src, err := NewSource(ctx, SourceConfig{Conn: nc, Stream: "in", Durable: "ok", Bind: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if src.ackWait != 7*time.Second {
		t.Fatalf("bound source keeps AckWait %v, want the consumer's 7s", src.ackWait)
	}
}
