package agent_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/agent"
)

// An SDK agent's card lists every binding its handler serves, and a
// client that picks either from the card reaches the agent.
func TestCardListsServedBindings(t *testing.T) {
	a := agent.New("binder", "1", nil)
	a.MustRegister(agent.Skill{ID: "shout", Handler: func(c *agent.Context) (agent.Result, error) {
		return agent.Result{Output: "HEARD " + c.Input()}, nil
	}})
	url := endpoint(t, a)
	want := []a2a.AgentInterface{
		{URL: url, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion},
		{URL: url, ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: a2a.ProtocolVersion},
	}
	if diff := cmp.Diff(want, a.CardAt(url).SupportedInterfaces); diff != "" {
		t.Errorf("CardAt's interfaces (-want +got)\n%s", diff)
	}
	card, err := a2aclient.NewResolver(nil).Resolve(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, card.SupportedInterfaces); diff != "" {
		t.Errorf("the served card's interfaces (-want +got)\n%s", diff)
	}
	for _, binding := range []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON} {
		t.Run(binding, func(t *testing.T) {
			c, err := a2aclient.New(card, &a2aclient.Options{Transports: []string{binding}})
			if err != nil {
				t.Fatal(err)
			}
			if c.Binding() != binding {
				t.Fatalf("the client chose %s, want %s", c.Binding(), binding)
			}
			res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart("hi"))})
			if err != nil {
				t.Fatalf("SendMessage over %s: %v", binding, err)
			}
			if res.Task == nil || res.Task.Status.State != a2a.TaskStateCompleted || len(res.Task.Artifacts) != 1 ||
				a2a.PartsText(res.Task.Artifacts[0].Parts) != "HEARD hi" {
				t.Errorf("answer over %s: %+v", binding, res)
			}
		})
	}
}
