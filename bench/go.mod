module github.com/runnel-dev/runnel/bench

go 1.26.0

require (
	github.com/runnel-dev/runnel v0.0.0
	github.com/tidwall/wal v1.2.1
	golang.org/x/sys v0.50.0
)

require (
	github.com/tidwall/gjson v1.10.2 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
	github.com/tidwall/tinylru v1.1.0 // indirect
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
)

require (
	github.com/google/btree v1.1.3 // indirect
	github.com/reugn/go-streams v0.13.0
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
)

replace github.com/runnel-dev/runnel => ../
