package fsutil

import "fmt"

// Corruption locates damage in stored data: the part every corruption
// error of the stores shares (isb/mmap's and wal's CorruptError embed it).
// Each store's error type adds what is its own (an entry index, a cause)
// and the sentinel it matches with errors.Is.
type Corruption struct {
	File   string // the damaged file, or the directory
	Offset int64  // byte position in File, -1 when not known or the whole file is concerned
	Reason string // what is wrong, for a person
}

// Corruptf returns the Corruption of file at byte off (-1: none), its
// reason formatted.
func Corruptf(file string, off int64, format string, args ...any) Corruption {
	return Corruption{File: file, Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// FormatCorruption formats c for an error of the package pkg:
// "{pkg}: corrupt {File}[ at {at}][ at byte N | (byte N)]: {Reason}". at
// names a position finer than the file (a wal's "entry 12"), "" when
// there is none; the byte position follows it in parentheses, or stands
// alone as "at byte N". It is a function, not a method, so that the
// exported error types embedding Corruption gain no method from it.
func FormatCorruption(pkg string, c Corruption, at string) string {
	s := pkg + ": corrupt " + c.File
	if at != "" {
		s += " at " + at
	}
	switch {
	case c.Offset < 0:
	case at != "":
		s += fmt.Sprintf(" (byte %d)", c.Offset)
	default:
		s += fmt.Sprintf(" at byte %d", c.Offset)
	}
	return s + ": " + c.Reason
}
