package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
)

// Format is how a batch of records is written in a request body: the
// source reads each by its Content-Type, the sink writes one ([Format]
// option).
type Format uint8

const (
	// NDJSON is newline-delimited JSON, Content-Type application/x-ndjson
	// (application/jsonl is read too): one JSON value a line, "\r\n" or
	// "\n" after each (after the last optional), empty lines skipped. Each
	// line must be valid JSON; the record is the line.
	NDJSON Format = iota
	// JSONArray is Content-Type application/json: a JSON array, whose
	// elements are the records (each as its JSON text, without the
	// whitespace around it); any other JSON value is one record.
	JSONArray
	// Lines is Content-Type text/plain: one record a line, any bytes but a
	// newline, "\r\n" or "\n" after each (after the last optional; "\r"s
	// that end a line are dropped), empty lines skipped.
	Lines
	// Raw is Content-Type application/octet-stream, or a request without
	// one: the body is one record. The sink does not write it (a batch is
	// several records).
	Raw
)

// String returns the format's Content-Type.
func (f Format) String() string {
	switch f {
	case NDJSON:
		return "application/x-ndjson"
	case JSONArray:
		return "application/json"
	case Lines:
		return "text/plain"
	case Raw:
		return "application/octet-stream"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// formatOf returns the format of a Content-Type header ("" is Raw).
func formatOf(contentType string) (Format, error) {
	if contentType == "" {
		return Raw, nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return 0, fmt.Errorf("%w: Content-Type %q: %v", ErrUnsupportedType, contentType, err)
	}
	switch mt {
	case "application/x-ndjson", "application/jsonl":
		return NDJSON, nil
	case "application/json":
		return JSONArray, nil
	case "text/plain":
		return Lines, nil
	case "application/octet-stream":
		return Raw, nil
	}
	return 0, fmt.Errorf("%w: Content-Type %q; send application/x-ndjson, application/jsonl, application/json, text/plain or application/octet-stream",
		ErrUnsupportedType, mt)
}

// parseBody splits body into its records, in the format f. The records
// alias body. A malformed body is an error wrapping ErrMalformed that says
// where.
func parseBody(f Format, body []byte) ([][]byte, error) {
	switch f {
	case NDJSON, Lines:
		var out [][]byte
		n := 0
		for line := range bytes.Lines(body) {
			n++
			// "\r\n" ends a line as "\n" does; a line of "\r"s alone is
			// empty (the encoder refuses values ending in "\r", which
			// would not come back the same).
			line = bytes.TrimRight(bytes.TrimSuffix(line, []byte("\n")), "\r")
			if len(line) == 0 {
				continue
			}
			if f == NDJSON && !json.Valid(line) {
				return nil, fmt.Errorf("%w: line %d is not JSON", ErrMalformed, n)
			}
			out = append(out, line)
		}
		return out, nil
	case JSONArray:
		return parseJSON(body)
	case Raw:
		if len(body) == 0 {
			return nil, nil
		}
		return [][]byte{body}, nil
	}
	return nil, fmt.Errorf("%w: %v", ErrUnsupportedType, f)
}

// parseJSON returns the elements of a JSON array, or the one JSON value
// that body is.
func parseJSON(body []byte) ([][]byte, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, nil
	}
	if !json.Valid(trimmed) {
		// Valid says no without saying where: decode to find it.
		var v any
		err := json.Unmarshal(trimmed, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// Offset counts the bytes read, the bad one included; the
			// message gives its 0-based index in the body.
			lead := len(body) - len(bytes.TrimLeft(body, " \t\r\n"))
			return nil, fmt.Errorf("%w: invalid JSON at byte %d: %v", ErrMalformed, int64(lead)+se.Offset-1, se)
		}
		return nil, fmt.Errorf("%w: invalid JSON: %v", ErrMalformed, err)
	}
	if trimmed[0] != '[' {
		return [][]byte{trimmed}, nil
	}
	// A valid array: the decoder finds its elements.
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil { // '['
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	var out [][]byte
	for dec.More() {
		start := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: element %d: %v", ErrMalformed, len(out), err)
		}
		// The element is trimmed[start:end] less a separating comma and
		// whitespace: take its bytes out of body rather than the
		// decoder's copy.
		end := dec.InputOffset()
		el := bytes.TrimLeft(trimmed[start:end], " \t\r\n,")
		out = append(out, el)
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) { // ']'
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return out, nil
}

// encodeBody appends the records of values to buf in the format f. It
// returns, per value, nil or why the value cannot be a record of f (a
// newline in a line, invalid JSON); those are left out.
func encodeBody(f Format, buf []byte, values [][]byte, refused []error) ([]byte, []error) {
	if f == JSONArray {
		buf = append(buf, '[')
	}
	first := true
	for i, v := range values {
		var err error
		switch f {
		case NDJSON:
			if !json.Valid(v) {
				err = fmt.Errorf("%w: the value is not JSON, which %v needs", ErrUnencodable, f)
			} else if bytes.ContainsAny(v, "\r\n") {
				// Whitespace between JSON tokens only: compact it away.
				var c bytes.Buffer
				json.Compact(&c, v)
				v = c.Bytes()
			}
		case JSONArray:
			if !json.Valid(v) {
				err = fmt.Errorf("%w: the value is not JSON, which %v needs", ErrUnencodable, f)
			}
		case Lines:
			// The parser ends a line at "\n" and drops a "\r" before it,
			// and skips empty lines.
			if bytes.IndexByte(v, '\n') >= 0 || bytes.HasSuffix(v, []byte("\r")) || len(v) == 0 {
				err = fmt.Errorf("%w: a %v record is one non-empty line, the value is empty, has a newline or ends in \"\\r\"", ErrUnencodable, f)
			}
		default:
			err = fmt.Errorf("%w: the sink does not write %v", ErrUnencodable, f)
		}
		refused[i] = err
		if err != nil {
			continue
		}
		if f == JSONArray && !first {
			buf = append(buf, ',')
		}
		first = false
		buf = append(buf, v...)
		if f != JSONArray {
			buf = append(buf, '\n')
		}
	}
	if f == JSONArray {
		buf = append(buf, ']')
	}
	return buf, refused
}

// contentTypeOf is the Content-Type the sink sends for f.
func contentTypeOf(f Format) string {
	if f == Lines {
		return "text/plain; charset=utf-8"
	}
	return f.String()
}
