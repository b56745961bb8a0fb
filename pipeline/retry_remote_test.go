package pipeline

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runnel-dev/runnel/vertex"
)

// fastRemote is RemoteRetry with waits of about a millisecond, so that a
// test makes many attempts quickly.
var fastRemote = vertex.RetryPolicy{MaxAttempts: vertex.UntilStopped, InitialBackoff: time.Millisecond,
	MaxBackoff: 2 * time.Millisecond, Jitter: 0.5}

// refused is the error a sink gets from a server that is down.
var refused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

// flakySink fails its first failures Writes with refused and then
// delivers; it is a vertex.RetryDefaulter with policy.
type flakySink struct {
	policy   vertex.RetryPolicy
	failures int // Writes to fail; -1: all

	mu       sync.Mutex
	calls    int
	retried  int64 // messages of the failed Writes
	got      map[string]int
	received []int
}

func (s *flakySink) DefaultRetry() vertex.RetryPolicy { return s.policy }

func (s *flakySink) Write(_ context.Context, msgs []vertex.Message[int]) ([]vertex.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.failures < 0 || s.calls <= s.failures {
		s.retried += int64(len(msgs))
		return nil, refused
	}
	if s.got == nil {
		s.got = map[string]int{}
	}
	for _, m := range msgs {
		s.got[m.ID]++
		s.received = append(s.received, m.Value)
	}
	return nil, nil
}

// A sink that is a RetryDefaulter with a policy that never runs out keeps
// retrying "connection refused" far past the default 5 attempts, then
// delivers everything once; the vertex's stats count every retry.
func TestRetryDefaulterSinkRetriesUntilItWorks(t *testing.T) {
	const n, failures = 100, 20
	p := New("remote")
	sink := &flakySink{policy: fastRemote, failures: failures}
	Sink(p, "out", Source(p, "src", vertex.FromSlice(ints(n))), vertex.Sink[int](sink), vertex.Concurrency(1))
	runWithin(t, p, 30*time.Second)
	if sink.calls <= failures {
		t.Fatalf("%d Writes; want more than the %d failing ones", sink.calls, failures)
	}
	slices.Sort(sink.received)
	if !slices.Equal(sink.received, ints(n)) {
		t.Errorf("received %d values; want 0..%d once each", len(sink.received), n-1)
	}
	for id, c := range sink.got {
		if c != 1 {
			t.Errorf("message %s delivered %d times", id, c)
		}
	}
	if s := stat(t, p, "out"); s.Retried != sink.retried || s.Written != n || s.Acked != n {
		t.Errorf("out: retried %d written %d acked %d; want %d (the messages of the %d failed Writes), %d, %d",
			s.Retried, s.Written, s.Acked, sink.retried, failures, n, n)
	}
}

// A policy that gives up, set on the vertex, wins over the sink's default:
// exactly MaxAttempts Writes, then Run fails with the cause reachable.
func TestGivingUpPolicyOverridesTheDefault(t *testing.T) {
	p := New("giveup")
	sink := &flakySink{policy: fastRemote, failures: -1}
	Sink(p, "out", Source(p, "src", vertex.FromSlice([]int{7})), vertex.Sink[int](sink),
		vertex.Retry(vertex.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Microsecond}))
	err := p.Run(context.Background())
	var pe *vertex.ProcessError
	var oe *net.OpError
	if !errors.Is(err, vertex.ErrRetriesExhausted) || !errors.As(err, &pe) || !errors.As(err, &oe) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Run = %v; want a *vertex.ProcessError of exhausted retries wrapping the *net.OpError", err)
	}
	if pe.Vertex != "out" || pe.MessageID != "0" || pe.Attempts != 3 || sink.calls != 3 {
		t.Errorf("vertex %q message %q attempts %d, %d Writes; want out, 0, 3, 3", pe.Vertex, pe.MessageID, pe.Attempts, sink.calls)
	}
}

