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
