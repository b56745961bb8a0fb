package file

import (
	"path/filepath"
	"time"
)

// SourceOption configures [NewSource]. Options are checked by the source's
// Validate, which the pipeline calls before it starts; a bad one is an
// *vertex.OptionError naming it.
type SourceOption func(*sourceConfig)

// sourceConfig is what the options set, checked once by validate.
type sourceConfig struct {
	pattern string
	follow  bool
	poll    time.Duration
	maxLine int
}

// DefaultMaxLineBytes is the longest line the source reads unless
// MaxLineBytes says otherwise.
const DefaultMaxLineBytes = 1 << 20

// Follow makes the source run until the pipeline stops instead of ending
// (io.EOF) once it has read every file: every poll it matches the glob
// again for new files and looks for more lines in the ones it knows, as
// tail -F does. A line without its newline yet is held back until the
// newline arrives. poll must be positive.
func Follow(poll time.Duration) SourceOption {
	return func(c *sourceConfig) { c.follow, c.poll = true, poll }
}

// MaxLineBytes bounds a line (without its newline), default 1 MiB. A
// longer line fails the source with ErrLineTooLong naming the file and the
// line's offset: the source holds a line in memory whole, and a missing
// newline in a huge file would otherwise take it all.
func MaxLineBytes(n int) SourceOption { return func(c *sourceConfig) { c.maxLine = n } }

// validate checks the configuration and the pattern.
func (c *sourceConfig) validate() error {
	if c.pattern == "" {
		return optionError("NewSource", c.pattern, "needs a glob pattern")
	}
	if _, err := filepath.Match(c.pattern, ""); err != nil {
		return optionError("NewSource", c.pattern, "is not a valid glob pattern (path/filepath.Match syntax): "+err.Error())
	}
	if c.follow && c.poll <= 0 {
		return optionError("Follow", c.poll, "must be a positive poll interval")
	}
	if c.maxLine <= 0 {
		return optionError("MaxLineBytes", c.maxLine, "must be positive")
	}
	return nil
}
