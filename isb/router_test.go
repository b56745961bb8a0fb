package isb_test

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/isb"
)

// TestByStringPinned pins the string routing format. These partitions must
// never change: a changed hash would route a key's new items away from its
// old ones after an upgrade.
func TestByStringPinned(t *testing.T) {
	ns := [4]int{1, 3, 8, 16}
	for _, c := range []struct {
		key  string
		want [4]int // for n = 1, 3, 8, 16
	}{
		{"", [4]int{0, 2, 5, 5}},
		{"a", [4]int{0, 1, 4, 12}},
		{"b", [4]int{0, 1, 5, 5}},
		{"0", [4]int{0, 2, 7, 15}},
		{"order-1", [4]int{0, 0, 5, 13}},
		{"order-2", [4]int{0, 0, 4, 4}},
		{"user:42", [4]int{0, 2, 2, 2}},
		{"héllo", [4]int{0, 1, 0, 0}},
		{"the quick brown fox", [4]int{0, 0, 2, 2}},
		{"runnel", [4]int{0, 1, 5, 5}},
	} {
		r := isb.ByString(func(s string) string { return s })
		for i, n := range ns {
			got, err := r.Route(c.key, n, 0)
			if err != nil || got != c.want[i] {
				t.Errorf("ByString(%q) with %d partitions = %d, %v; want %d", c.key, n, got, err, c.want[i])
			}
		}
	}
}

// TestByStringIsFNV1a checks the documented format against the standard
// library's FNV-1a, on the whole string (not a prefix).
func TestByStringIsFNV1a(t *testing.T) {
	r := isb.ByString(func(s string) string { return s })
	for i := range 200 {
		key := strings.Repeat(fmt.Sprintf("k%d-", i), i%13)
		h := fnv.New64a()
		h.Write([]byte(key))
		for _, n := range []int{1, 2, 7, 64, 1000} {
			want := int(h.Sum64() % uint64(n))
			if got, _ := r.Route(key, n, 0); got != want {
				t.Fatalf("ByString(%q) with %d partitions = %d, want %d", key, n, got, want)
			}
		}
	}
}

// TestByKeysPinned pins the key-list routing format, as TestByStringPinned
// does for strings; lists a separator would join into one string route
// apart ({"a","b"} and {"a\x00b"}, nil and {""}).
func TestByKeysPinned(t *testing.T) {
	ns := [4]int{1, 3, 8, 16}
	for _, c := range []struct {
		keys []string
		want [4]int // for n = 1, 3, 8, 16
	}{
		{nil, [4]int{0, 2, 5, 5}},
		{[]string{""}, [4]int{0, 0, 7, 15}},
		{[]string{"a"}, [4]int{0, 1, 7, 7}},
		{[]string{"a", "b"}, [4]int{0, 0, 0, 0}},
		{[]string{"a\x00b"}, [4]int{0, 1, 3, 11}},
		{[]string{"user:42", "eu"}, [4]int{0, 1, 1, 9}},
	} {
		r := isb.ByKeys(func(k []string) []string { return k })
		for i, n := range ns {
			got, err := r.Route(c.keys, n, 0)
			if err != nil || got != c.want[i] {
				t.Errorf("ByKeys(%q) with %d partitions = %d, %v; want %d", c.keys, n, got, err, c.want[i])
			}
		}
	}
}

// bigPartition is the reference of ByNumber: ((k-1) mod n + n) mod n in
// arbitrary precision.
func bigPartition(k *big.Int, n int) int {
	m := big.NewInt(int64(n))
	r := new(big.Int).Sub(k, big.NewInt(1))
	r.Mod(r, m) // Euclidean: always in [0, n)
	return int(r.Int64())
}

