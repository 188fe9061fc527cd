module novaos.dev/novaos/interop

go 1.26.0

require (
	github.com/a2aproject/a2a-go/v2 v2.3.1
	github.com/google/go-cmp v0.7.0
	novaos.dev/novaos v0.0.0
)

require (
	github.com/go-jose/go-jose/v4 v4.1.9 // indirect
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/mod v0.33.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
)

replace novaos.dev/novaos => ../