// A policy that never runs out retries until the pipeline stops: a
// cancelled run drains for DrainTimeout and then stops the retries.
func TestUntilStoppedRetriesUntilTheDrainEnds(t *testing.T) {
	p := New("forever", DrainTimeout(50*time.Millisecond))
	sink := &flakySink{policy: fastRemote, failures: -1}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	Sink(p, "out", Source(p, "src", vertex.FromSlice([]int{1})), vertex.SinkFunc[int](func(ctx context.Context, msgs []vertex.Message[int]) ([]vertex.Result, error) {
		res, err := sink.Write(ctx, msgs)
		if sink.calls == 50 {
			cancel() // ten times the attempts of the default policy
		}
		return res, err
	}), vertex.Retry(fastRemote), vertex.Concurrency(1))
	err := p.Run(ctx)
	if !errors.Is(err, ErrDrainTimeout) || errors.Is(err, vertex.ErrRetriesExhausted) {
		t.Fatalf("Run = %v; want ErrDrainTimeout, not exhausted retries", err)
	}
	if s := stat(t, p, "out"); sink.calls < 50 || s.Retried < 49 || s.Retried > int64(sink.calls) || s.Acked != 0 {
		t.Errorf("%d Writes, %d retried, %d acked; want at least 50 Writes, a retry after each but perhaps the last, none acked", sink.calls, s.Retried, s.Acked)
	}
}

// quotaError is a cause a sink gives for one message.
type quotaError struct{ id string }

func (e *quotaError) Error() string { return "quota exceeded for " + e.id }

// A sink that answers ResultRetry for one message with a *WriteError
// saying why: once the retries are used up, Run's error is that cause
// (errors.As finds it), the ProcessError names the message, and the log has
// the cause on every failure line and on the failing line.
func TestWriteErrorCauseReachesRunAndLog(t *testing.T) {
	for _, withResults := range []bool{true, false} {
		name := "results"
		if !withResults {
			name = "causes only"
		}
		t.Run(name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			p := New("cause", WithLogger(zap.New(core)))
			var mu sync.Mutex
			calls := map[string]int{}
			sink := vertex.SinkFunc[int](func(_ context.Context, msgs []vertex.Message[int]) ([]vertex.Result, error) {
				mu.Lock()
				defer mu.Unlock()
				we := &vertex.WriteError{Causes: make([]error, len(msgs))}
				var res []vertex.Result
				if withResults {
					res = make([]vertex.Result, len(msgs))
				}
				for i, m := range msgs {
					calls[m.ID]++
					if m.Value == 2 {
						we.Causes[i] = &quotaError{id: m.ID}
						if res != nil {
							res[i] = vertex.ResultRetry
						}
					}
				}
				return res, we
			})
			Sink(p, "out", Source(p, "src", vertex.FromSlice(ints(5))), sink, vertex.Concurrency(1),
				vertex.Retry(vertex.RetryPolicy{MaxAttempts: 4, InitialBackoff: time.Microsecond}))
			err := p.Run(context.Background())
			var pe *vertex.ProcessError
			var qe *quotaError
			if !errors.Is(err, vertex.ErrRetriesExhausted) || !errors.As(err, &pe) || !errors.As(err, &qe) || qe.id != "2" {
				t.Fatalf("Run = %v; want exhausted retries with the *quotaError of message 2", err)
			}
			if pe.MessageID != "2" || pe.Attempts != 4 {
				t.Errorf("message %q attempts %d; want 2, 4", pe.MessageID, pe.Attempts)
			}
			if calls["2"] != 4 || calls["0"] != 1 || calls["4"] != 1 {
				t.Errorf("Writes per message %v; want 2 four times, the others once", calls)
			}
			if s := stat(t, p, "out"); s.Retried != 3 || s.Written != 4 {
				t.Errorf("retried %d written %d; want 3, 4", s.Retried, s.Written)
			}
			failed := logs.FilterMessage("sink write failed, retrying").All()
			if len(failed) == 0 || failed[0].ContextMap()["error"] != "quota exceeded for 2" || failed[0].ContextMap()["id"] != "2" {
				t.Errorf("failure lines %v; want the first with the cause and the message", failed)
			}
			var lines, suppressed int64
			for _, e := range failed {
				lines++
				suppressed += e.ContextMap()["suppressed"].(int64)
			}
			// The failures after the last line are counted in the next line,
			// which never comes: the run failed.
			if lines+suppressed > 3 {
				t.Errorf("%d failure lines + %d suppressed; want at most the 3 failures that were retried", lines, suppressed)
			}
			failing := logs.FilterMessage("pipeline failing").All()
			if len(failing) != 1 || !errors.As(fieldError(failing[0]), &qe) {
				t.Errorf("pipeline failing lines %v; want one carrying the cause", failing)
			}
		})
	}
}

