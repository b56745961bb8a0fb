package watermark

import (
	"context"
	"sync"
)

// lifecycle is the start-once, stop-once-and-wait state shared by the types
// that own goroutines (Fetcher, Publisher).
type lifecycle struct {
	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// start returns the context for the owned goroutines, or ErrStarted when
// the value was started or stopped before.
func (l *lifecycle) start() (context.Context, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started || l.stopped {
		return nil, ErrStarted
	}
	l.started = true
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	return ctx, nil
}

// spawn runs fn on a goroutine the lifecycle owns, unless stop was called
// already. Under mu, so that stop's Wait never races with the Add.
func (l *lifecycle) spawn(ctx context.Context, fn func(context.Context)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.wg.Go(func() { fn(ctx) })
}

// stop cancels the goroutines and waits for them. It reports whether this
// was the first call; later calls only wait.
func (l *lifecycle) stop() bool {
	l.mu.Lock()
	first := !l.stopped
	l.stopped = true
	cancel := l.cancel
	l.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	l.wg.Wait()
	return first
}
