package vecdot_test

import (
	"fmt"

	"novaos.dev/novaos/vecdot"
)

func ExampleDot() {
	a := []float32{1, 2, 3}
	b := []float32{4, 5, 6}
	fmt.Println(vecdot.Dot(a, b))
	// Output: 32
}
