package isb

import (
	"fmt"
	"math"

	"github.com/runnel-dev/runnel/internal/keys"
)

// Router picks the partition of each item. The zero Router (nil) is
// round-robin. Routers are safe for concurrent use.
type Router[T any] interface {
	// Route returns the partition of item among n, or an error wrapping
	// ErrInvalidKey. seq counts the items the producer routed before this
	// one, for routers that spread items without a key.
	Route(item T, n int, seq uint64) (int, error)
}

// RoundRobin routes items to the topic's partitions in turn: the k-th
// round-robin item the topic admits, from any of its round-robin producers,
// goes to partition k mod n. It is the same as a nil Router.
func RoundRobin[T any]() Router[T] { return roundRobin[T]{} }

// roundRobin is recognised by Producer, which then takes the topic's
// positions instead of calling it (the hot path of the default producer);
// Route serves a caller that calls it directly.
type roundRobin[T any] struct{}

func (roundRobin[T]) Route(_ T, n int, seq uint64) (int, error) { return int(seq % uint64(n)), nil }

// Number is a numeric routing key.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// ByNumber routes by a numeric key to the normalized (key-1) mod n, so keys
// 1..n map to partitions 0..n-1, and zero and negative keys are accepted
// (key 0 goes to n-1, key -1 to n-2). Every integer of every Number type is
// accepted, math.MinInt64 and math.MaxUint64 included. NaN, infinities and
// fractions are rejected with ErrInvalidKey.
func ByNumber[T any, K Number](key func(T) K) Router[T] {
	// Classify K once: a type parameter has no kind switch without reflect.
	var zero K
	one := zero + 1
	switch {
	case one/(one+one) != zero: // 1/2 is 0.5 only for floats
		return byFloat[T, K]{key}
	case zero-one < zero: // wraps around for unsigned types
		return bySigned[T, K]{key}
	default:
		return byUnsigned[T, K]{key}
	}
}

type bySigned[T any, K Number] struct{ key func(T) K }

func (r bySigned[T, K]) Route(item T, n int, _ uint64) (int, error) {
	return signedPartition(int64(r.key(item)), n), nil
}

// signedPartition is ((k-1) mod n + n) mod n. Reducing k first keeps every
// intermediate value within [-n, n), so math.MinInt64 cannot overflow.
func signedPartition(k int64, n int) int {
	m := int64(n)
	r := k%m - 1 // in [-m, m-1): Go's % takes the sign of k
	if r < 0 {
		r += m
	}
	return int(r)
}

type byUnsigned[T any, K Number] struct{ key func(T) K }

func (r byUnsigned[T, K]) Route(item T, n int, _ uint64) (int, error) {
	// uint64 keeps keys above math.MaxInt64 exact; (k mod n) + n - 1 < 2n.
	m := uint64(n)
	return int((uint64(r.key(item))%m + m - 1) % m), nil
}

type byFloat[T any, K Number] struct{ key func(T) K }

func (r byFloat[T, K]) Route(item T, n int, _ uint64) (int, error) {
	k := r.key(item)
	f := float64(k)
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return 0, fmt.Errorf("%w: numeric key %v is not a finite integer", ErrInvalidKey, k)
	}
	// math.Mod is exact, so keys beyond 2^53 (where f-1 == f) still route
	// as the integer they are; the result is a small integer in (-n, n).
	m := float64(n)
	return signedPartition(int64(math.Mod(f, m)), n), nil
}

// ByString routes by a stable hash of the whole string key: the same string
// goes to the same partition across restarts and releases.
//
// The mapping is a fixed format, never to change: the partition is the
// 64-bit FNV-1a hash of the key's bytes, modulo n. Changing it would send
// a key's new items to a different partition than its old ones.
func ByString[T any](key func(T) string) Router[T] { return byString[T]{key} }

type byString[T any] struct{ key func(T) string }

func (r byString[T]) Route(item T, n int, _ uint64) (int, error) {
	return int(keys.String(r.key(item)) % uint64(n)), nil
}

// ByKeys routes by a stable hash of a list of string keys (the keys of a
// pipeline message): the same list goes to the same partition across
// restarts and releases, and lists that a separator would join into one
// string ({"a","b"} and {"a\x00b"}, nil and {""}) are hashed apart.
//
// The mapping is a fixed format, never to change: the partition is the
// 64-bit FNV-1a hash of the length-prefixed encoding of the list (each
// key's length as an unsigned varint, then its bytes), modulo n.
func ByKeys[T any](list func(T) []string) Router[T] { return byKeys[T]{list} }

type byKeys[T any] struct{ list func(T) []string }

func (r byKeys[T]) Route(item T, n int, _ uint64) (int, error) {
	return int(keys.Hash(r.list(item)) % uint64(n)), nil
}

// BySelector routes with a user function; a result outside [0, n) is an
// error wrapping ErrInvalidKey.
func BySelector[T any](sel func(item T, n int) int) Router[T] { return bySelector[T]{sel} }

type bySelector[T any] struct{ sel func(T, int) int }

func (r bySelector[T]) Route(item T, n int, _ uint64) (int, error) {
	p := r.sel(item, n)
	if p < 0 || p >= n {
		return 0, fmt.Errorf("%w: selector returned partition %d, want 0 <= p < %d", ErrInvalidKey, p, n)
	}
	return p, nil
}
