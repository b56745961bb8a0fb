package natsmsg

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// RateLog logs one kind of failure at most once a second, with the count
// of those it left out since: a server that is down for a minute gives
// sixty lines, not one per attempt or per dropped message.
type RateLog struct {
	Log *zap.Logger
	Msg string

	mu      sync.Mutex
	last    time.Time
	skipped int
}

// Failure logs err, or counts it when a line was logged less than a
// second ago.
func (r *RateLog) Failure(err error, fields ...zap.Field) {
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
