// Command protogen writes the Go code for NovaOS's proto files without protoc:
// protocompile parses and links the .proto sources, protoc-gen-go's own
// generator (internal_gengo, linked in) writes the messages, and
// protoc-gen-go-grpc, run as `go tool` from this module, writes the service
// code. Every piece is pinned by this module's go.mod, so a run on any
// machine with Go writes the same bytes, and CI needs nothing but the Go
// module proxy.
//
// Run it from the repository root:
//
//	go -C internal/tools/protogen run .
//
// It rewrites a2a/a2apb/a2a.pb.go and a2a/a2apb/a2a_grpc.pb.go. The test
// in a2a/a2apb runs it with -out into a temporary directory and fails when
// the checked-in files differ.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/bufbuild/protocompile"
	gengo "google.golang.org/protobuf/cmd/protoc-gen-go/internal_gengo"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// protoFiles are the sources to generate, relative to the repository root,
// which is also the import root.
var protoFiles = []string{"a2a/a2apb/a2a.proto"}

func main() {
	root := flag.String("root", "../../..", "repository root: where the .proto files are read from")
	out := flag.String("out", "", "directory the generated files are written under (default: -root)")
	flag.Parse()
	if *out == "" {
		*out = *root
	}
	if err := run(context.Background(), *root, *out); err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root, out string) error {
	req, err := request(ctx, root)
	if err != nil {
		return err
	}
	files, err := generateGo(req)
	if err != nil {
		return err
	}
	grpcFiles, err := generateGRPC(ctx, req)
	if err != nil {
		return err
	}
	for _, f := range append(files, grpcFiles...) {
		path := filepath.Join(out, filepath.FromSlash(f.GetName()))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(f.GetContent()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// request compiles the sources and builds what protoc would hand a plugin:
// every file needed, dependencies first, with source info so comments
// reach the generated code.
func request(ctx context.Context, root string) (*pluginpb.CodeGeneratorRequest, error) {
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{root}}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	compiled, err := c.Compile(ctx, protoFiles...)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	var all []*descriptorpb.FileDescriptorProto
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		imports := fd.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		all = append(all, protodesc.ToFileDescriptorProto(fd))
	}
	for _, f := range compiled {
		add(f)
	}
	return &pluginpb.CodeGeneratorRequest{
		FileToGenerate: slices.Clone(protoFiles),
		Parameter:      proto.String("paths=source_relative"),
		ProtoFile:      all,
	}, nil
}

// generateGo runs protoc-gen-go's generator in process, as its main does.
func generateGo(req *pluginpb.CodeGeneratorRequest) ([]*pluginpb.CodeGeneratorResponse_File, error) {
	gen, err := protogen.Options{}.New(req)
	if err != nil {
		return nil, fmt.Errorf("protoc-gen-go: %w", err)
	}
	for _, f := range gen.Files {
		if f.Generate {
			gengo.GenerateFile(gen, f)
		}
	}
	gen.SupportedFeatures = gengo.SupportedFeatures
	gen.SupportedEditionsMinimum = gengo.SupportedEditionsMinimum
	gen.SupportedEditionsMaximum = gengo.SupportedEditionsMaximum
	return checkResponse("protoc-gen-go", gen.Response())
}

// generateGRPC runs the pinned protoc-gen-go-grpc as a plugin: its
// generator lives in a main package, so it cannot be linked in.
func generateGRPC(ctx context.Context, req *pluginpb.CodeGeneratorRequest) ([]*pluginpb.CodeGeneratorResponse_File, error) {
	in, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "go", "tool", "protoc-gen-go-grpc")
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go tool protoc-gen-go-grpc (run from internal/tools/protogen): %w: %s", err, stderr.Bytes())
	}
	resp := &pluginpb.CodeGeneratorResponse{}
	if err := proto.Unmarshal(stdout.Bytes(), resp); err != nil {
		return nil, fmt.Errorf("protoc-gen-go-grpc: reading its response: %w", err)
	}
	return checkResponse("protoc-gen-go-grpc", resp)
}

func checkResponse(name string, resp *pluginpb.CodeGeneratorResponse) ([]*pluginpb.CodeGeneratorResponse_File, error) {
	if resp.Error != nil {
		return nil, fmt.Errorf("%s: %s", name, resp.GetError())
	}
	if len(resp.File) == 0 {
		return nil, errors.New(name + ": wrote no file")
	}
	return resp.File, nil
}
