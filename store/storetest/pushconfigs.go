package storetest

import (
	"errors"
	"fmt"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

func pushConfig(taskID, id string) *a2a.TaskPushNotificationConfig {
	return &a2a.TaskPushNotificationConfig{
		Tenant: "acme",
		ID:     id,
		TaskID: taskID,
		URL:    "https://hooks.example.com/" + taskID + "/" + id,
		Token:  "token-" + id,
		Authentication: &a2a.AuthenticationInfo{
			Scheme: "Bearer", Credentials: "secret-" + id,
		},
	}
}

func mustPut(t *testing.T, s a2asrv.PushConfigStore, scope a2asrv.Scope, cfgs ...*a2a.TaskPushNotificationConfig) {
	t.Helper()
	for _, c := range cfgs {
		if err := s.Put(ctxT(t), scope, c); err != nil {
			t.Fatalf("Put(%s/%s): %v", c.TaskID, c.ID, err)
		}
	}
}

func wantConfig(t *testing.T, s a2asrv.PushConfigStore, scope a2asrv.Scope, want *a2a.TaskPushNotificationConfig) {
	t.Helper()
	got, err := s.Get(ctxT(t), scope, want.TaskID, want.ID)
	if err != nil {
		t.Fatalf("Get(%s/%s): %v", want.TaskID, want.ID, err)
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("Get(%s/%s) (-want +got):\n%s", want.TaskID, want.ID, diff)
	}
}

func configIDs(cfgs []*a2a.TaskPushNotificationConfig) []string {
	out := make([]string, len(cfgs))
	for i, c := range cfgs {
		out[i] = c.ID
	}
	return out
}

// TestPushConfigStore runs the PushConfigStore contract. newStore must return
// a new, empty store each time it is called.
func TestPushConfigStore(t *testing.T, newStore func(t *testing.T) a2asrv.PushConfigStore) {
	t.Run("PutGet", func(t *testing.T) { testPutGet(t, newStore(t)) })
	t.Run("PutReplaces", func(t *testing.T) { testPutReplaces(t, newStore(t)) })
	t.Run("PutInvalid", func(t *testing.T) { testPutInvalid(t, newStore(t)) })
	t.Run("GetMissing", func(t *testing.T) { testConfigMissing(t, newStore(t)) })
	t.Run("List", func(t *testing.T) { testConfigList(t, newStore(t)) })
	t.Run("ListBadPageToken", func(t *testing.T) { testConfigBadToken(t, newStore(t)) })
	t.Run("ScopeIsolation", func(t *testing.T) { testConfigScopes(t, newStore(t)) })
	t.Run("Delete", func(t *testing.T) { testConfigDelete(t, newStore(t)) })
	t.Run("ReturnsCopies", func(t *testing.T) { testConfigCopies(t, newStore(t)) })
}

func testPutGet(t *testing.T, s a2asrv.PushConfigStore) {
	full := pushConfig("t1", "c1")
	bare := &a2a.TaskPushNotificationConfig{ID: "c2", TaskID: "t1", URL: "http://127.0.0.1:9/hook"}
	mustPut(t, s, alice, full, bare)
	wantConfig(t, s, alice, pushConfig("t1", "c1"))
	wantConfig(t, s, alice, &a2a.TaskPushNotificationConfig{ID: "c2", TaskID: "t1", URL: "http://127.0.0.1:9/hook"})
}

func testPutReplaces(t *testing.T, s a2asrv.PushConfigStore) {
	mustPut(t, s, alice, pushConfig("t1", "c1"))
	repl := &a2a.TaskPushNotificationConfig{ID: "c1", TaskID: "t1", URL: "https://new.example.com/"}
	mustPut(t, s, alice, repl)
	wantConfig(t, s, alice, &a2a.TaskPushNotificationConfig{ID: "c1", TaskID: "t1", URL: "https://new.example.com/"})
	cfgs, next, err := s.List(ctxT(t), alice, "t1", 10, "")
	if err != nil || len(cfgs) != 1 || next != "" {
		t.Errorf("List = %v, %q, %v; want the one replaced config", configIDs(cfgs), next, err)
	}
}

func testPutInvalid(t *testing.T, s a2asrv.PushConfigStore) {
	tests := []struct {
		name string
		cfg  *a2a.TaskPushNotificationConfig
	}{
		{"nil", nil},
		{"no id", pushConfig("t1", "")},
		{"no task id", pushConfig("", "c1")},
		{"nul in id", pushConfig("t1", "c\x00")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Put(ctxT(t), alice, tt.cfg); err == nil {
				t.Error("Put() = nil, want a validation error")
			}
		})
	}
}

func testConfigMissing(t *testing.T, s a2asrv.PushConfigStore) {
	mustPut(t, s, alice, pushConfig("t1", "c1"))
	for _, k := range [][2]string{{"t1", "c2"}, {"t2", "c1"}, {"", ""}, {"t1", "C1"}, {"t1\x00", "c1"}, {"t1", "\xff"}} {
		if got, err := s.Get(ctxT(t), alice, k[0], k[1]); !errors.Is(err, a2asrv.ErrNotFound) {
			t.Errorf("Get(%q, %q) = %v, %v; want ErrNotFound", k[0], k[1], got, err)
		}
	}
}