func TestByNumberIntegers(t *testing.T) {
	signed := []int64{0, 1, 2, 3, 4, 5, -1, -2, -3, -4, -5, 1000, -1000, math.MinInt64, math.MinInt64 + 1, math.MaxInt64, math.MaxInt64 - 1}
	unsigned := []uint64{0, 1, 2, 5, math.MaxInt64, 1 << 63, math.MaxUint64, math.MaxUint64 - 1}
	for _, n := range []int{1, 2, 3, 4, 7, 16} {
		for _, k := range signed {
			want := bigPartition(big.NewInt(k), n)
			if got, err := isb.ByNumber(func(k int64) int64 { return k }).Route(k, n, 0); err != nil || got != want {
				t.Errorf("int64 key %d, %d partitions: %d, %v; want %d", k, n, got, err, want)
			}
			if k >= math.MinInt32 && k <= math.MaxInt32 {
				if got, _ := isb.ByNumber(func(k int32) int32 { return k }).Route(int32(k), n, 0); got != want {
					t.Errorf("int32 key %d, %d partitions: %d; want %d", k, n, got, want)
				}
			}
			if k >= math.MinInt8 && k <= math.MaxInt8 {
				if got, _ := isb.ByNumber(func(k int8) int8 { return k }).Route(int8(k), n, 0); got != want {
					t.Errorf("int8 key %d, %d partitions: %d; want %d", k, n, got, want)
				}
			}
		}
		for _, k := range unsigned {
			want := bigPartition(new(big.Int).SetUint64(k), n)
			if got, err := isb.ByNumber(func(k uint64) uint64 { return k }).Route(k, n, 0); err != nil || got != want {
				t.Errorf("uint64 key %d, %d partitions: %d, %v; want %d", k, n, got, err, want)
			}
			if k <= math.MaxUint8 {
				if got, _ := isb.ByNumber(func(k uint8) uint8 { return k }).Route(uint8(k), n, 0); got != want {
					t.Errorf("uint8 key %d, %d partitions: %d; want %d", k, n, got, want)
				}
			}
		}
	}
	// The documented table: keys 1..n map to 0..n-1, 0 to n-1.
	type myInt int // ~int works too
	r := isb.ByNumber(func(k myInt) myInt { return k })
	for k, want := range map[myInt]int{1: 0, 2: 1, 3: 2, 4: 3, 5: 0, 0: 3, -1: 2} {
		if got, _ := r.Route(k, 4, 0); got != want {
			t.Errorf("key %d of 4 partitions = %d, want %d", k, got, want)
		}
	}
}

func TestByNumberFloats(t *testing.T) {
	r := isb.ByNumber(func(k float64) float64 { return k })
	for _, k := range []float64{0, 1, 2, -1, -7, 1e18, -1e18, 1 << 60, 1e300, math.MaxFloat64, -math.MaxFloat64} {
		bf := new(big.Float).SetFloat64(k)
		bi, _ := bf.Int(nil)
		for _, n := range []int{1, 3, 4, 10} {
			want := bigPartition(bi, n)
			if got, err := r.Route(k, n, 0); err != nil || got != want {
				t.Errorf("float key %g, %d partitions: %d, %v; want %d", k, n, got, err, want)
			}
		}
	}
	if got, _ := isb.ByNumber(func(k float32) float32 { return k }).Route(3, 4, 0); got != 2 {
		t.Errorf("float32 key 3 of 4 partitions = %d, want 2", got)
	}
	for _, k := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1.5, -0.5, 1e-300} {
		_, err := r.Route(k, 4, 0)
		if !errors.Is(err, isb.ErrInvalidKey) || !strings.Contains(err.Error(), fmt.Sprint(k)) {
			t.Errorf("key %v: error %v, want ErrInvalidKey naming the key", k, err)
		}
	}
	if _, err := isb.ByNumber(func(k float32) float32 { return k }).Route(float32(2.25), 4, 0); !errors.Is(err, isb.ErrInvalidKey) {
		t.Errorf("float32 key 2.25: %v, want ErrInvalidKey", err)
	}
}

func TestRoundRobinAndSelector(t *testing.T) {
	rr := isb.RoundRobin[string]()
	for seq := range uint64(10) {
		if got, err := rr.Route("x", 3, seq); err != nil || got != int(seq%3) {
			t.Fatalf("RoundRobin seq %d of 3 = %d, %v", seq, got, err)
		}
	}
	if got, _ := rr.Route("x", 5, math.MaxUint64); got != int(uint64(math.MaxUint64)%5) {
		t.Fatalf("RoundRobin at the counter's end = %d", got)
	}
	sel := isb.BySelector(func(k int, n int) int { return k })
	if got, err := sel.Route(2, 3, 0); err != nil || got != 2 {
		t.Fatalf("selector 2 of 3 = %d, %v", got, err)
	}
	for _, k := range []int{-1, 3, 99} {
		_, err := sel.Route(k, 3, 0)
		if !errors.Is(err, isb.ErrInvalidKey) || !strings.Contains(err.Error(), fmt.Sprintf("partition %d", k)) || !strings.Contains(err.Error(), "< 3") {
			t.Errorf("selector result %d of 3: %v, want ErrInvalidKey naming %d and 3", k, err, k)
		}
	}
}
