module novaos.dev/novaos/interop

go 1.26.0

require (
	github.com/a2aproject/a2a-go/v2 v2.3.1
	github.com/google/go-cmp v0.7.0
	google.golang.org/grpc v1.85.0
	novaos.dev/novaos v0.0.0
)

require (
	github.com/go-jose/go-jose/v4 v4.1.9 // indirect
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace novaos.dev/novaos => ../
