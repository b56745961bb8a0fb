package isb

// Router picks the partition of each item. The zero Router (nil) is
// round-robin. Routers are safe for concurrent use.
type Router[T any] interface {
	// Route returns the partition of item among n, or an error wrapping
	// ErrInvalidKey. seq is a per-producer counter for round-robin routers.
	Route(item T, n int, seq uint64) (int, error)
}

// RoundRobin routes item i of a producer to partition i mod n.
func RoundRobin[T any]() Router[T] { panic("isb: not implemented") }

// Number is a numeric routing key.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// ByNumber routes by a numeric key to the normalized (key-1) mod n, so keys
// 1..n map to partitions 0..n-1, and zero and negative keys are accepted.
// NaN, infinities and fractions are rejected with ErrInvalidKey.
func ByNumber[T any, K Number](key func(T) K) Router[T] { panic("isb: not implemented") }

// ByString routes by a stable hash of the whole string key: the same string
// goes to the same partition across restarts and releases.
func ByString[T any](key func(T) string) Router[T] { panic("isb: not implemented") }

// BySelector routes with a user function; a result outside [0, n) is an
// error wrapping ErrInvalidKey.
func BySelector[T any](sel func(item T, n int) int) Router[T] { panic("isb: not implemented") }
