package forwarder

import (
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Why a message was not delivered as written: the reasons a DropLog
// names (and Stats counts under Dropped or Fallback).
const (
	DropTagged     = "drop tag"          // the function tagged it vertex.DropTag (logged at debug level)
	DropUnrouted   = "no matching edge"  // no outgoing edge's condition matched its tags
	DropFull       = "buffer full"       // an edge with DiscardWhenFull had no room
	DropLate       = "late"              // a reduce found it late and has no late stream
	DropExhausted  = "retries exhausted" // the retry policy gave up with DropMessage
	ToFallbackSink = "fallback"          // a sink sent it to its fallback sink
)

// DropLog rate-limits the lines a vertex logs about messages it drops or
// sends to its fallback sink: per reason, the first, then at most one line
// per Every, each with how many such messages there were since the line
// before ("messages"). A pipeline dropping late data by the thousand per
// second logs one line per Every, and a rare drop is never hidden. One
// DropLog serves every replica of a vertex (Config.Drops); it is safe for
// concurrent use and costs a map lookup under a mutex per drop.
type DropLog struct {
	// Every is the least time between two lines of a reason (0:
	// DefaultFailureLogEvery).
	Every time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu      sync.Mutex
	reasons map[string]*lineLimit
}

// lineLimit is the rate limit of one kind of line: when it was last
// logged, and what was counted since.
type lineLimit struct {
	last  time.Time // zero: never logged
	count int64
}

// allow counts n more and reports whether a line is due (none was logged
// within every); when it is, it returns the count since the last line,
// these n included, and starts counting again.
func (l *lineLimit) allow(now time.Time, every time.Duration, n int64) (count int64, ok bool) {
	l.count += n
	if !l.last.IsZero() && now.Sub(l.last) < every {
		return 0, false
	}
	count, l.count, l.last = l.count, 0, now
	return count, true
}

// record counts n messages not delivered for reason and logs a line on
// log (nil: none) when one is due. fields say more (the first message's
// id, the cause).
func (l *DropLog) record(log *zap.Logger, reason string, n int64, fields ...zap.Field) {
	if l == nil || log == nil || n <= 0 {
		return
	}
	level := dropLevel(reason)
	if !log.Core().Enabled(level) {
		return
	}
	every := l.Every
	if every <= 0 {
		every = DefaultFailureLogEvery
	}
	now := time.Now()
	if l.Now != nil {
		now = l.Now()
	}
	l.mu.Lock()
	if l.reasons == nil {
		l.reasons = map[string]*lineLimit{}
	}
	lim := l.reasons[reason]
	if lim == nil {
		lim = &lineLimit{}
		l.reasons[reason] = lim
	}
	count, ok := lim.allow(now, every, n)
	l.mu.Unlock()
	if ok {
		dropLine(log, level, reason, count, fields)
	}
}

// Flush logs, for each reason, the messages counted since its last line,
// so that the drops after the last line of a run are not left unsaid. The
// pipeline calls it once per vertex at the end of Run.
func (l *DropLog) Flush(log *zap.Logger, fields ...zap.Field) {
	if l == nil || log == nil {
		return
	}
	l.mu.Lock()
	type pending struct {
		reason string
		count  int64
	}
	var due []pending
	for reason, lim := range l.reasons {
		if lim.count > 0 {
			due = append(due, pending{reason, lim.count})
			lim.count = 0
		}
	}
	l.mu.Unlock()
	slices.SortFunc(due, func(a, b pending) int { return strings.Compare(a.reason, b.reason) })
	for _, d := range due {
		dropLine(log, dropLevel(d.reason), d.reason, d.count, fields)
	}
}

// dropLevel is the level of the lines about reason: a drop the function
// asked for is debug, late data (which streams have) info, the rest warn.
func dropLevel(reason string) zapcore.Level {
	switch reason {
	case DropTagged:
		return zapcore.DebugLevel
	case DropLate:
		return zapcore.InfoLevel
	}
	return zapcore.WarnLevel
}

// dropLine logs count messages not delivered for reason.
func dropLine(log *zap.Logger, level zapcore.Level, reason string, count int64, fields []zap.Field) {
	msg := "messages dropped"
	if reason == ToFallbackSink {
		msg = "messages sent to the fallback sink"
	}
	if ce := log.Check(level, msg); ce != nil {
		ce.Write(append(fields, zap.String("reason", reason), zap.Int64("messages", count))...)
	}
}
