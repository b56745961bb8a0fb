package http

import (
	"net/http"
	"net/url"
)

// SinkOption configures [NewSink]. Options are checked by the sink's
// Validate, which the pipeline calls before it starts; a bad one is an
// *vertex.OptionError naming it.
type SinkOption func(*sinkConfig)

// sinkConfig is what the options set, checked once by validate.
type sinkConfig struct {
	url    string
	format Format
	client *http.Client
	header http.Header
}

// Client makes the sink send with c (default: a client of its own with a
// 30s timeout, whose idle connections Close closes).
func Client(c *http.Client) SinkOption { return func(cfg *sinkConfig) { cfg.client = c } }

// Header adds a header to every request (for example Authorization).
func Header(key, value string) SinkOption {
	return func(c *sinkConfig) {
		if c.header == nil {
			c.header = http.Header{}
		}
		c.header.Add(key, value)
	}
}

// WithFormat sets the body format of the sink's POSTs: NDJSON (the
// default), JSONArray or Lines.
func WithFormat(f Format) SinkOption { return func(c *sinkConfig) { c.format = f } }

// validate checks the configuration.
func (c *sinkConfig) validate() error {
	u, err := url.Parse(c.url)
	switch {
	case err != nil:
		return optionError("NewSink", c.url, "is not a URL: "+err.Error())
	case u.Scheme != "http" && u.Scheme != "https":
		return optionError("NewSink", c.url, "must be an http or https URL")
	case u.Host == "":
		return optionError("NewSink", c.url, "has no host")
	case c.format != NDJSON && c.format != JSONArray && c.format != Lines:
		return optionError("WithFormat", c.format, "must be NDJSON, JSONArray or Lines")
	case c.client == nil:
		return optionError("Client", nil, "must not be nil")
	}
	return nil
}
