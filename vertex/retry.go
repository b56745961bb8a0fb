package vertex

import (
	"math"
	"time"
)

// Exhausted says what happens to a message whose retries are used up.
type Exhausted uint8

const (
	// FailPipeline stops the pipeline; Run returns the error.
	FailPipeline Exhausted = iota
	// DropMessage acks the message without output and counts it as dropped.
	DropMessage
	// ToFallback sends the message to the sink vertex's fallback sink
	// (sink vertices only).
	ToFallback
)

// String returns "fail", "drop" or "fallback".
func (e Exhausted) String() string {
	switch e {
	case FailPipeline:
		return "fail"
	case DropMessage:
		return "drop"
	case ToFallback:
		return "fallback"
	}
	return "Exhausted(?)"
}

// UntilStopped is the [RetryPolicy].MaxAttempts that never runs out: a
// failing call is retried until the pipeline stops (its context ends),
// whatever the number of attempts. It is the largest int, so a negative
// MaxAttempts stays an error (a typo is not read as "forever").
const UntilStopped = math.MaxInt

// RetryPolicy says how a failing UDF call, sink write or source read is
// retried: after attempt k fails, the next waits InitialBackoff*2^(k-1),
// capped at MaxBackoff and then moved at random by up to ±Jitter of itself;
// after MaxAttempts attempts OnExhausted applies.
type RetryPolicy struct {
	// MaxAttempts counts the first attempt: 1 means no retry, UntilStopped
	// retries until the pipeline stops. 0 means the default (5).
	MaxAttempts int
	// InitialBackoff is the wait before the first retry (default 10ms).
	InitialBackoff time.Duration
	// MaxBackoff caps the wait (default 1s).
	MaxBackoff time.Duration
	// Jitter, in [0, 1], spreads each wait uniformly over
	// [w*(1-Jitter), w*(1+Jitter)] around the wait w above, so that the
	// replicas and processes that failed together (a server that went
	// away) do not retry together (default 0: exactly w).
	Jitter float64
	// OnExhausted applies when the attempts are used up (default FailPipeline).
	OnExhausted Exhausted
}

// RemoteRetry is the policy for sources and sinks that talk to another
// system over a network (the connectors under vertex/ default to it, see
// [RetryDefaulter]): retry until the pipeline stops, waiting 50ms after the
// first failure, doubling up to 5s, each wait moved by ±20%.
//
// Why these numbers: a blip (a dropped connection, a leader election, a
// server restart) usually heals within a few hundred milliseconds, and
// 50ms, 100ms, 200ms, 400ms retry it with little added latency; an outage of
// minutes reaches the 5s cap after 7 retries (6.35s), from which on a
// replica makes one attempt every 4-6s: a recovered server is noticed
// within about 6s, and a fleet of replicas retrying it adds next to no load.
// ±20% at the cap spreads replicas that failed at the same moment over 2s.
// A pipeline that must fail instead (a batch job with a deadline) sets a
// policy with a MaxAttempts on the vertex: vertex.Retry.
var RemoteRetry = RetryPolicy{
	MaxAttempts:    UntilStopped,
	InitialBackoff: 50 * time.Millisecond,
	MaxBackoff:     5 * time.Second,
	Jitter:         0.2,
}

// RetryDefaulter is implemented by a [Source] or [Sink] that knows how it
// should be retried, typically one that talks to another system
// ([RemoteRetry]). The vertex then runs with DefaultRetry's policy unless
// its options set one (vertex.Retry), which wins, so a policy that gives up
// stays available. For a source the policy applies to Read and Ack
// errors; a source that is no RetryDefaulter fails the pipeline at its
// first Read error unless the vertex sets a policy.
type RetryDefaulter interface {
	DefaultRetry() RetryPolicy
}

// Backoff returns the wait after the given failed attempt (1-based),
// before jitter: the middle of the range Jitter spreads it over.
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	d := p.InitialBackoff
	for i := 1; i < attempt && d > 0 && d < p.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, p.MaxBackoff)
}
