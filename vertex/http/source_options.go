package http

import "time"

// SourceOption configures [NewSource]. Options are checked by the source's
// Validate, which the pipeline calls before it starts; a bad one is an
// *vertex.OptionError naming it.
type SourceOption func(*sourceConfig)

// sourceConfig is what the options set, checked once by validate.
type sourceConfig struct {
	capacity   int
	retryAfter time.Duration
	maxBody    int64
	ackTimeout time.Duration
	addr       string
}

// The defaults of the source's options.
const (
	DefaultCapacity     = 10_000
	DefaultRetryAfter   = time.Second
	DefaultMaxBodyBytes = 8 << 20
	DefaultAckTimeout   = 30 * time.Second
)

// Capacity bounds the records the source holds: accepted from requests
// and not yet acknowledged by the pipeline (default 10,000). A request
// whose records do not fit is answered 503 with Retry-After; one with more
// records than the capacity, 413.
func Capacity(n int) SourceOption { return func(c *sourceConfig) { c.capacity = n } }

// RetryAfter is the wait a 503 asks for, in its Retry-After header, in
// whole seconds rounded up (default 1s).
func RetryAfter(d time.Duration) SourceOption { return func(c *sourceConfig) { c.retryAfter = d } }

// MaxBodyBytes bounds a request's body (default 8 MiB); a longer one is
// answered 413.
func MaxBodyBytes(n int64) SourceOption { return func(c *sourceConfig) { c.maxBody = n } }

// AckTimeout bounds how long a request waits for the pipeline to
// acknowledge its records (default 30s); then it is answered 503, and
// what it held may still be delivered (a client that retries gets it at
// least once).
func AckTimeout(d time.Duration) SourceOption { return func(c *sourceConfig) { c.ackTimeout = d } }

// Listen makes the source serve on addr itself (host:port, as net.Listen
// takes it) from the pipeline's first read until it stops, besides being
// an http.Handler a server of the caller's can mount. Addr tells where it
// listens.
func Listen(addr string) SourceOption { return func(c *sourceConfig) { c.addr = addr } }

// validate checks the configuration.
func (c *sourceConfig) validate() error {
	switch {
	case c.capacity <= 0:
		return optionError("Capacity", c.capacity, "must be positive")
	case c.retryAfter <= 0:
		return optionError("RetryAfter", c.retryAfter, "must be positive")
	case c.maxBody <= 0:
		return optionError("MaxBodyBytes", c.maxBody, "must be positive")
	case c.ackTimeout <= 0:
		return optionError("AckTimeout", c.ackTimeout, "must be positive")
	}
	return nil
}
