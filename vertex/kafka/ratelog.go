package kafka

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// rateLog logs one kind of failure at most once a second, with the count
// of those it left out since: a broker that is down for a minute gives
// sixty lines, not one per attempt.
type rateLog struct {
	log *zap.Logger
	msg string

	mu      sync.Mutex
	last    time.Time
	skipped int
}

// failure logs err, or counts it when a line was logged less than a
// second ago.
func (r *rateLog) failure(err error, fields ...zap.Field) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if now.Sub(r.last) < time.Second {
		r.skipped++
		return
	}
	r.log.Warn(r.msg, append(fields, zap.Int("not_logged_since_last", r.skipped), zap.Error(err))...)
	r.last, r.skipped = now, 0
}
