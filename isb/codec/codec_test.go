package codec_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"

	"github.com/runnel-dev/runnel/isb/codec"
)

type order struct {
	ID    int64   `json:"id" msgpack:"id"`
	Name  string  `json:"name,omitempty" msgpack:"name,omitempty"`
	Price float64 `json:"price" msgpack:"price"`
}

type point struct {
	X, Y int32
	Tags [3]uint8
	OK   bool
	Sub  struct{ Z float64 }
}

func codecs() []codec.Codec[order] {
	return []codec.Codec[order]{codec.JSON[order](), codec.MsgPack[order]()}
}

func TestRoundTrip(t *testing.T) {
	for _, c := range codecs() {
		t.Run(c.Name(), func(t *testing.T) {
			in := order{ID: 7, Name: "seven", Price: 1.5}
			prefix := []byte("prefix")
			b, err := c.Append(prefix, in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b[:6]) != "prefix" {
				t.Fatalf("Append overwrote dst: %q", b[:6])
			}
			var out order
			if err := c.Decode(b[6:], &out); err != nil {
				t.Fatal(err)
			}
			if out != in {
				t.Fatalf("got %+v, want %+v", out, in)
			}
		})
	}
}

// A reused decode target must not keep fields the new item omits.
func TestDecodeResetsTarget(t *testing.T) {
	for _, c := range codecs() {
		t.Run(c.Name(), func(t *testing.T) {
			b, err := c.Append(nil, order{ID: 2})
			if err != nil {
				t.Fatal(err)
			}
			out := order{ID: 1, Name: "stale", Price: 9}
			if err := c.Decode(b, &out); err != nil {
				t.Fatal(err)
			}
			if want := (order{ID: 2}); out != want {
				t.Fatalf("got %+v, want %+v", out, want)
			}
		})
	}
}

func TestEncodeError(t *testing.T) {
	c := codec.JSON[float64]()
	dst := []byte("x")
	b, err := c.Append(dst, math.NaN())
	if !errors.Is(err, codec.ErrEncode) {
		t.Fatalf("err = %v, want ErrEncode", err)
	}
	if len(b) != 1 {
		t.Fatalf("dst grew to %d bytes on error", len(b))
	}
	m := codec.MsgPack[chan int]()
	if _, err := m.Append(nil, make(chan int)); !errors.Is(err, codec.ErrEncode) {
		t.Fatalf("msgpack err = %v, want ErrEncode", err)
	}
}

func TestDecodeError(t *testing.T) {
	for _, c := range codecs() {
		var out order
		err := c.Decode([]byte{0xc1, '{'}, &out)
		var ce *codec.Error
		if !errors.Is(err, codec.ErrDecode) || !errors.As(err, &ce) || ce.Codec != c.Name() {
			t.Fatalf("%s: err = %v, want *codec.Error matching ErrDecode", c.Name(), err)
		}
	}
}

func TestRaw(t *testing.T) {
	c, err := codec.Raw[point]()
	if err != nil {
		t.Fatal(err)
	}
	in := point{X: -1, Y: 2, Tags: [3]uint8{1, 2, 3}, OK: true}
	in.Sub.Z = 3.25
	b, err := c.Append(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != int(reflect.TypeFor[point]().Size()) {
		t.Fatalf("encoded %d bytes, want the type's size %d", len(b), reflect.TypeFor[point]().Size())
	}
	var out point
	if err := c.Decode(b, &out); err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Fatalf("got %+v, want %+v", out, in)
	}
	if err := c.Decode(b[:3], &out); !errors.Is(err, codec.ErrDecode) {
		t.Fatalf("short input: err = %v, want ErrDecode", err)
	}
}

func TestRawRejects(t *testing.T) {
	type inner struct {
		A int
		S []byte
	}
	type outer struct {
		N  int
		In [2]inner
	}
	type withStr struct{ Name string }
	cases := []struct {
		name string
		raw  func() error
		path string
		kind reflect.Kind
	}{
		{"nested slice", func() error { _, err := codec.Raw[outer](); return err }, "codec_test.outer.In[].S", reflect.Slice},
		{"string field", func() error { _, err := codec.Raw[withStr](); return err }, "codec_test.withStr.Name", reflect.String},
		{"pointer", func() error { _, err := codec.Raw[*int](); return err }, "*int", reflect.Pointer},
		{"map", func() error { _, err := codec.Raw[map[int]int](); return err }, "map[int]int", reflect.Map},
		{"interface", func() error { _, err := codec.Raw[any](); return err }, "interface {}", reflect.Interface},
		{"chan", func() error { _, err := codec.Raw[chan int](); return err }, "chan int", reflect.Chan},
		{"func", func() error { _, err := codec.Raw[func()](); return err }, "func()", reflect.Func},
		{"uintptr", func() error { _, err := codec.Raw[uintptr](); return err }, "uintptr", reflect.Uintptr},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.raw()
			var te *codec.TypeError
			if !errors.Is(err, codec.ErrUnsupportedType) || !errors.As(err, &te) {
				t.Fatalf("err = %v, want *TypeError", err)
			}
			if te.Path != tc.path || te.Kind != tc.kind {
				t.Fatalf("rejected %s (%v), want %s (%v)", te.Path, te.Kind, tc.path, tc.kind)
			}
		})
	}
}

