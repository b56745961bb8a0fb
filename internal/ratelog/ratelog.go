// Package ratelog logs a connector's repeated failures at a rate limit:
// vertex/kafka, vertex/nats and vertex/jetstream share it.
package ratelog

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// Log logs one kind of failure at most once a second, with the count of
// those it left out since: a server that is down for a minute gives sixty
// lines, not one per attempt or per dropped message. Its zero value with
// Log and Msg set is ready to use.
type Log struct {
	Log *zap.Logger
	Msg string

	mu      sync.Mutex
	last    time.Time
	skipped int
}

// Failure logs err, or counts it when a line was logged less than a
// second ago.
func (r *Log) Failure(err error, fields ...zap.Field) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if now.Sub(r.last) < time.Second {
		r.skipped++
		return
	}
	r.Log.Warn(r.Msg, append(fields, zap.Int("not_logged_since_last", r.skipped), zap.Error(err))...)
	r.last, r.skipped = now, 0
}
