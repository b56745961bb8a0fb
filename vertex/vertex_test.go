package vertex

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/replicactx"
	"github.com/runnel-dev/runnel/isb"
)

func TestConditions(t *testing.T) {
	tests := []struct {
		c    *Condition
		tags []string
		want bool
	}{
		{nil, nil, true},
		{AnyTag("a", "b"), []string{"b"}, true},
		{AnyTag("a", "b"), []string{"c"}, false},
		{AnyTag("a"), nil, false},
		{AllTags("a", "b"), []string{"b", "a", "c"}, true},
		{AllTags("a", "b"), []string{"a"}, false},
		{Not(AnyTag("a")), []string{"b"}, true},
		{Not(AnyTag("a")), nil, true},
		{Not(AnyTag("a")), []string{"a"}, false},
		{And(AnyTag("a"), Not(AnyTag("b"))), []string{"a"}, true},
		{And(AnyTag("a"), Not(AnyTag("b"))), []string{"a", "b"}, false},
		{Or(AnyTag("a"), AllTags("b", "c")), []string{"b", "c"}, true},
		{Or(AnyTag("a"), AllTags("b", "c")), []string{"b"}, false},
	}
	for _, tt := range tests {
		if got := tt.c.Match(tt.tags); got != tt.want {
			t.Errorf("%s.Match(%v) = %v, want %v", tt.c, tt.tags, got, tt.want)
		}
	}
	for _, bad := range []*Condition{AnyTag(), AllTags("a", ""), Not(nil), And(), Or(AnyTag()), {}} {
		if err := bad.Validate(); !errors.Is(err, ErrInvalidCondition) {
			t.Errorf("%s.Validate() = %v, want ErrInvalidCondition", bad, err)
		}
	}
	if err := Not(And(AnyTag("a"), AllTags("b"))).Validate(); err != nil {
		t.Errorf("a valid condition: %v", err)
	}
	// A reserved tag never reaches an edge: a condition on it is a mistake.
	err := Or(AnyTag("a"), AllTags("b", DropTag)).Validate()
	if want := `vertex: condition or(any(a),all(b,runnel/drop)): tag "runnel/drop" is reserved (prefix runnel/)`; !errors.Is(err, ErrInvalidCondition) || err.Error() != want {
		t.Errorf("Validate with a reserved tag = %v; want %q", err, want)
	}
}

