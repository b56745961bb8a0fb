package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/vertex"
)

func ident(_ context.Context, v int) (int, error) { return v, nil }

func TestValidationNamesTheVertex(t *testing.T) {
	src := func() vertex.Source[int] { return vertex.FromSlice([]int{1}) }
	sink := func() vertex.Sink[int] { return vertex.Blackhole[int]() }
	tests := []struct {
		name   string
		build  func(p *Pipeline)
		want   error
		vertex string
	}{
		{"duplicate name", func(p *Pipeline) {
			s := Source(p, "a", src())
			Sink(p, "a", s, sink())
		}, ErrDuplicateName, "a"},
		{"bad name", func(p *Pipeline) {
			s := Source(p, "a b", src())
			Sink(p, "out", s, sink())
		}, ErrInvalidName, "a b"},
		{"no input", func(p *Pipeline) {
			s := Source(p, "src", src())
			Sink(p, "out", s, sink())
			Sink(p, "lonely", Stream[int]{}, sink())
		}, ErrNoInput, "lonely"},
		{"no output", func(p *Pipeline) {
			s := Source(p, "src", src())
			Map(p, "dangling", s, ident)
			Sink(p, "out", s, sink())
		}, ErrNoOutput, "dangling"},
		{"edge from another pipeline", func(p *Pipeline) {
			other := New("other")
			s := Source(other, "foreign", src())
			Sink(p, "out", s, sink())
		}, ErrUnknownEdge, "out"},
		{"duplicate edge", func(p *Pipeline) {
			s := Source(p, "src", src())
			Sink(p, "out", Join(s, s), sink())
		}, ErrDuplicateEdge, "out"},
		{"nil function", func(p *Pipeline) {
			s := Source(p, "src", src())
			m := Map[int, int](p, "nilfn", s, nil)
			Sink(p, "out", m, sink())
		}, ErrNilFunc, "nilfn"},
		{"nil source", func(p *Pipeline) {
			s := Source[int](p, "src", nil)
			Sink(p, "out", s, sink())
		}, ErrNilFunc, "src"},
		{"bad option", func(p *Pipeline) {
			s := Source(p, "src", src())
			Sink(p, "out", s, sink(), vertex.Replicas(3), vertex.Partitions(2))
		}, ErrInvalidOption, "out"},
		{"max in flight below batch", func(p *Pipeline) {
			s := Source(p, "src", src())
			Sink(p, "out", s, sink(), vertex.BatchSize(10), vertex.MaxInFlight(5))
		}, ErrInvalidOption, "out"},
		{"fallback policy without fallback", func(p *Pipeline) {
			s := Source(p, "src", src())
			Sink(p, "out", s, sink(), vertex.Retry(vertex.RetryPolicy{OnExhausted: vertex.ToFallback}))
		}, ErrInvalidOption, "out"},
		{"empty tag condition", func(p *Pipeline) {
			s := Source(p, "src", src())
			Sink(p, "out", s.Where(vertex.AnyTag()), sink())
		}, vertex.ErrInvalidCondition, "out"},
		{"nil sink function", func(p *Pipeline) {
			s := Source(p, "src", src())
			Sink(p, "out", s, vertex.Func[int](nil))
		}, ErrInvalidOption, "out"},
		{"nil sink channel", func(p *Pipeline) {
			s := Source(p, "src", src())
			Sink(p, "out", s, vertex.ToChannel[int](nil))
		}, ErrInvalidOption, "out"},
		{"bad generator option", func(p *Pipeline) {
			s := Source(p, "gen", vertex.Generator(func(i int64) int { return 0 }, vertex.Rate(-1)))
			Sink(p, "out", s, sink())
		}, ErrInvalidOption, "gen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New("v")
			tt.build(p)
			err := p.Run(context.Background())
			if !errors.Is(err, tt.want) {
				t.Fatalf("Run: %v, want %v", err, tt.want)
			}
			var ve *VertexError
			if !errors.As(err, &ve) || ve.Vertex != tt.vertex {
				t.Fatalf("Run: %v, want a *VertexError naming %q", err, tt.vertex)
			}
			if !strings.Contains(err.Error(), `"`+tt.vertex+`"`) {
				t.Fatalf("message %q does not name %q", err, tt.vertex)
			}
		})
	}
}

func TestValidationReportsEveryProblem(t *testing.T) {
	p := New("many")
	s := Source(p, "src", vertex.FromSlice([]int{1}))
	Map(p, "dangling", s, ident)
	Sink(p, "lonely", Stream[int]{}, vertex.Blackhole[int]())
	err := p.Run(context.Background())
	if !errors.Is(err, ErrNoOutput) || !errors.Is(err, ErrNoInput) {
		t.Fatalf("Run: %v, want both ErrNoOutput and ErrNoInput", err)
	}
}

func TestEmptyPipelineAndBadPipelineOptions(t *testing.T) {
	if err := New("empty").Run(context.Background()); !errors.Is(err, ErrNoOutput) {
		t.Fatalf("empty pipeline: %v, want ErrNoOutput", err)
	}
	if err := New("").Run(context.Background()); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("empty name: %v, want ErrInvalidName", err)
	}
	p := New("neg", DrainTimeout(-1))
	Sink(p, "out", Source(p, "src", vertex.FromSlice([]int{1})), vertex.Blackhole[int]())
	if err := p.Run(context.Background()); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("negative DrainTimeout: %v, want ErrInvalidOption", err)
	}
}

func TestRunTwice(t *testing.T) {
	p := New("twice")
	Sink(p, "out", Source(p, "src", vertex.FromSlice([]int{1, 2})), vertex.Blackhole[int]())
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); !errors.Is(err, ErrRunning) {
		t.Fatalf("second Run: %v, want ErrRunning", err)
	}
}
