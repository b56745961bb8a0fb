package jetstream

import (
	"fmt"
	"strconv"
	"strings"
)

// Names in the server.
//
// Topic and group names are free-form in the isb (a topic name only
// excludes '/' and NUL), while stream names, subjects, KV keys and bucket
// names accept a few characters only. Every name is therefore escaped
// into letters, digits and '-', with '_' starting the escape of any other
// byte as two upper-case hex digits ('_' itself is "_5F"). The escape is
// reversible and its output is valid in all of them.
//
//	stream of partition p   {prefix}{escaped topic}-{p}   (its only subject is its name)
//	commit of group g       key {prefix}{escaped topic}.{p}.{escaped g} in bucket {Bucket}
//	claim of group g        key {prefix}{escaped topic}.{p}.{escaped g} in bucket {Bucket}-claims
//	append announcements    core subject runnel.isb.{prefix}{escaped topic}.{p}

// maxNameLen is the longest stream name the server accepts.
const maxNameLen = 255

func plainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

// EscapeName maps s into letters, digits, '-' and '_' escapes, as the
// backend names its streams, keys and buckets: valid in all of them, and
// never holding "__" (a '_' is always followed by two hex digits), so a
// caller can end a part of a name with "__" unambiguously
// (pipeline/jsstorage does).
func EscapeName(s string) string { return escape(s) }

// escape maps s into letters, digits, '-' and '_' escapes.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; plainByte(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02X", c)
		}
	}
	return b.String()
}

// unescape reverses escape; ok is false for a string escape cannot make.
func unescape(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case plainByte(c):
			b.WriteByte(c)
		case c == '_' && i+2 < len(s):
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil || plainByte(byte(v)) || s[i+1:i+3] != fmt.Sprintf("%02X", v) {
				return "", false
			}
			b.WriteByte(byte(v))
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), true
}

// names are the server-side names of one topic.
type names struct {
	base   string // {prefix}{escaped topic}
	bucket string
}

func (n names) stream(p int) string   { return n.base + "-" + strconv.Itoa(p) }
func (n names) announce(p int) string { return "runnel.isb." + n.base + "." + strconv.Itoa(p) }
func (n names) announceAll() string   { return "runnel.isb." + n.base + ".*" }
func (n names) claims() string        { return n.bucket + "-claims" }

// key is the KV key of group's entry of partition p.
func (n names) key(p int, group string) string {
	return n.base + "." + strconv.Itoa(p) + "." + escape(group)
}

// groupsFilter matches the keys of every group and partition of the topic.
func (n names) groupsFilter() string { return n.base + ".*.*" }

// parseKey splits a key made by key.
func (n names) parseKey(key string) (p int, group string, ok bool) {
	rest, found := strings.CutPrefix(key, n.base+".")
	if !found {
		return 0, "", false
	}
	ps, eg, found := strings.Cut(rest, ".")
	if !found {
		return 0, "", false
	}
	p, err := strconv.Atoi(ps)
	if err != nil || p < 0 || strconv.Itoa(p) != ps {
		return 0, "", false
	}
	group, ok = unescape(eg)
	return p, group, ok
}