func TestRetryBackoff(t *testing.T) {
	p := RetryPolicy{InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	want := []time.Duration{10, 20, 40, 50, 50}
	for i, w := range want {
		if got := p.Backoff(i + 1); got != w*time.Millisecond {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
}

func readAll[T any](t *testing.T, s Source[T], batch int) []Message[T] {
	t.Helper()
	var out []Message[T]
	for {
		ms, err := s.Read(context.Background(), batch)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 || len(ms) > batch {
			t.Fatalf("Read returned %d messages for max %d", len(ms), batch)
		}
		out = append(out, ms...)
	}
}

func TestGenerator(t *testing.T) {
	base := time.Unix(1000, 0)
	g := Generator(func(i int64) int64 { return i * i }, Count(10), Keys(3),
		EventTimes(func(i int64) time.Time { return base.Add(time.Duration(i) * time.Second) }))
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	got := readAll[int64](t, g, 4)
	if len(got) != 10 {
		t.Fatalf("%d messages, want 10", len(got))
	}
	for i, m := range got {
		if m.ID != string(rune('0'+i)) || m.Value != int64(i*i) || !slices.Equal(m.Keys, []string{"k" + string(rune('0'+i%3))}) ||
			!m.EventTime.Equal(base.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("message %d: %+v", i, m)
		}
	}
	for _, bad := range []*GeneratorSource[int]{
		Generator[int](nil), Generator(func(int64) int { return 0 }, Rate(-1)),
		Generator(func(int64) int { return 0 }, Count(-1)), Generator(func(int64) int { return 0 }, Keys(-2)),
	} {
		if err := bad.Validate(); !errors.Is(err, isb.ErrInvalidOption) {
			t.Errorf("Validate: %v, want ErrInvalidOption", err)
		}
	}
}

// A rate-limited generator does not run ahead: after the first message,
// the next waits for its due time, and a cancelled Read returns at once.
func TestGeneratorRate(t *testing.T) {
	g := Generator(func(i int64) int { return int(i) }, Rate(1))
	ms, err := g.Read(context.Background(), 100)
	if err != nil || len(ms) != 1 {
		t.Fatalf("first Read: %d messages, %v; want 1", len(ms), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Read(ctx, 100); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read after cancel: %v", err)
	}
}

// A rate so small that the interval between two messages does not fit a
// time.Duration is refused by name and value; the smallest rate accepted
// waits its whole interval for the second message instead of overflowing
// into a busy loop.
func TestGeneratorRateRange(t *testing.T) {
	for _, r := range []float64{1e-12, 1e-10} {
		err := Generator(func(int64) int { return 0 }, Rate(r)).Validate()
		var oe *OptionError
		if !errors.Is(err, isb.ErrInvalidOption) || !errors.As(err, &oe) || oe.Option != "Rate" || oe.Value != r {
			t.Errorf("Validate with Rate(%g) = %v; want an *OptionError naming Rate and %g", r, err, r)
		}
	}
	const slowest = 1.1e-10 // an interval of about 290 years
	g := Generator(func(i int64) int { return int(i) }, Rate(slowest))
	if err := g.Validate(); err != nil {
		t.Fatalf("Validate with Rate(%g) = %v; want nil", slowest, err)
	}
	if _, n, wait := g.reserve(10); n != 1 || wait != 0 {
		t.Fatalf("first reserve: %d messages, wait %v; want 1 at once", n, wait)
	}
	// Less than a day of the interval can have passed since the first
	// reserve, however slow the machine; a second covers float rounding.
	interval := time.Duration(float64(time.Second) / slowest)
	if _, n, wait := g.reserve(10); n != 0 || wait > interval+time.Second || wait < interval-24*time.Hour {
		t.Fatalf("second reserve: %d messages, wait %v; want 0 and a wait within a day of %v", n, wait, interval)
	}
}

func TestSliceChannelAndSeqSources(t *testing.T) {
	if got := readAll[string](t, FromSlice([]string{"a", "b", "c"}), 2); len(got) != 3 || got[2].ID != "2" || got[2].Value != "c" {
		t.Fatalf("slice: %+v", got)
	}
	ch := make(chan int, 5)
	for i := range 5 {
		ch <- i
	}
	close(ch)
	if got := readAll[int](t, FromChannel(ch), 3); len(got) != 5 || got[4].ID != "4" || got[4].Value != 4 {
		t.Fatalf("channel: %+v", got)
	}
	seq := FromSeq(slices.Values([]int{7, 8, 9}))
	if got := readAll[int](t, seq, 2); len(got) != 3 || got[1].Value != 8 || got[1].ID != "1" {
		t.Fatalf("seq: %+v", got)
	}
	_ = seq.Close()
	// Closing a half-read sequence ends its coroutine (goleak checks).
	half := FromSeq(slices.Values([]int{1, 2, 3}))
	if _, err := half.Read(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if err := half.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := half.Read(context.Background(), 1); !errors.Is(err, io.EOF) {
		t.Fatalf("Read after Close: %v, want io.EOF", err)
	}
	if err := FromChannel[int](nil).Validate(); !errors.Is(err, isb.ErrInvalidOption) {
		t.Fatalf("nil channel: %v", err)
	}
}

func TestSinks(t *testing.T) {
	b := Blackhole[int]()
	if res, err := b.Write(context.Background(), make([]Message[int], 7)); res != nil || err != nil || b.Count() != 7 {
		t.Fatalf("blackhole: %v %v %d", res, err, b.Count())
	}
	ch := make(chan Message[int], 1)
	sink := ToChannel(ch)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := sink.Write(ctx, []Message[int]{{ID: "a"}, {ID: "b"}})
	// The first fits in the buffer (or the cancel wins); the rest is retried.
	if err != nil || len(res) != 2 || res[1] != ResultRetry {
		t.Fatalf("channel sink after cancel: %v %v", res, err)
	}
	if _, err := Log[int](nil).Write(context.Background(), []Message[int]{{ID: "x"}}); err != nil {
		t.Fatal(err)
	}
	fail := errors.New("down")
	if _, err := Func(func(context.Context, []Message[int]) error { return fail }).Write(context.Background(), nil); err != fail {
		t.Fatalf("func sink: %v", err)
	}
}

func TestDerive(t *testing.T) {
	in := Message[int]{ID: "1", EventTime: time.Unix(5, 0), Keys: []string{"k"}, Tags: []string{"t"}, Headers: map[string]string{"h": "v"}, Value: 3, Late: true}
	out := Derive(in, "three")
	if out.ID != "1" || !out.EventTime.Equal(in.EventTime) || out.Keys[0] != "k" || out.Tags[0] != "t" || out.Headers["h"] != "v" || out.Value != "three" || !out.Late {
		t.Fatalf("Derive: %+v", out)
	}
	if !in.HasTag("t") || in.HasTag("u") {
		t.Fatal("HasTag")
	}
}

// ReadInto overwrites every field of a reused buffer.
func TestGeneratorReadIntoReusesBuffer(t *testing.T) {
	g := Generator(func(i int64) int { return int(i) }, Count(4))
	buf := make([]Message[int], 3)
	buf[0] = Message[int]{Tags: []string{"stale"}, Late: true, Watermark: time.Unix(9, 0)}
	n, err := g.ReadInto(context.Background(), buf)
	if err != nil || n != 3 || buf[0].Tags != nil || buf[0].Late || !buf[0].Watermark.IsZero() || buf[2].ID != "2" {
		t.Fatalf("ReadInto: %d %v %+v", n, err, buf[0])
	}
	if n, err = g.ReadInto(context.Background(), buf); n != 1 || err != nil || buf[0].Value != 3 {
		t.Fatalf("second ReadInto: %d %v", n, err)
	}
	if _, err = g.ReadInto(context.Background(), buf); !errors.Is(err, io.EOF) {
		t.Fatalf("third ReadInto: %v, want io.EOF", err)
	}
}

func TestReplicaContext(t *testing.T) {
	if _, ok := ReplicaFrom(context.Background()); ok {
		t.Fatal("ReplicaFrom of a plain context reported a replica")
	}
	ctx := replicactx.With(context.Background(), Replica{Vertex: "map", Index: 2})
	if r, ok := ReplicaFrom(ctx); !ok || r != (Replica{Vertex: "map", Index: 2}) {
		t.Fatalf("ReplicaFrom = %+v, %v, want map 2", r, ok)
	}
}

// Sinks built from a nil function or channel fail validation, naming the
// constructor, instead of panicking or blocking once the pipeline runs.
func TestNilSinkArgumentsFailValidation(t *testing.T) {
	type validator interface{ Validate() error }
	for _, c := range []struct {
		sink Sink[int]
		want string
	}{
		{SinkFunc[int](nil), "vertex: option SinkFunc: needs a non-nil function (got <nil>)"},
		{Func[int](nil), "vertex: option SinkFunc: needs a non-nil function (got <nil>)"},
		{ToChannel[int](nil), "vertex: option ToChannel: needs a non-nil channel (got <nil>)"},
	} {
		v, ok := c.sink.(validator)
		if !ok {
			t.Fatalf("%T has no Validate", c.sink)
		}
		err := v.Validate()
		if !errors.Is(err, isb.ErrInvalidOption) || err.Error() != c.want {
			t.Errorf("Validate = %v; want %q", err, c.want)
		}
	}
	for _, s := range []Sink[int]{Func(func(context.Context, []Message[int]) error { return nil }), ToChannel(make(chan Message[int]))} {
		if err := s.(interface{ Validate() error }).Validate(); err != nil {
			t.Errorf("%T: Validate = %v; want nil", s, err)
		}
	}
}
