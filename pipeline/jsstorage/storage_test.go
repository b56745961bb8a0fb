package jsstorage_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/nats-io/nats.go"
	"math"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/jetstream"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/pipeline/jsstorage"
	"github.com/runnel-dev/runnel/watermark/jskv"
)

// newStorage is a storage on its own connection to srv.
func newStorage(t *testing.T, srv *natstest.Server, opts ...jsstorage.Option) *jsstorage.Storage {
	t.Helper()
	st, err := jsstorage.New(srv.Connect(), append([]jsstorage.Option{jsstorage.ReduceLogDir(t.TempDir())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestOptionsRefused: each bad option is an *isb.OptionError naming it,
// from New, before anything is asked of the server.
func TestOptionsRefused(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect()
	dir := jsstorage.ReduceLogDir(t.TempDir())
	cases := []struct {
		name   string
		opts   []jsstorage.Option
		pkg    string
		option string
	}{
		{"no reduce log", nil, "jsstorage", "ReduceLogDir"},
		{"empty reduce log", []jsstorage.Option{jsstorage.ReduceLogDir("")}, "jsstorage", "ReduceLogDir"},
		{"nil option", []jsstorage.Option{dir, nil}, "jsstorage", "jsstorage.Option"},
		{"state replicas", []jsstorage.Option{dir, jsstorage.StateReplicas(0)}, "jsstorage", "StateReplicas"},
		{"state storage", []jsstorage.Option{dir, jsstorage.StateStorage(natsjs.StorageType(7))}, "jsstorage", "StateStorage"},
		{"request timeout", []jsstorage.Option{dir, jsstorage.RequestTimeout(0)}, "jsstorage", "RequestTimeout"},
		{"retry timeout", []jsstorage.Option{dir, jsstorage.RetryTimeout(-time.Second)}, "jsstorage", "RetryTimeout"},
		{"nil buffer option", []jsstorage.Option{dir, jsstorage.BufferOptions(nil)}, "jsstorage", "jsstorage.BufferOptions"},
		{"buffer replicas", []jsstorage.Option{dir, jsstorage.BufferOptions(jetstream.Replicas(9))}, "jetstream", "Replicas"},
		{"buffer claim ttl", []jsstorage.Option{dir, jsstorage.BufferOptions(jetstream.ClaimTTL(-1))}, "jetstream", "ClaimTTL"},
		{"watermark history", []jsstorage.Option{dir, jsstorage.WatermarkOptions(jskv.WithHistory(0))}, "jskv", "WithHistory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := jsstorage.New(nc, c.opts...)
			var oe *isb.OptionError
			if !errors.As(err, &oe) || oe.Package != c.pkg || oe.Option != c.option {
				t.Fatalf("New: %v (storage %v), want an *isb.OptionError of %s naming %s", err, st, c.pkg, c.option)
			}
			if !errors.Is(err, isb.ErrInvalidOption) {
				t.Errorf("%v does not match isb.ErrInvalidOption", err)
			}
		})
	}
	if _, err := jsstorage.New(nil, dir); err == nil || !strings.Contains(err.Error(), "NATS connection") {
		t.Errorf("New(nil): %v, want an error asking for a connection", err)
	}
}

func TestStorageDescribesItself(t *testing.T) {
	srv := natstest.Start(t)
	st := newStorage(t, srv)
	if got, want := st.String(), "jetstream("+srv.URL()+")"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if !st.Durable() || !st.Shared() {
		t.Errorf("Durable %v, Shared %v; want both", st.Durable(), st.Shared())
	}
	dir, err := st.ReduceLog("orders", "per-user")
	if err != nil || !strings.HasSuffix(dir, "/orders.wal/per-user") {
		t.Errorf("ReduceLog = %q, %v; want {dir}/orders.wal/per-user", dir, err)
	}
}

// TestSourceStateRoundTrip: a missing key loads as ok false; a saved value
// loads back, also in another process's storage; a pipeline name with '_'
// is escaped into the bucket name.
func TestSourceStateRoundTrip(t *testing.T) {
	srv := natstest.Start(t)
	st := newStorage(t, srv)
	s, err := st.SourceState("my_pipe", "gen")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.(interface{ String() string }).String(), "jetstream kv my_5Fpipe__state/source.gen"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if b, ok, err := s.Load(); ok || err != nil || b != nil {
		t.Fatalf("Load of a missing key = %q, %v, %v; want nothing, false, nil", b, ok, err)
	}
	for _, v := range [][]byte{[]byte("position 1"), []byte("position 2, longer"), {}} {
		if err := s.Save(v); err != nil {
			t.Fatal(err)
		}
		other, err := newStorage(t, srv).SourceState("my_pipe", "gen")
		if err != nil {
			t.Fatal(err)
		}
		for _, store := range []pipeline.StateStore{s, other} {
			if b, ok, err := store.Load(); !ok || err != nil || !bytes.Equal(b, v) {
				t.Fatalf("Load = %q, %v, %v; want %q", b, ok, err, v)
			}
		}
	}
	// Another vertex and another pipeline have keys of their own.
	for _, pv := range [][2]string{{"my_pipe", "gen2"}, {"my-pipe", "gen"}} {
		o, err := st.SourceState(pv[0], pv[1])
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := o.Load(); ok || err != nil {
			t.Errorf("%s/%s: Load = ok %v, %v; want nothing", pv[0], pv[1], ok, err)
		}
	}
	if _, err := st.SourceState("", "gen"); err == nil {
		t.Error("SourceState of an empty pipeline name: no error")
	}
}

// TestOpenBufferStreams: a buffer's streams are named by pipeline and
// vertex, hold the capacity per partition as MaxMsgs and record the
// codec and the format (packed by default); another codec or format is
// refused when the buffer is opened again.
func TestOpenBufferStreams(t *testing.T) {
	srv := natstest.Start(t)
	st := newStorage(t, srv, jsstorage.BufferOptions(jetstream.MemoryStorage()))
	js, err := natsjs.New(srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	open := func(spec pipeline.BufferSpec) error {
		b, err := st.OpenBuffer(spec)
		if err != nil {
			return err
		}
		caps, err := b.Open(spec.Vertex, spec.Partitions)
		if err == nil && !caps.OwnsLimits {
			t.Errorf("caps %+v: the storage does not own its limits", caps)
		}
		return errors.Join(err, b.Close())
	}
	spec := pipeline.BufferSpec{Pipeline: "p1", Vertex: "sum", Partitions: 3, Capacity: 10, Codec: "envelope/json"}
	if err := open(spec); err != nil {
		t.Fatal(err)
	}
	// The same vertex of another pipeline, unbounded.
	if err := open(pipeline.BufferSpec{Pipeline: "p2", Vertex: "sum", Partitions: 1, Codec: "envelope/msgpack"}); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]any{"p1__sum-0": {int64(16), "envelope/json"}, "p1__sum-1": {int64(16), "envelope/json"},
		"p1__sum-2": {int64(16), "envelope/json"}, "p2__sum-0": {int64(math.MaxInt64), "envelope/msgpack"}}
	for name, w := range want {
		s, err := js.Stream(context.Background(), name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		cfg := s.CachedInfo().Config
		if cfg.MaxMsgs != w[0] || cfg.Metadata["runnel.codec"] != w[1] {
			t.Errorf("stream %s: MaxMsgs %d, codec %q; want %v, %v", name, cfg.MaxMsgs, cfg.Metadata["runnel.codec"], w[0], w[1])
		}
		if f := cfg.Metadata["runnel.format"]; f != "2" {
			t.Errorf("stream %s: runnel.format %q, want 2 (packed, the default)", name, f)
		}
	}
	spec.Codec = "envelope/msgpack"
	var me *jetstream.MismatchError
	if err := open(spec); !errors.As(err, &me) || me.Setting != "codec" {
		t.Errorf("reopened with another codec: %v, want a *jetstream.MismatchError on the codec", err)
	}
	// Unpacked streams record format 1, and a buffer opened in the other
	// format than its streams' is refused.
	spec.Codec = "envelope/json"
	st = newStorage(t, srv, jsstorage.BufferOptions(jetstream.MemoryStorage()), jsstorage.Unpacked())
	if err := open(spec); !errors.As(err, &me) || me.Setting != "format" {
		t.Errorf("packed streams opened unpacked: %v, want a *jetstream.MismatchError on the format", err)
	}
	if err := open(pipeline.BufferSpec{Pipeline: "p3", Vertex: "sum", Partitions: 1, Codec: "envelope/json"}); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(context.Background(), "p3__sum-0")
	if err != nil {
		t.Fatal(err)
	}
	if f := s.CachedInfo().Config.Metadata["runnel.format"]; f != "1" {
		t.Errorf("an unpacked stream: runnel.format %q, want 1", f)
	}
}

// TestStateRidesOutServerRestart: a source's position saved while the
// server is down (as a generator saves it when it acks) is retried until
// the server is back and then loads back, and so does a JoinRun; with
// RetryTimeout(0) the same save fails at once with the server's error,
// naming the bucket and key. (A save that failed this way once failed the
// whole run of e2e's TestDistributedNATSRestart.)
func TestStateRidesOutServerRestart(t *testing.T) {
	srv := natstest.Start(t, natstest.Dir(t.TempDir()))
	retrying := newStorage(t, srv, jsstorage.RequestTimeout(500*time.Millisecond))
	// Its connection buffers nothing while disconnected: nats.go sends a
	// request buffered during the outage on reconnect, after the error was
	// returned, and this failed Save ("lost") then landed after the
	// retried one ("during") in 1 .ci/run under -race.
	failing, err := jsstorage.New(srv.Connect(nats.ReconnectBufSize(-1)), jsstorage.ReduceLogDir(t.TempDir()),
		jsstorage.RequestTimeout(500*time.Millisecond), jsstorage.RetryTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	s, err := retrying.SourceState("restart", "gen")
	if err != nil {
		t.Fatal(err)
	}
	f, err := failing.SourceState("restart", "gen")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save([]byte("before")); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if err := f.Save([]byte("lost")); err == nil || !strings.Contains(err.Error(), "restart__state/source.gen") {
		t.Errorf("Save with no retries while the server is down: %v, want an error naming the bucket and key", err)
	}
	saved, joined := make(chan error, 1), make(chan error, 1)
	go func() { saved <- s.Save([]byte("during")) }()
	go func() {
		_, err := retrying.JoinRun("restart")
		joined <- err
	}()
	time.Sleep(time.Second) // both are retrying now: the server is down
	select {
	case err := <-saved:
		t.Fatalf("Save returned %v while the server was down", err)
	default:
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan error{"Save": saved, "JoinRun": joined} {
		select {
		case err := <-ch:
			if err != nil {
				t.Errorf("%s across the restart: %v", name, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s did not return within a minute of the server's restart", name)
		}
	}
	if b, ok, err := s.Load(); !ok || err != nil || string(b) != "during" {
		t.Errorf("Load after the restart = %q, %v, %v; want \"during\"", b, ok, err)
	}
}
