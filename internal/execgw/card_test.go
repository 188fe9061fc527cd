package execgw

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/registry"
)

func TestAgentRecord(t *testing.T) {
	skills := make([]a2a.AgentSkill, 0, 80)
	for i := range 80 {
		skills = append(skills, a2a.AgentSkill{ID: "skill-" + strings.Repeat("s", i%3) + string(rune('a'+i%26))})
	}
	skills = append([]a2a.AgentSkill{{ID: ""}, {ID: strings.Repeat("x", registry.MaxCapabilityLen+1)}}, skills...)
	cases := []struct {
		name, cardName, tenant string
		wantPrefix             string
	}{
		{"plain", "Billing Agent!", "acme", "billing-agent-"},
		{"no usable letters", "¡¿", "acme", "agent-"},
		{"empty", "", "acme", "agent-"},
		{"long name", strings.Repeat("ab-", 30), "acme", strings.TrimRight(strings.Repeat("ab-", 30)[:40], "-") + "-"},
		{"long tenant", "x", strings.Repeat("t", 200), "x-"},
	}
	now := time.Date(2026, 12, 5, 1, 2, 3, 0, time.FixedZone("x", 3600))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			card := &a2a.AgentCard{Name: c.cardName, Description: strings.Repeat("d", registry.MaxDescriptionLen+10), Skills: skills}
			rec := agentRecord(c.tenant, "https://agents.example.com/a", card, now)
			if err := registry.Validate(rec, &registry.Policy{}); err != nil {
				t.Fatalf("the record is not valid: %v", err)
			}
			if !strings.HasPrefix(rec.Name, c.wantPrefix) || !regexp.MustCompile(`-[0-9a-f]{8}$`).MatchString(rec.Name) {
				t.Errorf("name %q, want %s<8 hex>", rec.Name, c.wantPrefix)
			}
			if len(rec.Capabilities) != registry.MaxListItems || rec.Capabilities[0] != skills[2].ID {
				t.Errorf("%d capabilities, first %q", len(rec.Capabilities), rec.Capabilities[0])
			}
			if len(rec.Description) != registry.MaxDescriptionLen || len(rec.Tags[0]) > registry.MaxTagLen ||
				!strings.HasPrefix(rec.Tags[0], "tenant:") || !rec.CreatedAt.Equal(now) || rec.CreatedAt.Location() != time.UTC {
				t.Errorf("record %+v", rec)
			}
		})
	}
	a := agentRecord("acme", "https://a.example.com", &a2a.AgentCard{Name: "same"}, now)
	b := agentRecord("acme", "https://a.example.com", &a2a.AgentCard{Name: "same"}, now)
	if a.Name == b.Name || a.ID == b.ID {
		t.Error("two installs of one agent share a registry name or id")
	}
}