// A sink that answers ResultRetry without a cause still says so.
func TestResultRetryWithoutCause(t *testing.T) {
	p := New("nocause")
	Sink(p, "out", Source(p, "src", vertex.FromSlice([]int{1})), vertex.SinkFunc[int](func(_ context.Context, msgs []vertex.Message[int]) ([]vertex.Result, error) {
		return []vertex.Result{vertex.ResultRetry}, nil
	}), vertex.Retry(vertex.RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Microsecond}))
	err := p.Run(context.Background())
	if !errors.Is(err, vertex.ErrRetriesExhausted) || err.Error() != `vertex "out" replica 0 message "0" after 2 attempts: vertex: retries exhausted: sink answered retry` {
		t.Fatalf("Run = %v", err)
	}
}

// More causes than messages is a programming error: the replica fails.
func TestWriteErrorTooManyCauses(t *testing.T) {
	p := New("causes")
	Sink(p, "out", Source(p, "src", vertex.FromSlice([]int{1})), vertex.SinkFunc[int](func(_ context.Context, msgs []vertex.Message[int]) ([]vertex.Result, error) {
		return nil, &vertex.WriteError{Causes: make([]error, len(msgs)+1)}
	}))
	if err := p.Run(context.Background()); !errors.Is(err, vertex.ErrResultCount) {
		t.Fatalf("Run = %v; want ErrResultCount", err)
	}
}

// flakySource fails its first failures Reads with a reset connection,
// then returns its values and io.EOF; failures -1 fails every Read.
type flakySource struct {
	policy   vertex.RetryPolicy
	defaults bool // is a RetryDefaulter
	failures int
	values   []int

	mu    sync.Mutex
	reads int
	done  bool
}

