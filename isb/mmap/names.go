package mmap

import (
	"fmt"
	"strconv"
	"strings"
)

// Names of files and directories: partitions, segments and escaped group
// names.

func partitionDirName(id int) string { return fmt.Sprintf("partition-%05d", id) }

// parsePartitionDir returns the id of a partition directory name.
func parsePartitionDir(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "partition-")
	if !ok || len(s) < 5 {
		return 0, false
	}
	id, err := strconv.Atoi(s)
	if err != nil || id < 0 || partitionDirName(id) != name {
		return 0, false
	}
	return id, true
}

const segmentExt = ".seg"

// segmentFileName names a segment by its first offset, zero-padded so that
// names sort like offsets.
func segmentFileName(first int64) string { return fmt.Sprintf("%020d%s", first, segmentExt) }

func parseSegmentFileName(name string) (int64, bool) {
	s, ok := strings.CutSuffix(name, segmentExt)
	if !ok || len(s) != 20 {
		return 0, false
	}
	first, err := strconv.ParseInt(s, 10, 64)
	if err != nil || first < 0 {
		return 0, false
	}
	return first, true
}

// groupTmpPrefix starts the temporary name of a group directory being
// created or deleted. escapeGroup never yields a leading '.', so no group
// directory carries it.
const groupTmpPrefix = ".tmp-"

// escapeGroup maps any group name to a single, portable path component,
// reversibly: bytes outside [A-Za-z0-9_-] and a leading '.' become %XX (so
// "", ".", ".." and names with '/' are all safe); the empty name becomes "%".
func escapeGroup(g string) string {
	if g == "" {
		return "%"
	}
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		c := g[i]
		if isPlain(c) || (c == '.' && i > 0) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func isPlain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// unescapeGroup reverses escapeGroup; it rejects names escapeGroup never
// produces, so a stray directory is reported rather than misread.
func unescapeGroup(s string) (string, bool) {
	if s == "%" {
		return "", true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	g := b.String()
	return g, escapeGroup(g) == s
}