func testConfigList(t *testing.T, s a2asrv.PushConfigStore) {
	// Put out of order; ids sort bytewise.
	all := []string{"c1", "c10", "c2", "c3", "c4", "c5", "c6"}
	for _, id := range []string{"c5", "c10", "c1", "c3", "c6", "c2", "c4"} {
		mustPut(t, s, alice, pushConfig("t1", id))
	}
	mustPut(t, s, alice, pushConfig("t2", "c0"), pushConfig("t0", "c9"))
	for _, size := range []int{1, 2, 3, 7, 8, 100, 0} {
		t.Run(fmt.Sprintf("size %d", size), func(t *testing.T) {
			var got []string
			tok := ""
			for page := 0; ; page++ {
				if page > len(all) {
					t.Fatalf("too many pages: %v", got)
				}
				cfgs, next, err := s.List(ctxT(t), alice, "t1", size, tok)
				if err != nil {
					t.Fatalf("List page %d: %v", page, err)
				}
				if size > 0 && (len(cfgs) > size || next != "" && len(cfgs) != size) {
					t.Errorf("page %d has %d configs (next %q), page size %d", page, len(cfgs), next, size)
				}
				got = append(got, configIDs(cfgs)...)
				if next == "" {
					break
				}
				tok = next
			}
			if diff := gocmp.Diff(all, got); diff != "" {
				t.Errorf("ids over all pages (-want +got):\n%s", diff)
			}
		})
	}
	cfgs, next, err := s.List(ctxT(t), alice, "no-such-task", 10, "")
	if err != nil || len(cfgs) != 0 || next != "" {
		t.Errorf("List(unknown task) = %v, %q, %v; want nothing", configIDs(cfgs), next, err)
	}
}

func testConfigBadToken(t *testing.T, s a2asrv.PushConfigStore) {
	mustPut(t, s, alice, pushConfig("t1", "c1"))
	for _, tok := range []string{"garbage", "!!!", "AAAA", "\x00"} {
		if _, _, err := s.List(ctxT(t), alice, "t1", 10, tok); !errors.Is(err, a2asrv.ErrBadPageToken) {
			t.Errorf("List(token %q) error = %v, want ErrBadPageToken", tok, err)
		}
	}
}

func testConfigScopes(t *testing.T, s a2asrv.PushConfigStore) {
	mine := pushConfig("t1", "c1")
	mustPut(t, s, alice, mine)
	for _, o := range others {
		t.Run(o.name, func(t *testing.T) {
			ctx := ctxT(t)
			if got, err := s.Get(ctx, o.scope, "t1", "c1"); !errors.Is(err, a2asrv.ErrNotFound) {
				t.Errorf("Get = %v, %v; want ErrNotFound", got, err)
			}
			if cfgs, _, err := s.List(ctx, o.scope, "t1", 10, ""); err != nil || len(cfgs) != 0 {
				t.Errorf("List = %v, %v; want nothing", configIDs(cfgs), err)
			}
			if err := s.Delete(ctx, o.scope, "t1", "c1"); err != nil {
				t.Errorf("Delete = %v, want nil", err)
			}
			wantConfig(t, s, alice, pushConfig("t1", "c1"))
			// A Put under another scope must not replace alice's config.
			theirs := &a2a.TaskPushNotificationConfig{ID: "c1", TaskID: "t1", URL: "https://evil.example.com/"}
			if err := s.Put(ctx, o.scope, theirs); err == nil {
				wantConfig(t, s, o.scope, theirs)
				if err := s.Delete(ctx, o.scope, "t1", "c1"); err != nil {
					t.Fatal(err)
				}
			}
			wantConfig(t, s, alice, pushConfig("t1", "c1"))
		})
	}
}

func testConfigDelete(t *testing.T, s a2asrv.PushConfigStore) {
	mustPut(t, s, alice, pushConfig("t1", "c1"), pushConfig("t1", "c2"))
	for i := range 2 {
		if err := s.Delete(ctxT(t), alice, "t1", "c1"); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if err := s.Delete(ctxT(t), alice, "t9", "c9"); err != nil {
		t.Errorf("Delete(never existed) = %v, want nil", err)
	}
	if _, err := s.Get(ctxT(t), alice, "t1", "c1"); !errors.Is(err, a2asrv.ErrNotFound) {
		t.Errorf("Get(deleted) error = %v, want ErrNotFound", err)
	}
	cfgs, _, err := s.List(ctxT(t), alice, "t1", 10, "")
	if err != nil || len(cfgs) != 1 || cfgs[0].ID != "c2" {
		t.Errorf("List after delete = %v, %v; want [c2]", configIDs(cfgs), err)
	}
}

func testConfigCopies(t *testing.T, s a2asrv.PushConfigStore) {
	in := pushConfig("t1", "c1")
	mustPut(t, s, alice, in)
	in.URL = "https://scribbled/"
	in.Authentication.Credentials = "scribbled"
	wantConfig(t, s, alice, pushConfig("t1", "c1"))

	got, err := s.Get(ctxT(t), alice, "t1", "c1")
	if err != nil {
		t.Fatal(err)
	}
	got.Authentication.Credentials = "scribbled"
	cfgs, _, err := s.List(ctxT(t), alice, "t1", 10, "")
	if err != nil || len(cfgs) != 1 {
		t.Fatalf("List = %v, %v", configIDs(cfgs), err)
	}
	cfgs[0].Authentication.Scheme = "scribbled"
	wantConfig(t, s, alice, pushConfig("t1", "c1"))
}
