package natsmsg

import (
	"context"
	"time"
)

// Queue carries messages from a subscription to a source's Read: a
// bounded channel, so what the client holds for a source that is not
// read stays bounded. The JetStream source's consume callback Puts into
// it; the NATS core source hands C to nats.go as a channel subscription.
type Queue[M any] struct {
	C    chan M
	done chan struct{}
}

// NewQueue makes a queue of capacity n.
func NewQueue[M any](n int) *Queue[M] {
	return &Queue[M]{C: make(chan M, n), done: make(chan struct{})}
}

// Put puts m in the queue, waiting for room, and reports false when the
// queue was closed first.
func (q *Queue[M]) Put(m M) bool {
	select {
	case <-q.done:
		return false
	default:
	}
	select {
	case q.C <- m:
		return true
	case <-q.done:
		return false
	}
}

// Close wakes the Puts waiting and makes later ones fail; Take returns
// what is queued until it is empty. Call it once.
func (q *Queue[M]) Close() { close(q.done) }

// Closed is closed by Close.
func (q *Queue[M]) Closed() <-chan struct{} { return q.done }

// Take waits up to wait for a first message, then takes what else is
// queued without waiting, up to len(buf), into buf; it returns how many.
// It returns 0 and ctx's error when ctx ends first, 0 and nil when wait
// passed or the queue was closed with nothing queued.
func (q *Queue[M]) Take(ctx context.Context, wait time.Duration, buf []M) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	select {
	case buf[0] = <-q.C:
	default:
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case buf[0] = <-q.C:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-timer.C:
			return 0, nil
		case <-q.done:
			return 0, nil
		}
	}
	n := 1
	for n < len(buf) {
		select {
		case buf[n] = <-q.C:
			n++
		default:
			return n, nil
		}
	}
	return n, nil
}
