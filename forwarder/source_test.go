package forwarder

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

type fakeSourceWM struct{ mins []time.Time }

func (f *fakeSourceWM) Observe(partition int, minEventTime time.Time) time.Time {
	f.mins = append(f.mins, minEventTime)
	return time.Unix(100, 0)
}

type ackRecorder struct {
	vertex.Source[int]
	mu    sync.Mutex
	acked []string
}

func (a *ackRecorder) Ack(_ context.Context, msgs []vertex.Message[int]) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range msgs {
		a.acked = append(a.acked, m.ID)
	}
	return nil
}

// The source forwarder stamps missing event times, marks late messages
// from the source watermark, writes, publishes and acks to the source.
func TestRunSource(t *testing.T) {
	in := []msg{
		{ID: "old", EventTime: time.Unix(50, 0)},
		{ID: "new", EventTime: time.Unix(150, 0)},
		{ID: "unset"},
	}
	src := &ackRecorder{Source: vertex.FromMessages(in)}
	out := newTopic(t, "out")
	wm := &fakeSourceWM{}
	pub := &fakePublisher{}
	c := &Counters{}
	cfg := Config{Vertex: "src", Options: Options{BatchSize: 10}, Counters: c,
		Hooks: Hooks{Source: wm, Publisher: pub}}
	before := time.Now()
	if err := RunSource(context.Background(), context.Background(), cfg, vertex.Source[int](src), []Edge[int]{{To: "out", Topic: out}}); err != nil {
		t.Fatal(err)
	}
	got, end := splitEnd(t, drain(t, out)[0])
	if len(got) != 3 {
		t.Fatalf("wrote %d, want 3", len(got))
	}
	// The exhausted source ends its output Final, after its data.
	if end != (endMsg{"src/0", Final}) {
		t.Errorf("end of stream %+v, want src/0 final", end)
	}
	for _, m := range got {
		if !m.Watermark.Equal(time.Unix(100, 0)) {
			t.Errorf("%s: watermark %v", m.ID, m.Watermark)
		}
	}
	if !got[0].Late || got[1].Late || got[2].Late {
		t.Errorf("late flags %v %v %v, want only the old one", got[0].Late, got[1].Late, got[2].Late)
	}
	if got[2].EventTime.Before(before) {
		t.Errorf("unset event time stamped %v, before the read", got[2].EventTime)
	}
	if len(wm.mins) != 1 || !wm.mins[0].Equal(time.Unix(50, 0)) {
		t.Errorf("observed minimum event times %v, want [50s]", wm.mins)
	}
	if len(src.acked) != 3 || len(pub.calls) != 1 || pub.calls[0].wm != 100 {
		t.Errorf("acked %v, publisher calls %v", src.acked, pub.calls)
	}
	if s := c.Snapshot(); s.Read != 3 || s.Written != 3 || s.Acked != 3 || s.InFlight != 0 {
		t.Errorf("counters %+v", s)
	}
	// The source's own slice is untouched: stamping works on copies.
	if !in[2].EventTime.IsZero() || in[0].Late {
		t.Errorf("the caller's messages were modified")
	}
}

// errSource returns its messages together with err in one read, as an
// io.Reader-like BufferedSource may: n > 0 and an error.
type errSource struct {
	msgs []msg
	err  error
	done bool
}

func (s *errSource) Read(ctx context.Context, max int) ([]msg, error) {
	panic("ReadInto is preferred")
}

func (s *errSource) ReadInto(_ context.Context, buf []msg) (int, error) {
	if s.done {
		return 0, io.EOF
	}
	s.done = true
	return copy(buf, s.msgs), s.err
}

// Messages a read returns together with an error were taken from the
// source: they are written (not lost) before the error ends the replica.
func TestRunSourceDeliversMessagesReturnedWithAnError(t *testing.T) {
	boom := errors.New("boom")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name      string
		err       error
		cancelled bool // soft ends during the read
		wantErr   error
		wantEnd   EndKind // the end of stream written after the data
	}{
		{"failure", boom, false, boom, 0},
		{"eof", io.EOF, false, nil, Final},
		{"cancelled", context.Canceled, true, nil, Stopped},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &errSource{msgs: []msg{{ID: "a"}, {ID: "b"}}, err: c.err}
			out := newTopic(t, "out")
			cnt := &Counters{}
			cfg := Config{Vertex: "src", Options: Options{BatchSize: 10}, Counters: cnt}
			// A soft context already cancelled would stop the loop before
			// the read: this one ends during it.
			var soft context.Context = context.Background()
			if c.cancelled {
				soft = &cancelAfterFirstErr{Context: context.Background(), after: cancelled}
			}
			err := RunSource(context.Background(), soft, cfg, vertex.Source[int](src), []Edge[int]{{To: "out", Topic: out}})
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) {
				t.Fatalf("RunSource = %v; want %v", err, c.wantErr)
			}
			data, end := splitEnd(t, drain(t, out)[0])
			if got := ids(data); !slices.Equal(got, []string{"a", "b"}) {
				t.Errorf("wrote %v; want [a b]", got)
			}
			if want := (endMsg{"src/0", c.wantEnd}); c.wantEnd != 0 && end != want || c.wantEnd == 0 && end != (endMsg{}) {
				t.Errorf("end of stream %+v; want %v", end, c.wantEnd)
			}
			if s := cnt.Snapshot(); s.Read != 2 || s.Written != 2 || s.Acked != 2 || s.InFlight != 0 {
				t.Errorf("counters %+v", s)
			}
		})
	}
}

// cancelAfterFirstErr is a context that is live for its first Err call (the
// loop's check before the read) and reports after's error from then on.
type cancelAfterFirstErr struct {
	context.Context
	after context.Context
	calls int
}

func (c *cancelAfterFirstErr) Err() error {
	c.calls++
	if c.calls == 1 {
		return nil
	}
	return c.after.Err()
}

// failingAcker fails every Ack.
type failingAcker struct {
	vertex.Source[int]
	err error
}

func (a *failingAcker) Ack(context.Context, []msg) error { return a.err }

// A failed Ack to the source fails the replica; the batch was written but
// is not counted as acked, and nothing stays counted in flight.
func TestRunSourceAckFailure(t *testing.T) {
	boom := errors.New("ack refused")
	src := &failingAcker{Source: vertex.FromSlice([]int{1, 2}), err: boom}
	out := newTopic(t, "out")
	cnt := &Counters{}
	cfg := Config{Vertex: "src", Options: Options{BatchSize: 10}, Counters: cnt}
	err := RunSource(context.Background(), context.Background(), cfg, vertex.Source[int](src), []Edge[int]{{To: "out", Topic: out}})
	var pe *vertex.ProcessError
	if !errors.Is(err, boom) || !errors.As(err, &pe) || pe.Vertex != "src" {
		t.Fatalf("RunSource = %v; want a *vertex.ProcessError of src wrapping the ack error", err)
	}
	if s := cnt.Snapshot(); s.Read != 2 || s.Written != 2 || s.Acked != 0 || s.InFlight != 0 {
		t.Errorf("counters %+v; want read 2, written 2, acked 0, in flight 0", s)
	}
}
