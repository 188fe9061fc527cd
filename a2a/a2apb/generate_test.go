package a2apb_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// regenerate is the command that rewrites the generated files, run from the
// repository root.
const regenerate = "go -C internal/tools/protogen run ."

// generated are the files the generator writes into this directory.
var generated = []string{"a2a.pb.go", "a2a_grpc.pb.go"}

// TestGeneratedCodeIsCurrent runs the pinned generator into a temporary
// directory and compares its output with the checked-in files.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	runGo(t, root, "-C", filepath.Join(root, "internal/tools/protogen"), "run", ".", "-root", root, "-out", out)
	written, err := filepath.Glob(filepath.Join(out, "a2a", "a2apb", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != len(generated) {
		t.Errorf("the generator wrote %d files (%v), want %v", len(written), written, generated)
	}
	for _, name := range generated {
		want, err := os.ReadFile(filepath.Join(out, "a2a", "a2apb", name))
		if err != nil {
			t.Fatalf("the generator did not write %s: %v", name, err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%v; run %q from the repository root", err, regenerate)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("a2a/a2apb/%s is stale (%s); run %q from the repository root and commit the result", name, firstDiff(got, want), regenerate)
		}
	}
}

// TestWireContract runs the generator module's test that compares
// a2a.proto with the descriptor a2a-go v2.3.1 generated from the
// specification. It lives in that module so that a2a-go's copy of the
// lf.a2a.v1 descriptors is never linked beside this package's.
func TestWireContract(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	runGo(t, root, "-C", filepath.Join(root, "internal/tools/protogen"), "test", "-count=1", "-run", "^TestWireContract$", ".")
}

func runGo(t *testing.T, dir string, args ...string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to run the generator: %v", err)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, out)
	}
}

// firstDiff says where two files first differ, by line.
func firstDiff(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range max(len(g), len(w)) {
		var gl, wl []byte
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if !bytes.Equal(gl, wl) {
			return fmt.Sprintf("line %d: have %.80q, generator writes %.80q", i+1, gl, wl)
		}
	}
	return "same lines, different bytes"
}
