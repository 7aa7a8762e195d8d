module github.com/toolguard/toolguard

go 1.26.8

require (
	github.com/caarlos0/env/v11 v11.4.2
	github.com/elazarl/goproxy v1.9.3
	github.com/goccy/go-yaml v1.19.2
	github.com/lmittmann/tint v1.2.1
	github.com/tidwall/gjson v1.20.2
	go.etcd.io/bbolt v1.5.0
)

require (
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.3.0 // indirect
	golang.org/x/net v0.50.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
	golang.org/x/text v0.34.0 // indirect
)
