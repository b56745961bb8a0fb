package forwarder

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// Jitter spreads a wait over [w*(1-j), w*(1+j)]: the ends of r's range
// give the ends, and every drawn wait lies inside.
func TestJitterBounds(t *testing.T) {
	d := time.Second
	if got := jittered(d, 0.2, 0); got != 800*time.Millisecond {
		t.Errorf("jittered(1s, 0.2, 0) = %v; want 800ms", got)
	}
	if got := jittered(d, 0.2, 0.5); got != d {
		t.Errorf("jittered(1s, 0.2, 0.5) = %v; want 1s", got)
	}
	if got := jittered(d, 0.2, math.Nextafter(1, 0)); got > 1200*time.Millisecond || got < 1199*time.Millisecond {
		t.Errorf("jittered(1s, 0.2, 1-) = %v; want 1.2s or just under", got)
	}
	if got := jittered(d, 0, 0.9); got != d {
		t.Errorf("jittered without jitter = %v; want 1s", got)
	}
	p := vertex.RemoteRetry
	var lo, hi time.Duration = time.Hour, 0
	for range 10000 {
		w := backoff(p, 20) // at the cap
		lo, hi = min(lo, w), max(hi, w)
	}
	if lo < 4*time.Second || hi > 6*time.Second {
		t.Errorf("RemoteRetry waits at the cap in [%v, %v]; want inside [4s, 6s]", lo, hi)
	}
	// 10000 uniform draws: the extremes lie within 1% of the range's ends.
	if lo > 4020*time.Millisecond || hi < 5980*time.Millisecond {
		t.Errorf("RemoteRetry waits at the cap in [%v, %v]; want them spread over [4s, 6s]", lo, hi)
	}
}

// RemoteRetry's waits before jitter: 50ms doubling to the 5s cap, and
// never running out; an attempt count near UntilStopped costs no loop.
func TestRemoteRetryBackoff(t *testing.T) {
	p := vertex.RemoteRetry
	want := []time.Duration{50, 100, 200, 400, 800, 1600, 3200, 5000, 5000}
	for i, w := range want {
		if got := p.Backoff(i + 1); got != w*time.Millisecond {
			t.Errorf("Backoff(%d) = %v; want %v", i+1, got, w*time.Millisecond)
		}
	}
	if got := p.Backoff(vertex.UntilStopped - 1); got != 5*time.Second {
		t.Errorf("Backoff(MaxInt-1) = %v; want 5s", got)
	}
	if got := (vertex.RetryPolicy{}).Backoff(vertex.UntilStopped - 1); got != 0 {
		t.Errorf("zero policy Backoff(MaxInt-1) = %v; want 0 (and at once)", got)
	}
	c, err := NewOptions(vertex.Retry(p))
	if err != nil || c.Retry != p {
		t.Fatalf("NewOptions(Retry(RemoteRetry)) = %+v, %v; want it kept", c.Retry, err)
	}
}

// Jitter outside [0, 1] is refused, naming the option.
func TestJitterValidated(t *testing.T) {
	for _, j := range []float64{-0.1, 1.5, math.NaN(), math.Inf(1)} {
		_, err := NewOptions(vertex.Retry(vertex.RetryPolicy{Jitter: j}))
		var oe *isb.OptionError
		if !errors.As(err, &oe) || oe.Option != "Retry.Jitter" {
			t.Errorf("Jitter %v: %v; want an *isb.OptionError naming Retry.Jitter", j, err)
		}
	}
	for _, j := range []float64{0, 0.5, 1} {
		if _, err := NewOptions(vertex.Retry(vertex.RetryPolicy{Jitter: j})); err != nil {
			t.Errorf("Jitter %v refused: %v", j, err)
		}
	}
}

type defaulter struct{ p vertex.RetryPolicy }

func (d defaulter) DefaultRetry() vertex.RetryPolicy { return d.p }

// A RetryDefaulter's policy is the vertex's unless the options set one;
// zero fields take the defaults, and a bad one is refused as if given.
func TestNewVertexOptionsDefaulter(t *testing.T) {
	c, err := NewVertexOptions(defaulter{vertex.RemoteRetry})
	if err != nil || c.Retry != vertex.RemoteRetry {
		t.Fatalf("defaulter alone: %+v, %v; want RemoteRetry", c.Retry, err)
	}
	giveUp := vertex.RetryPolicy{MaxAttempts: 3}
	c, err = NewVertexOptions(defaulter{vertex.RemoteRetry}, vertex.Retry(giveUp))
	if err != nil || c.Retry != retryWithDefaults(giveUp) {
		t.Fatalf("defaulter with Retry: %+v, %v; want the given policy with defaults", c.Retry, err)
	}
	c, err = NewVertexOptions(defaulter{vertex.RetryPolicy{MaxAttempts: vertex.UntilStopped}})
	if err != nil || c.Retry.InitialBackoff != defaultRetry.InitialBackoff || c.Retry.MaxAttempts != vertex.UntilStopped {
		t.Fatalf("partial default: %+v, %v", c.Retry, err)
	}
	_, err = NewVertexOptions(defaulter{vertex.RetryPolicy{Jitter: 2}})
	var oe *isb.OptionError
	if !errors.As(err, &oe) || oe.Option != "Retry.Jitter" {
		t.Fatalf("bad default: %v; want Retry.Jitter refused", err)
	}
	c, err = NewVertexOptions("not a defaulter")
	if err != nil || c.Retry != defaultRetry {
		t.Fatalf("no defaulter: %+v, %v; want the default", c.Retry, err)
	}
}
