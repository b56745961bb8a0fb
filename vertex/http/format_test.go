package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestParseBody: the records of each format, and the malformed bodies
// refused with where they break.
func TestParseBody(t *testing.T) {
	for _, c := range []struct {
		ct, body string
		want     string // the records, or the error's text
	}{
		{"application/x-ndjson", "{\"a\":1}\n\n[2, 3]\r\n\"s\"", `[{"a":1} [2, 3] "s"]`},
		{"application/jsonl; charset=utf-8", "1\n2\n", `[1 2]`},
		{"application/x-ndjson", "1\n{oops\n3\n", "line 2 is not JSON"},
		{"application/json", ` [ {"a": [1, 2]} , "x",3 ,null] `, `[{"a": [1, 2]} "x" 3 null]`},
		{"application/json", `{"one": true}`, `[{"one": true}]`},
		{"application/json", `[]`, `[]`},
		{"application/json", "", `[]`},
		{"application/json", `  [1, 2,, 3]`, "invalid JSON at byte 8"},
		{"application/json", `[1] [2]`, "invalid JSON at byte 4"},
		{"text/plain", "a b\n\nc\r\nd", `[a b c d]`},
		{"application/octet-stream", "any\nbytes", "[any\nbytes]"},
		{"", "raw", `[raw]`},
		{"", "", `[]`},
	} {
		f, err := formatOf(c.ct)
		if err != nil {
			t.Fatalf("%q: %v", c.ct, err)
		}
		recs, err := parseBody(f, []byte(c.body))
		got := ""
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%s %q: error %v does not match ErrMalformed", c.ct, c.body, err)
			}
			got = err.Error()
			if !strings.Contains(got, c.want) {
				t.Errorf("%s %q: error %q, want it to say %q", c.ct, c.body, got, c.want)
			}
			continue
		}
		got = fmt.Sprintf("%s", recs)
		if got != c.want {
			t.Errorf("%s %q: records %s, want %s", c.ct, c.body, got, c.want)
		}
	}
	for _, ct := range []string{"application/x-www-form-urlencoded", "text/html", "application/json; =bad"} {
		if _, err := formatOf(ct); !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), "application/x-ndjson") && !strings.Contains(err.Error(), ct) {
			t.Errorf("Content-Type %q: %v, want ErrUnsupportedType naming it or the types read", ct, err)
		}
	}
}

// TestEncodeBody: the sink's bodies, values the format cannot carry left
// out with their cause.
func TestEncodeBody(t *testing.T) {
	vals := [][]byte{[]byte(`{"a":1}`), []byte("not json"), []byte("{\n \"b\": 2\n}"), []byte("line\nbreak")}
	for _, c := range []struct {
		f       Format
		want    string
		refused string
	}{
		{NDJSON, "{\"a\":1}\n{\"b\":2}\n", "[false true false true]"},
		{JSONArray, "[{\"a\":1},{\n \"b\": 2\n}]", "[false true false true]"},
		{Lines, "{\"a\":1}\nnot json\n", "[false false true true]"},
	} {
		body, refused := encodeBody(c.f, nil, vals, make([]error, len(vals)))
		var r []bool
		for _, e := range refused {
			r = append(r, e != nil)
			if e != nil && !errors.Is(e, ErrUnencodable) {
				t.Errorf("%v: cause %v does not match ErrUnencodable", c.f, e)
			}
		}
		if string(body) != c.want || fmt.Sprint(r) != c.refused {
			t.Errorf("%v: body %q refused %v, want %q %s", c.f, body, r, c.want, c.refused)
		}
	}
}

// FuzzParseBody: no body makes the parser panic; the records of a JSON
// format are each valid JSON and those of a line format hold no newline;
// and the records parsed, written by the sink's encoder in the same
// format and parsed again, are the same records (a sink POSTing to a
// source delivers what it was given).
func FuzzParseBody(f *testing.F) {
	for _, seed := range []string{"", "1\n2\n", "[1, {\"a\": [2]}, \"x\"]", "{\"k\": null}", "a\r\nb\n\nc", "[1,,2]", "\xff\n", " [ ] "} {
		for _, fm := range []Format{NDJSON, JSONArray, Lines, Raw} {
			f.Add(uint8(fm), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, fm uint8, body []byte) {
		format := Format(fm % 4)
		recs, err := parseBody(format, body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%v %q: error %v does not match ErrMalformed", format, body, err)
			}
			return
		}
		for i, r := range recs {
			switch format {
			case NDJSON, JSONArray:
				if !json.Valid(r) {
					t.Fatalf("%v %q: record %d %q is not JSON", format, body, i, r)
				}
			case Lines:
				if len(r) == 0 || bytes.ContainsAny(r, "\n") || bytes.HasSuffix(r, []byte("\r")) {
					t.Fatalf("%v %q: record %d %q is empty or has a line end", format, body, i, r)
				}
			}
		}
		if format == Raw {
			if len(body) > 0 && (len(recs) != 1 || !bytes.Equal(recs[0], body)) {
				t.Fatalf("raw %q: records %q", body, recs)
			}
			return
		}
		if format == NDJSON {
			for _, r := range recs {
				if bytes.ContainsAny(r, "\r\n") {
					return // the encoder compacts such a value: not the same bytes
				}
			}
		}
		enc, refused := encodeBody(format, nil, recs, make([]error, len(recs)))
		for i, e := range refused {
			if e != nil {
				t.Fatalf("%v %q: the encoder refused record %d %q that the parser gave: %v", format, body, i, recs[i], e)
			}
		}
		again, err := parseBody(format, enc)
		if err != nil {
			t.Fatalf("%v: the encoder's body %q does not parse: %v", format, enc, err)
		}
		if fmt.Sprintf("%q", again) != fmt.Sprintf("%q", recs) {
			t.Fatalf("%v %q: records %q, encoded %q, parsed again %q", format, body, recs, enc, again)
		}
	})
}
