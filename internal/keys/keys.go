// Package keys encodes the keys of a message for grouping and routing: an
// unambiguous byte string per key list, and a stable hash of it.
//
// The encoding is each key's length as an unsigned varint
// (encoding/binary's AppendUvarint) followed by its bytes. It is
// self-delimiting, so two key lists have the same encoding only when they
// are equal: nil (or empty) encodes as nothing, {""} as one zero byte,
// {"a","b"} as 01 61 01 62 and {"a\x00b"} as 03 61 00 62. Joining keys with
// a separator cannot tell the last two apart.
//
// Hash is FNV-1a, 64 bits, of that encoding: no seed, so it is the same in
// every process and every version. Both are fixed formats, never to
// change: a reduce routes a key list to the partition Hash % n of its
// input, and changing the hash would send a key's new messages to another
// partition (and replica) than the windows it has open.
package keys

import "encoding/binary"

const (
	offset64 = 14695981039346656037
	prime64  = 1099511628211
)

// Append appends the encoding of keys to dst and returns the extended
// slice.
func Append(dst []byte, keys []string) []byte {
	for _, k := range keys {
		dst = binary.AppendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
	}
	return dst
}

// Decode returns the key list whose encoding (Append) is enc, and false
// when enc is not one (a length runs past its end or does not fit a
// varint). An empty enc is the empty list, nil. It lets a holder of many
// encoded key lists (a reduce keeps one per open window and key) keep
// only the encoding and rebuild the list when it needs it.
func Decode(enc string) ([]string, bool) {
	var out []string
	for len(enc) > 0 {
		n, w := uvarint(enc)
		if w <= 0 || n > uint64(len(enc)-w) {
			return nil, false
		}
		out = append(out, enc[w:w+int(n)])
		enc = enc[w+int(n):]
	}
	return out, true
}

// uvarint is binary.Uvarint of a string, without copying it to bytes.
func uvarint(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		b := s[i]
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 || i > 0 && b == 0 {
				return 0, -1 // overflow, or not Append's shortest form
			}
			return x | uint64(b)<<shift, i + 1
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	return 0, 0
}

// Hash is the 64-bit FNV-1a hash of Append(nil, keys), computed without
// allocating.
func Hash(keys []string) uint64 {
	h := uint64(offset64)
	for _, k := range keys {
		for n := uint64(len(k)); ; n >>= 7 {
			if n < 0x80 {
				h = (h ^ n) * prime64
				break
			}
			h = (h ^ (n&0x7f | 0x80)) * prime64
		}
		for i := 0; i < len(k); i++ {
			h = (h ^ uint64(k[i])) * prime64
		}
	}
	return h
}

// String is the 64-bit FNV-1a hash of the bytes of s (the hash
// isb.ByString routes by).
func String(s string) uint64 {
	h := uint64(offset64)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * prime64
	}
	return h
}

// Spread maps a hash to one of n workers. The messages one replica reads
// were routed by h % partitions, so they share the low bits of h when n and
// the partition count have a common factor: h % n would put every key of a
// partition on a few workers. Spread first mixes h (the finalizer of
// MurmurHash3: every bit of the result depends on every bit of h), then
// takes it modulo n. Fixed, as Hash is.
func Spread(h uint64, n int) int {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return int(h % uint64(n))
}
