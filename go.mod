module github.com/efap2p/efap2p

go 1.26

require github.com/google/go-cmp v0.7.0
