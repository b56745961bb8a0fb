package pipeline

import (
	"context"
	"errors"
	"testing"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/isb/mmap"
	"github.com/runnel-dev/runnel/vertex"
)

// joined returns the errors errors.Join put together (one for a plain error).
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// TestOneOptionErrorAcrossPackages: a vertex option refused by package
// vertex matches pipeline.ErrInvalidOption, and is the same *isb.OptionError
// type every package returns.
func TestOneOptionErrorAcrossPackages(t *testing.T) {
	p := New("one")
	Sink(p, "out", Source(p, "src", vertex.FromSlice([]int{1})), vertex.Blackhole[int](), vertex.Replicas(0))
	err := p.Run(context.Background())
	var oe *isb.OptionError
	if !errors.Is(err, ErrInvalidOption) || !errors.Is(err, isb.ErrInvalidOption) || !errors.As(err, &oe) {
		t.Fatalf("Run = %v; want an *isb.OptionError matching pipeline.ErrInvalidOption", err)
	}
	if oe.Package != "vertex" || oe.Option != "Replicas" || oe.Value != 0 {
		t.Fatalf("OptionError = %+v; want vertex's Replicas with value 0", oe)
	}
	if got, want := err.Error(), `pipeline: vertex "out": vertex: option Replicas: must be at least 1 (got 0)`; got != want {
		t.Fatalf("message %q; want %q", got, want)
	}
}

// TestNilOptionRefusedEverywhere: every option list of isb, isb/memory,
// isb/mmap, vertex and pipeline refuses a nil option with an
// *isb.OptionError naming the option kind and its position.
func TestNilOptionRefusedEverywhere(t *testing.T) {
	run := func(build func(p *Pipeline)) error {
		p := New("nil")
		build(p)
		return p.Run(context.Background())
	}
	src := func() vertex.Source[int] { return vertex.FromSlice([]int{1}) }
	tp, err := memory.NewTopic[int]("nums")
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	cases := []struct {
		name string
		err  func() error
		want string // the *isb.OptionError's message
	}{
		{"isb.NewTopic", func() error {
			_, err := memory.NewTopic[int]("t", isb.Partitions(2), nil)
			return err
		}, "isb: option isb.TopicOption: must not be nil (option 2 of 2) (got <nil>)"},
		{"isb.PullConsumer", func() error {
			_, err := tp.PullConsumer("g", nil)
			return err
		}, "isb: option isb.ConsumerOption: must not be nil (option 1 of 1) (got <nil>)"},
		{"memory.New", func() error {
			_, err := memory.New[int](nil, memory.SegmentSize(8))
			return err
		}, "memory: option memory.Option: must not be nil (option 1 of 2) (got <nil>)"},
		{"mmap.New", func() error {
			_, err := mmap.New[int](t.TempDir(), mmap.SegmentSize(mmap.MinSegmentSize), nil)
			return err
		}, "mmap: option mmap.Option: must not be nil (option 2 of 2) (got <nil>)"},
		{"mmap.NewTopic", func() error {
			_, err := mmap.NewTopic[int](t.TempDir(), "t", nil)
			return err
		}, "mmap: option mmap.Option: must not be nil (option 1 of 1) (got <nil>)"},
		{"mmap.Topic", func() error {
			_, err := mmap.NewTopic[int](t.TempDir(), "t", mmap.Topic(isb.Partitions(2), nil))
			return err
		}, "isb: option isb.TopicOption: must not be nil (option 2 of 2) (got <nil>)"},
		{"vertex.Option", func() error {
			return run(func(p *Pipeline) { Sink(p, "out", Source(p, "src", src()), vertex.Blackhole[int](), nil) })
		}, "vertex: option vertex.Option: must not be nil (option 1 of 1) (got <nil>)"},
		{"vertex.GeneratorOption", func() error {
			return run(func(p *Pipeline) {
				Sink(p, "out", Source(p, "gen", vertex.Generator(func(i int64) int { return 0 }, vertex.Count(1), nil)), vertex.Blackhole[int]())
			})
		}, "vertex: option vertex.GeneratorOption: must not be nil (option 2 of 2) (got <nil>)"},
		{"vertex.TopicSourceOption", func() error {
			return run(func(p *Pipeline) {
				Sink(p, "out", Source(p, "src", vertex.FromTopic(tp, "g", nil)), vertex.Blackhole[int]())
			})
		}, "vertex: option vertex.TopicSourceOption: must not be nil (option 1 of 1) (got <nil>)"},
		{"pipeline.Option", func() error {
			p := New("nil", DrainTimeout(0), nil)
			Sink(p, "out", Source(p, "src", src()), vertex.Blackhole[int]())
			return p.Run(context.Background())
		}, "pipeline: option pipeline.Option: must not be nil (option 2 of 2) (got <nil>)"},
	}
	for _, c := range cases {
		err := c.err()
		var oe *isb.OptionError
		if !errors.Is(err, ErrInvalidOption) || !errors.As(err, &oe) || oe.Error() != c.want {
			t.Errorf("%s: %v; want an *isb.OptionError %q", c.name, err, c.want)
		}
	}
}

