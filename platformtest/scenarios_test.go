package platformtest_test

import (
	"testing"

	"novaos.dev/novaos/platformtest"
)

// The scenarios against the fake platform, over polling and over the
// gateway.
func TestScenariosOnTheFakeServer(t *testing.T) {
	for _, sc := range platformtest.Scenarios {
		for _, gateway := range []bool{false, true} {
			name := sc.Name + "/polling"
			if gateway {
				name = sc.Name + "/gateway"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				sc.Run(t, platformtest.NewFakeServer(t, nil), &platformtest.ScenarioOptions{Gateway: gateway})
			})
		}
	}
}
