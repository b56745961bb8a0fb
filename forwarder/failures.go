package forwarder

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// DefaultFailureLogEvery is how often a vertex that keeps failing logs a
// line at most (FailureLog.Every's default).
const DefaultFailureLogEvery = 5 * time.Second

// FailureLog rate-limits the lines a vertex logs about failures it retries:
// a sink retrying its writes until a server comes back would otherwise log
// every attempt of every worker of every replica. It logs the first
// failure, then at most one failure line per Every, each saying how many
// failures it did not log since the previous one ("suppressed"), and when
// an outage whose failures it logged ends (a retry succeeded), one line
// saying so with the outage's failures and duration. A flapping server
// therefore costs at most two lines per Every. One FailureLog serves every
// replica of a vertex (Config.Failures); it is safe for concurrent use and
// costs nothing while nothing fails.
type FailureLog struct {
	// Every is the least time between two failure lines (0:
	// DefaultFailureLogEvery).
	Every time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu       sync.Mutex
	lines    lineLimit // of the failure lines
	outage   bool      // failing, and a line of this outage was logged
	since    time.Time // first failure of the outage
	failures int64     // failures of the outage
}

func (l *FailureLog) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// failed records one failure that will be retried, and logs it on log (nil
// logs nothing) unless a line was logged less than Every ago. msg says
// what failed; fields say how (the cause, the attempt, the message).
func (l *FailureLog) failed(log *zap.Logger, msg string, fields ...zap.Field) {
	if l == nil {
		return
	}
	l.mu.Lock()
	now := l.now()
	every := l.Every
	if every <= 0 {
		every = DefaultFailureLogEvery
	}
	if !l.outage && l.failures == 0 {
		l.since = now
	}
	l.failures++
	count, ok := l.lines.allow(now, every, 1)
	if !ok {
		l.mu.Unlock()
		return
	}
	l.outage = true
	l.mu.Unlock()
	if log != nil {
		// The failures since the last line, but for this one.
		log.Warn(msg, append(fields, zap.Int64("suppressed", count-1))...)
	}
}

// Flush logs, when failures have not been followed by a success and the
// rate limit held some of them back, how many were not logged, so that
// the failures of a run's last seconds are not left unsaid. An outage a
// retry ended has said so already ("... succeeded after failures"). The
// pipeline calls it once per vertex at the end of Run.
func (l *FailureLog) Flush(log *zap.Logger, fields ...zap.Field) {
	if l == nil || log == nil {
		return
	}
	l.mu.Lock()
	held := min(l.lines.count, l.failures) // the count may hold failures of an outage that ended
	failures, since := l.failures, l.since
	l.lines.count = 0
	now := l.now()
	l.mu.Unlock()
	if held == 0 {
		return
	}
	log.Warn("failures not logged before the run ended", append(fields, zap.Int64("suppressed", held),
		zap.Int64("failures", failures), zap.Duration("failing for", now.Sub(since)))...)
}

// recovered records that a call succeeded after failures (a retry, or the
// read after failed reads); it logs the end of the outage when one of its
// failures was logged.
func (l *FailureLog) recovered(log *zap.Logger, msg string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	outage, failures, since := l.outage, l.failures, l.since
	l.outage, l.failures = false, 0
	now := l.now()
	l.mu.Unlock()
	if outage && log != nil {
		log.Info(msg, zap.Int64("failures", failures), zap.Duration("after", now.Sub(since)))
	}
}
