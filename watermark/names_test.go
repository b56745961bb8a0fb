package watermark

import (
	"errors"
	"testing"
)

func TestNames(t *testing.T) {
	b1, err1 := EdgeBucket("p", "a_b", "c")
	b2, err2 := EdgeBucket("p", "a", "b_c")
	if err1 != nil || err2 != nil || b1 == b2 || b1 != "wm_1_p_3_a_b_c" || b2 != "wm_1_p_1_a_b_c" {
		t.Fatalf("EdgeBucket = %q,%v and %q,%v", b1, err1, b2, err2)
	}
	if b3, _ := EdgeBucket("p_a", "b", "c"); b3 == b1 || b3 == b2 || b3 != "wm_3_p_a_1_b_c" {
		t.Fatalf("EdgeBucket of pipeline p_a = %q: another pipeline's edge shares it", b3)
	}
	if _, err := EdgeBucket("p", "a.b", "c"); !errors.Is(err, ErrInvalidName) {
		t.Errorf("EdgeBucket with a dot: %v", err)
	}
	for _, names := range [][3]string{{"", "a", "c"}, {"p", "", "c"}, {"p", "a", ""}} {
		if _, err := EdgeBucket(names[0], names[1], names[2]); !errors.Is(err, ErrInvalidName) {
			t.Errorf("EdgeBucket%q: %v, want ErrInvalidName", names, err)
		}
	}
	if p, err := ProcessorName("map", 2); err != nil || p != "map-2" {
		t.Errorf("ProcessorName = %q, %v", p, err)
	}
	for _, c := range []struct {
		v string
		r int
	}{{"", 0}, {"m", -1}, {"a.b", 0}} {
		if _, err := ProcessorName(c.v, c.r); !errors.Is(err, ErrInvalidName) {
			t.Errorf("ProcessorName(%q, %d): %v", c.v, c.r, err)
		}
	}
	// Keys round-trip through parseKey.
	if k, p, n := parseKey(wmbKey("map-2", 11)); k != keyWMB || p != "map-2" || n != 11 {
		t.Errorf("parseKey(wmb) = %v %q %d", k, p, n)
	}
	if k, p, _ := parseKey(heartbeatKey("map-2")); k != keyHeartbeat || p != "map-2" {
		t.Errorf("parseKey(hb) = %v %q", k, p)
	}
	for _, key := range []string{"other", "wmb.x", "wmb.x.-1", "wmb.x.y", "hb.", "wmb..1"} {
		if k, _, _ := parseKey(key); k != keyOther {
			t.Errorf("parseKey(%q) = %v, want other", key, k)
		}
	}
}

// TestNameErrors pins the text of each validator's error: it names the
// kind, the name, the character and what is allowed.
func TestNameErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{validBucket(""), "watermark: invalid name: empty bucket name"},
		{validBucket("a/b"), `watermark: invalid name: bucket "a/b": character '/' (allowed: A-Z a-z 0-9 - _)`},
		{validProcessor("p.1"), `watermark: invalid name: processor "p.1": character '.' (allowed: A-Z a-z 0-9 - _ = /)`},
		{validKey("k y"), `watermark: invalid name: key "k y": character ' ' (allowed: A-Z a-z 0-9 - _ = / .)`},
		{validKey("wmb.p-1.0"), ""},
		{validProcessor("map=a/b_c-1"), ""},
	} {
		got := ""
		if c.err != nil {
			got = c.err.Error()
		}
		if got != c.want || (c.err != nil && !errors.Is(c.err, ErrInvalidName)) {
			t.Errorf("got %q; want %q", got, c.want)
		}
	}
}
