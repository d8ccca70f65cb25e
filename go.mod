module github.com/efap2p/efap2p

go 1.26.0

require github.com/google/go-cmp v0.7.0

require golang.org/x/sys v0.50.0

require (
	github.com/ebitengine/purego v0.11.3
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
)

require golang.org/x/text v0.14.0 // indirect