func (s *flakySource) Read(ctx context.Context, max int) ([]vertex.Message[int], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.failures < 0 || s.reads <= s.failures {
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	if s.done {
		return nil, io.EOF
	}
	s.done = true
	out := make([]vertex.Message[int], len(s.values))
	for i, v := range s.values {
		out[i] = vertex.Message[int]{ID: string(rune('a' + i)), Value: v}
	}
	return out, nil
}

type defaultingSource struct{ *flakySource }

func (s defaultingSource) DefaultRetry() vertex.RetryPolicy { return s.policy }

// A source that is a RetryDefaulter has its Read errors retried under its
// policy; the vertex's stats count them and the log has them rate-limited.
func TestRetryDefaulterSourceRetriesReads(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	p := New("remote-src", WithLogger(zap.New(core)))
	src := &flakySource{policy: fastRemote, failures: 7, values: ints(50)}
	out := newCollector[int]()
	Sink(p, "out", Source(p, "src", vertex.Source[int](defaultingSource{src})), out)
	runWithin(t, p, 30*time.Second)
	if got := sortedValues(out); !slices.Equal(got, ints(50)) {
		t.Errorf("got %d values; want 0..49", len(got))
	}
	if s := stat(t, p, "src"); s.Retried != 7 || s.Read != 50 || src.reads != 9 {
		t.Errorf("src: retried %d read %d, %d Reads; want 7, 50, 9 (7 failed, the data, EOF)", s.Retried, s.Read, src.reads)
	}
	var lines, suppressed int64
	for _, e := range logs.FilterMessage("source read failed, retrying").All() {
		lines++
		suppressed += e.ContextMap()["suppressed"].(int64)
		if e.ContextMap()["vertex"] != "src" {
			t.Errorf("failure line without its vertex: %v", e.ContextMap())
		}
	}
	if lines < 1 || lines+suppressed > 7 {
		t.Errorf("%d failure lines + %d suppressed; want at least one line, at most 7 failures", lines, suppressed)
	}
	rec := logs.FilterMessage("source read succeeded after failures").All()
	if len(rec) != 1 || rec[0].ContextMap()["failures"] != int64(7) {
		t.Errorf("recovery lines %v; want one counting 7 failures", rec)
	}
}

// A giving-up policy on a defaulting source fails after exactly
// MaxAttempts Reads; a source that is no RetryDefaulter fails at its first
// Read error, as before, unless the vertex sets a policy.
func TestSourceReadRetryPolicies(t *testing.T) {
	t.Run("giving up", func(t *testing.T) {
		p := New("src-giveup")
		src := &flakySource{policy: fastRemote, failures: -1}
		Sink(p, "out", Source(p, "src", vertex.Source[int](defaultingSource{src}), vertex.Retry(vertex.RetryPolicy{MaxAttempts: 4, InitialBackoff: time.Microsecond})), vertex.Blackhole[int]())
		err := p.Run(context.Background())
		var pe *vertex.ProcessError
		if !errors.Is(err, vertex.ErrRetriesExhausted) || !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &pe) || pe.Attempts != 4 || src.reads != 4 {
			t.Fatalf("Run = %v after %d Reads; want exhausted retries after 4 attempts, wrapping ECONNRESET", err, src.reads)
		}
	})
	t.Run("no defaulter", func(t *testing.T) {
		p := New("src-plain")
		src := &flakySource{failures: -1}
		Sink(p, "out", Source(p, "src", vertex.Source[int](src)), vertex.Blackhole[int]())
		err := p.Run(context.Background())
		if !errors.Is(err, syscall.ECONNRESET) || errors.Is(err, vertex.ErrRetriesExhausted) || src.reads != 1 {
			t.Fatalf("Run = %v after %d Reads; want the read error at once, after 1 Read", err, src.reads)
		}
	})
	t.Run("policy on a plain source", func(t *testing.T) {
		p := New("src-policy")
		src := &flakySource{failures: 2, values: []int{1, 2}}
		out := newCollector[int]()
		Sink(p, "out", Source(p, "src", vertex.Source[int](src), vertex.Retry(vertex.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Microsecond})), out)
		runWithin(t, p, 30*time.Second)
		if got := sortedValues(out); !slices.Equal(got, []int{1, 2}) || stat(t, p, "src").Retried != 2 {
			t.Fatalf("got %v, retried %d; want [1 2] after 2 retries", got, stat(t, p, "src").Retried)
		}
	})
	t.Run("drop refused", func(t *testing.T) {
		p := New("src-drop")
		Sink(p, "out", Source(p, "src", vertex.FromSlice([]int{1}), vertex.Retry(vertex.RetryPolicy{OnExhausted: vertex.DropMessage})), vertex.Blackhole[int]())
		err := p.Run(context.Background())
		want := `pipeline: vertex "src": pipeline: option Retry.OnExhausted: a source's failed read has no message to drop; a source vertex takes FailPipeline (got drop)`
		if !errors.Is(err, ErrInvalidOption) || err.Error() != want {
			t.Fatalf("Run = %v; want %s", err, want)
		}
	})
}

// fieldError is the error of a log line's zap.Error field (nil if none).
func fieldError(e observer.LoggedEntry) error {
	for _, f := range e.Context {
		if f.Key == "error" {
			if err, ok := f.Interface.(error); ok {
				return err
			}
		}
	}
	return nil
}
