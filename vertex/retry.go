package vertex

import "time"

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

// RetryPolicy says how a failing UDF call or sink write is retried: after
// attempt k fails, the next waits InitialBackoff*2^(k-1), capped at
// MaxBackoff; after MaxAttempts attempts OnExhausted applies.
type RetryPolicy struct {
	// MaxAttempts counts the first attempt: 1 means no retry. 0 means the
	// default (5).
	MaxAttempts int
	// InitialBackoff is the wait before the first retry (default 10ms).
	InitialBackoff time.Duration
	// MaxBackoff caps the wait (default 1s).
	MaxBackoff time.Duration
	// OnExhausted applies when the attempts are used up (default FailPipeline).
	OnExhausted Exhausted
}

// DefaultRetryPolicy is the policy of a vertex without [Retry].
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 5, InitialBackoff: 10 * time.Millisecond, MaxBackoff: time.Second}

// Backoff returns the wait after the given failed attempt (1-based).
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	d := p.InitialBackoff
	for i := 1; i < attempt && d < p.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, p.MaxBackoff)
}
