package platformtest_test

import (
	"testing"

	"novaos.dev/novaos/platformtest"
)

// The scenarios against the fake platform, over polling and over the
// gateway.
func TestScenariosOnTheFakeServer(t *testing.T) {
	for name, run := range map[string]func(*testing.T, platformtest.ScenarioServer, *platformtest.ScenarioOptions){
		"AG08": platformtest.AG08InvalidTokens,
		"AZP6": platformtest.AZP6AdapterNeverStarts,
		"AG09": platformtest.AG09DoubleDelivery,
		"AG12": platformtest.AG12PatchRules,
		"AG28": platformtest.AG28SlowStartAndRestart,
	} {
		for _, gateway := range []bool{false, true} {
			sub := name + "/polling"
			if gateway {
				sub = name + "/gateway"
			}
			t.Run(sub, func(t *testing.T) {
				t.Parallel()
				run(t, platformtest.NewFakeServer(t, nil), &platformtest.ScenarioOptions{Gateway: gateway})
			})
		}
	}
}
