package watermark

import "time"

// Clock returns the current time. Every type of this package that looks at
// time takes one, so tests can move time by hand; nil means time.Now.
type Clock func() time.Time

func (c Clock) orNow() Clock {
	if c == nil {
		return time.Now
	}
	return c
}
