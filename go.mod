module github.com/tumblerdb/tumbler

go 1.24

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/tidwall/btree v1.8.2
	github.com/tidwall/redcon v1.6.4
	github.com/yuin/gopher-lua v1.1.2
)

require github.com/tidwall/match v1.1.1 // indirect