// TestSourceRefusesInputOptions: options of an input buffer given to a
// source are refused, one error per option, each naming vertex and option.
func TestSourceRefusesInputOptions(t *testing.T) {
	p := New("kinds")
	s := Source(p, "src", vertex.FromSlice([]int{1}), vertex.PartitionByKey(), vertex.Partitions(4), vertex.Replicas(2))
	Sink(p, "out", s, vertex.Blackhole[int]())
	err := p.Run(context.Background())
	errs := joined(err)
	want := []string{
		`pipeline: vertex "src": pipeline: option Partitions: configures a vertex's input buffer, reader and stage; a source vertex has none (got "source")`,
		`pipeline: vertex "src": pipeline: option PartitionByKey: configures a vertex's input buffer, reader and stage; a source vertex has none (got "source")`,
	}
	if len(errs) != len(want) {
		t.Fatalf("Run = %v; want exactly %d errors", err, len(want))
	}
	for i, e := range errs {
		if e.Error() != want[i] || !errors.Is(e, ErrInvalidOption) {
			t.Errorf("error %d = %q; want %q matching ErrInvalidOption", i, e, want[i])
		}
	}
}

// TestPartitionsZeroRefused: Partitions(0) is an error, not the default.
func TestPartitionsZeroRefused(t *testing.T) {
	p := New("zero")
	Sink(p, "out", Source(p, "src", vertex.FromSlice([]int{1})), vertex.Blackhole[int](), vertex.Partitions(0))
	err := p.Run(context.Background())
	if got, want := err.Error(), `pipeline: vertex "out": vertex: option Partitions: must be at least 1 (got 0)`; got != want {
		t.Fatalf("Run = %q; want %q", got, want)
	}
	if _, err := forwarder.NewOptions(vertex.MaxInFlight(0)); err == nil || err.Error() != "vertex: option MaxInFlight: must be at least BatchSize (500) (got 0)" {
		t.Fatalf("NewConfig(MaxInFlight(0)) = %v; want it refused", err)
	}
}

// TestDuplicateNameIsOneError: a vertex that takes a used name gets
// ErrDuplicateName, and nothing else is reported: not the edges from it
// ("edge from a vertex of another pipeline"), not the first vertex of the
// name left without output.
func TestDuplicateNameIsOneError(t *testing.T) {
	for _, build := range []func(p *Pipeline){
		func(p *Pipeline) { // the duplicate feeds the sink
			s := Source(p, "a", vertex.FromSlice([]int{1}))
			m := Map(p, "a", s, ident)
			Sink(p, "out", m, vertex.Blackhole[int]())
		},
		func(p *Pipeline) { // two sources of one name, each feeding a sink
			Sink(p, "out1", Source(p, "a", vertex.FromSlice([]int{1})), vertex.Blackhole[int]())
			Sink(p, "out2", Source(p, "a", vertex.FromSlice([]int{2})), vertex.Blackhole[int]())
		},
	} {
		p := New("dup")
		build(p)
		err := p.Run(context.Background())
		if errs := joined(err); len(errs) != 1 || errs[0].Error() != `pipeline: vertex "a": pipeline: duplicate vertex name` {
			t.Fatalf("Run = %v; want only the duplicate name of %q", err, "a")
		}
	}
}
