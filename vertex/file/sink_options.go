package file

import (
	"strings"
)

// SinkOption configures [NewSink]. Options are checked by the sink's
// Validate, which the pipeline calls before it starts; a bad one is an
// *vertex.OptionError naming it.
type SinkOption func(*sinkConfig)

// sinkConfig is what the options set, checked once by validate.
type sinkConfig struct {
	dir            string
	maxBytes       int64
	maxLines       int64
	prefix, suffix string
}

// DefaultRotateBytes is the size at which the sink starts a new file
// unless RotateBytes says otherwise.
const DefaultRotateBytes = 64 << 20

// openSuffix ends the name of the file being written; it is renamed to
// its final name once complete.
const openSuffix = ".open"

// RotateBytes starts a new file before a line would take the current one
// past n bytes (default 64 MiB); a line longer than n gets a file of its
// own. 0 rotates by RotateLines alone.
func RotateBytes(n int64) SinkOption { return func(c *sinkConfig) { c.maxBytes = n } }

// RotateLines starts a new file once the current one has n lines (default
// 0: no limit).
func RotateLines(n int64) SinkOption { return func(c *sinkConfig) { c.maxLines = n } }

// Names sets how files are named: prefix, ten digits of sequence number,
// suffix (default "part-" and ".txt": part-0000000001.txt). The prefix
// must not contain a path separator.
func Names(prefix, suffix string) SinkOption {
	return func(c *sinkConfig) { c.prefix, c.suffix = prefix, suffix }
}

// validate checks the configuration.
func (c *sinkConfig) validate() error {
	switch {
	case c.dir == "":
		return optionError("NewSink", c.dir, "needs a directory")
	case c.maxBytes < 0:
		return optionError("RotateBytes", c.maxBytes, "must be 0 (no limit) or positive")
	case c.maxLines < 0:
		return optionError("RotateLines", c.maxLines, "must be 0 (no limit) or positive")
	case c.maxBytes == 0 && c.maxLines == 0:
		return optionError("RotateBytes", c.maxBytes, "and RotateLines cannot both be 0: the sink would write one file forever")
	case strings.ContainsAny(c.prefix+c.suffix, `/\`):
		return optionError("Names", c.prefix+"…"+c.suffix, "must not contain a path separator")
	case strings.HasSuffix(c.suffix, openSuffix):
		return optionError("Names", c.suffix, "must not end in "+openSuffix+", the suffix of the file being written")
	}
	return nil
}
