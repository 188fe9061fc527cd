package bench

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/store/sqlite"
)

// FillDatabase spreads the tasks and runs over states, and a second fill
// of the same database adds as many again.
func TestFillDatabase(t *testing.T) {
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "fill.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := db.Stores()
	for fill := 1; fill <= 2; fill++ {
		if err := FillDatabase(t.Context(), st, 50, 10); err != nil {
			t.Fatalf("fill %d: %v", fill, err)
		}
		tasks, err := st.TaskStates(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		wantTasks := map[a2a.TaskState]int64{a2a.TaskStateCompleted: 20, a2a.TaskStateFailed: 10, a2a.TaskStateInputRequired: 10, a2a.TaskStateCanceled: 10}
		for s := range wantTasks {
			wantTasks[s] *= int64(fill)
		}
		if diff := cmp.Diff(wantTasks, tasks); diff != "" {
			t.Errorf("fill %d: tasks by state (-want +got):\n%s", fill, diff)
		}
		runs, err := st.Gateway.CountRuns(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		for _, n := range runs {
			total += n
		}
		if total != int64(10*fill) || runs[gateway.StatusCompleted] != int64(4*fill) || runs[gateway.StatusWaitingUser] != int64(2*fill) {
			t.Errorf("fill %d: runs by status %v", fill, runs)
		}
	}
}

func TestFillDatabaseNeedsStores(t *testing.T) {
	if err := FillDatabase(t.Context(), nil, 1, 1); err == nil {
		t.Error("nil stores: no error")
	}
}
