package watermark

import (
	"fmt"
	"strconv"
	"strings"
)

// Keys of an edge's bucket. A processor owns two kinds:
//
//	hb.<processor>               its heartbeat
//	wmb.<processor>.<partition>  its newest WMB for that partition
//
// One key per partition (not one per processor) means a store that keeps
// only the latest value per key, or a watcher that coalesces, never lets the
// WMB of one partition hide the WMB of another.
const (
	heartbeatPrefix = "hb."
	wmbPrefix       = "wmb."
)

// maxBucketLen is the longest bucket name: JetStream names a bucket's
// stream "KV_<bucket>" and refuses stream names over 255 bytes.
const maxBucketLen = 252

// validBucket accepts what JetStream KV accepts as a bucket name, so an edge
// that works in memory also works distributed.
func validBucket(name string) error {
	if len(name) > maxBucketLen {
		return fmt.Errorf("%w: bucket %.20q...: %d characters, at most %d",
			ErrInvalidName, name, len(name), maxBucketLen)
	}
	return validName("bucket", name, "-_")
}

// validProcessor accepts JetStream KV key characters except '.', which
// separates the parts of a key.
func validProcessor(name string) error { return validName("processor", name, "-_=/") }

// validKey accepts JetStream KV keys: its characters, and '.' only between
// two other characters ('.' separates subject tokens, which cannot be empty).
func validKey(key string) error {
	if err := validName("key", key, "-_=/."); err != nil {
		return err
	}
	if key[0] == '.' || key[len(key)-1] == '.' || strings.Contains(key, "..") {
		return fmt.Errorf("%w: key %q: '.' at the start, at the end or twice in a row",
			ErrInvalidName, key)
	}
	return nil
}

// CheckBucket returns an error matching ErrInvalidName when a [Store] cannot
// hold bucket. Every Store checks names with it (and [CheckKey]), so a name
// that works in memory also works distributed.
func CheckBucket(bucket string) error { return validBucket(bucket) }

// CheckKey returns an error matching ErrInvalidName when a [Store] cannot
// hold bucket or key.
func CheckKey(bucket, key string) error { return checkBucketKey(bucket, key) }

// validName checks that name, a kind ("bucket", "processor", "key"), is not
// empty and holds only ASCII letters, digits and the runes of extra.
func validName(kind, name, extra string) error {
	if name == "" {
		return fmt.Errorf("%w: empty %s name", ErrInvalidName, kind)
	}
	for _, r := range name {
		if !isAlnum(r) && !strings.ContainsRune(extra, r) {
			return fmt.Errorf("%w: %s %q: character %q (allowed: A-Z a-z 0-9 %s)",
				ErrInvalidName, kind, name, r, strings.Join(strings.Split(extra, ""), " "))
		}
	}
	return nil
}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

func heartbeatKey(processor string) string { return heartbeatPrefix + processor }

func wmbKey(processor string, partition int) string {
	return wmbPrefix + processor + "." + strconv.Itoa(partition)
}

// keyKind is what parseKey found.
type keyKind int

const (
	keyOther keyKind = iota
	keyHeartbeat
	keyWMB
)

// parseKey splits a bucket key. Keys of other kinds are keyOther, so a
// bucket can later hold more without confusing older fetchers.
func parseKey(key string) (kind keyKind, processor string, partition int) {
	if p, ok := strings.CutPrefix(key, heartbeatPrefix); ok && validProcessor(p) == nil {
		return keyHeartbeat, p, 0
	}
	if rest, ok := strings.CutPrefix(key, wmbPrefix); ok {
		i := strings.LastIndexByte(rest, '.')
		if i < 0 {
			return keyOther, "", 0
		}
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil || n < 0 || validProcessor(rest[:i]) != nil {
			return keyOther, "", 0
		}
		return keyWMB, rest[:i], n
	}
	return keyOther, "", 0
}

// EdgeBucket returns the bucket of the edge from vertex from to vertex to
// of pipeline pipeline, so that publishers and fetchers agree on it:
// wm_{len(pipeline)}_{pipeline}_{len(from)}_{from}_{to}. The lengths are
// part of the name, so no two pipelines or vertex pairs share a bucket
// ("a_b"->"c" and "a"->"b_c" differ). Names with characters a bucket
// cannot hold are an ErrInvalidName.
func EdgeBucket(pipeline, from, to string) (string, error) {
	if pipeline == "" || from == "" || to == "" {
		return "", fmt.Errorf("%w: edge %q -> %q of pipeline %q: empty name", ErrInvalidName, from, to, pipeline)
	}
	b := "wm_" + strconv.Itoa(len(pipeline)) + "_" + pipeline + "_" + strconv.Itoa(len(from)) + "_" + from + "_" + to
	if err := validBucket(b); err != nil {
		return "", fmt.Errorf("edge %q -> %q of pipeline %q: %w", from, to, pipeline, err)
	}
	return b, nil
}

// ProcessorName returns the processor name of replica of vertex, as
// publishers and status reports use it. Vertex names with characters a key
// cannot hold are an ErrInvalidName.
func ProcessorName(vertex string, replica int) (string, error) {
	p := vertex + "-" + strconv.Itoa(replica)
	if vertex == "" || replica < 0 {
		return "", fmt.Errorf("%w: processor of vertex %q replica %d", ErrInvalidName, vertex, replica)
	}
	if err := validProcessor(p); err != nil {
		return "", err
	}
	return p, nil
}