// Run with -race: codecs hold no shared mutable state.
func TestConcurrentUse(t *testing.T) {
	raw, err := codec.Raw[point]()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				for _, c := range codecs() {
					in := order{ID: int64(g*1000 + i), Name: "n"}
					b, err := c.Append(nil, in)
					if err != nil {
						t.Error(err)
						return
					}
					var out order
					if err := c.Decode(b, &out); err != nil || out != in {
						t.Errorf("%s: got %+v, %v; want %+v", c.Name(), out, err, in)
						return
					}
				}
				p := point{X: int32(g), Y: int32(i)}
				b, _ := raw.Append(nil, p)
				var q point
				if err := raw.Decode(b, &q); err != nil || q != p {
					t.Errorf("raw: got %+v, %v; want %+v", q, err, p)
					return
				}
			}
		})
	}
	wg.Wait()
}

func ExampleRaw() {
	type reading struct {
		Sensor uint16
		Value  float64
	}
	c, err := codec.Raw[reading]()
	if err != nil {
		panic(err)
	}
	b, _ := c.Append(nil, reading{Sensor: 3, Value: 21.5})
	var r reading
	_ = c.Decode(b, &r)
	fmt.Println(len(b), r.Sensor, r.Value)

	_, err = codec.Raw[struct{ Name string }]()
	fmt.Println(err)
	// Output:
	// 16 3 21.5
	// codec: raw cannot copy struct { Name string }: struct { Name string }.Name is a string (only fixed-size values without pointers: bools, numbers, arrays and structs of them)
}

func ExampleJSON() {
	c := codec.JSON[order]()
	b, _ := c.Append(nil, order{ID: 1, Price: 2.5})
	fmt.Println(string(b))
	// Output: {"id":1,"price":2.5}
}

// A bool byte other than 0 or 1 would decode into a value that is neither
// true nor false to Go, so Raw must refuse it and say which field and byte.
func TestRawRejectsInvalidBool(t *testing.T) {
	type flags struct {
		N   uint16
		On  bool
		Bit [2]struct {
			V  uint8
			Up bool
		}
		Set [3]bool
	}
	c, err := codec.Raw[flags]()
	if err != nil {
		t.Fatal(err)
	}
	valid, err := c.Append(nil, flags{On: true, Set: [3]bool{true, false, true}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		off  int
		path string
	}{
		{2, "codec_test.flags.On"},
		{4, "codec_test.flags.Bit[0].Up"},
		{6, "codec_test.flags.Bit[1].Up"},
		{7, "codec_test.flags.Set[0]"},
		{9, "codec_test.flags.Set[2]"},
	}
	for _, tc := range cases {
		b := append([]byte(nil), valid...)
		b[tc.off] = 2
		var out flags
		err := c.Decode(b, &out)
		var ce *codec.Error
		var be *codec.BoolError
		if !errors.Is(err, codec.ErrDecode) || !errors.As(err, &ce) || !errors.As(err, &be) {
			t.Fatalf("byte %d = 2: err = %v, want *codec.Error matching ErrDecode with a *BoolError", tc.off, err)
		}
		if be.Offset != tc.off || be.Path != tc.path || be.Value != 2 {
			t.Fatalf("byte %d: got %+v, want offset %d path %s value 2", tc.off, *be, tc.off, tc.path)
		}
		if out != (flags{}) {
			t.Fatalf("byte %d: *v = %+v after a refused decode, want it untouched", tc.off, out)
		}
	}
	// The non-bool bytes may hold anything.
	b := append([]byte(nil), valid...)
	b[0], b[3], b[5] = 0xff, 0xff, 0xff
	var out flags
	if err := c.Decode(b, &out); err != nil || out.N != 0xff || out.Bit[0].V != 0xff || out.Bit[1].V != 0xff || !out.On || out.Set != [3]bool{true, false, true} {
		t.Fatalf("got %+v, %v; want the non-bool bytes accepted", out, err)
	}
}

// Bytes is the identity, and a decoded value does not share the source's
// array (a reader's buffer is reused).
func TestBytesCodec(t *testing.T) {
	c := codec.Bytes()
	enc, err := c.Append([]byte("x"), []byte("abc"))
	if err != nil || string(enc) != "xabc" {
		t.Fatalf("Append = %q, %v; want \"xabc\"", enc, err)
	}
	src := []byte("hello")
	var v []byte
	if err := c.Decode(src, &v); err != nil || string(v) != "hello" {
		t.Fatalf("Decode = %q, %v", v, err)
	}
	src[0] = 'J'
	if string(v) != "hello" {
		t.Fatalf("decoded value shares the source: %q", v)
	}
}
