package kafka

import (
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-dev/runnel/internal/keys"
	"github.com/runnel-dev/runnel/vertex"
)

// A Kafka record and a runnel message carry the same things under other
// names; this file maps one onto the other, both ways.

// recordID is the message ID of the record at offset of topic's
// partition: "topic/partition/offset". A topic name cannot hold a '/', so
// the ID parses back unambiguously, and it is the same each time the
// record is read: a sink downstream can deduplicate by it.
func recordID(topic string, partition int32, offset int64) string {
	b := make([]byte, 0, len(topic)+24)
	b = append(b, topic...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(partition), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, offset, 10)
	return string(b)
}

// parseID splits an ID recordID made; ok is false for any other string.
func parseID(id string) (topic string, partition int32, offset int64, ok bool) {
	j := strings.LastIndexByte(id, '/')
	if j < 0 {
		return "", 0, 0, false
	}
	i := strings.LastIndexByte(id[:j], '/')
	if i <= 0 {
		return "", 0, 0, false
	}
	p, err1 := strconv.ParseInt(id[i+1:j], 10, 32)
	o, err2 := strconv.ParseInt(id[j+1:], 10, 64)
	if err1 != nil || err2 != nil || p < 0 || o < 0 {
		return "", 0, 0, false
	}
	return id[:i], int32(p), o, true
}

// toMessage fills m from r: the ID of its position, its timestamp as the
// event time (a missing one, which Kafka stores as -1, leaves it zero:
// the read time), its key as the one key (a nil key: no keys), its
// headers (of a key given twice, the last value) and its value, not
// copied (franz-go gives each record its own).
func toMessage(r *kgo.Record, m *vertex.Message[[]byte]) {
	*m = vertex.Message[[]byte]{ID: recordID(r.Topic, r.Partition, r.Offset), Value: r.Value}
	if r.Timestamp.UnixMilli() > 0 {
		m.EventTime = r.Timestamp
	}
	if r.Key != nil {
		m.Keys = []string{string(r.Key)}
	}
	if len(r.Headers) > 0 {
		m.Headers = make(map[string]string, len(r.Headers))
		for _, h := range r.Headers {
			m.Headers[h.Key] = string(h.Value)
		}
	}
}

// recordKey is the Kafka key of a message with keys ks: none is a nil key
// (the partitioner then spreads the records), one is that key's bytes (so
// a key read by the Source is written back as it was), several are their
// unambiguous encoding (internal/keys, the one runnel groups keys by:
// each key's length as an unsigned varint followed by its bytes, so
// {"a","b"} and {"ab"} stay apart).
func recordKey(ks []string) []byte {
	switch len(ks) {
	case 0:
		return nil
	case 1:
		return []byte(ks[0])
	}
	return keys.Append(nil, ks)
}

// recordHeaders are a message's headers as Kafka headers, sorted by key so
// that equal maps give equal records.
func recordHeaders(h map[string]string) []kgo.RecordHeader {
	if len(h) == 0 {
		return nil
	}
	out := make([]kgo.RecordHeader, 0, len(h))
	for k, v := range h {
		out = append(out, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	slices.SortFunc(out, func(a, b kgo.RecordHeader) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// toRecord fills r from m for topic: its value (not copied: franz-go
// does not change it), key, headers and, as the record's timestamp, its
// event time (zero: the time of the produce).
func toRecord(topic string, m *vertex.Message[[]byte], r *kgo.Record) {
	*r = kgo.Record{Topic: topic, Key: recordKey(m.Keys), Value: m.Value, Headers: recordHeaders(m.Headers), Timestamp: m.EventTime}
}
