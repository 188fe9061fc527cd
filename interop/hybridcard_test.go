package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2av03"
)

// TestHybridCard serves a2av03.HybridCard of a v1 card and lets every
// card reader in the suite read it: a2a-go v2.3.1's resolver, a2a-js
// 1.3.0's AgentCard codec and ClientFactory, our a2a.Unmarshal (v1
// readers), and a2a-js 0.3.14's ClientFactory, which then sends a message
// to the URL the card names (a2a-js's own 0.3 server). It also records
// the A2A-Version each client sends when it fetches the card, the only
// thing a server could tell a 0.3 fetch by.
func TestHybridCard(t *testing.T) {
	js03Peer(t)
	peer03 := startNodeServer(t, "server03.mjs")
	card := &a2a.AgentCard{
		Name: "hybrid", Description: "one card, two versions", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{
			{URL: peer03, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion},
			{URL: peer03 + "/rest", ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: a2a.ProtocolVersion},
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: a2a.Bool(true), ExtendedAgentCard: a2a.Bool(false)},
		SecuritySchemes:    map[string]a2a.SecurityScheme{"key": {APIKey: &a2a.APIKeySecurityScheme{Location: "header", Name: "X-Key"}}, "bearer": {HTTPAuth: &a2a.HTTPAuthSecurityScheme{Scheme: "Bearer"}}},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "echoes", Tags: []string{"echo"},
			SecurityRequirements: []a2a.SecurityRequirement{{Schemes: map[string]a2a.StringList{"bearer": {List: []string{}}}}}}},
	}
	hybrid, err := a2av03.HybridCard(card)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var versions []string // A2A-Version of each card fetch since the last look
	fetched := func() []string {
		mu.Lock()
		defer mu.Unlock()
		v := versions
		versions = nil
		return v
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		versions = append(versions, r.Header.Get(a2a.HeaderVersion))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(hybrid)
	}))
	t.Cleanup(srv.Close)

	t.Run("ours", func(t *testing.T) {
		var got a2a.AgentCard
		if err := a2a.Unmarshal(hybrid, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(card, &got); diff != "" {
			t.Errorf("a2a.Unmarshal (-want +got):\n%s", diff)
		}
	})

	t.Run("a2a-go", func(t *testing.T) {
		// Deviation: a2a-go v2.3.1 cannot read a skill's
		// securityRequirements in ProtoJSON ({"schemes": {"bearer":
		// {"list": []}}}), hybrid or not; without them it reads the card.
		plain, err := json.Marshal(card)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := agentcard.DefaultCardParser(plain); err == nil || !strings.Contains(err.Error(), "securityRequirements") {
			t.Errorf("a2a-go read the v1 card's skill security requirements (%v): drop this workaround", err)
		}
		noSkillSecurity := *card
		noSkillSecurity.Skills = []a2a.AgentSkill{card.Skills[0]}
		noSkillSecurity.Skills[0].SecurityRequirements = nil
		h, err := a2av03.HybridCard(&noSkillSecurity)
		if err != nil {
			t.Fatal(err)
		}
		got, err := agentcard.DefaultCardParser(h)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.SupportedInterfaces) != 2 || got.SupportedInterfaces[0].URL != peer03 || string(got.SupportedInterfaces[0].ProtocolVersion) != a2a.ProtocolVersion {
			t.Errorf("interfaces %+v", got.SupportedInterfaces)
		}
		if len(got.SecuritySchemes) != 2 || len(got.Skills) != 1 {
			t.Errorf("schemes %d, skills %+v", len(got.SecuritySchemes), got.Skills)
		}
		if _, err := agentcard.DefaultResolver.Resolve(context.Background(), srv.URL); err == nil {
			t.Errorf("a2a-go resolved the card with skill security requirements")
		}
		if diff := cmp.Diff([]string{""}, fetched()); diff != "" {
			t.Errorf("a2a-go card fetch A2A-Version (-want +got):\n%s", diff)
		}
	})

	t.Run("a2a-js", func(t *testing.T) {
		out := runNodeModule(t, `
			import { AgentCard } from '@a2a-js/sdk';
			import { ClientFactory } from '@a2a-js/sdk/client';
			const url = process.argv[1];
			const card = AgentCard.toJSON(AgentCard.fromJSON(await (await fetch(url + '/.well-known/agent-card.json')).json()));
			const client = await new ClientFactory().createFromUrl(url);
			console.log(JSON.stringify({ card, protocolVersion: client.protocolVersion }));`, srv.URL)
		var got struct {
			Card            json.RawMessage `json:"card"`
			ProtocolVersion string          `json:"protocolVersion"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var c a2a.AgentCard
		if err := a2a.Unmarshal(got.Card, &c); err != nil {
			t.Fatal(err)
		}
		// a2a-js writes an empty scope list as {} (D10): equal when empty.
		if diff := cmp.Diff(card, &c, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("a2a-js 1.3.0 reading (-want +got):\n%s", diff)
		}
		if got.ProtocolVersion != a2a.ProtocolVersion {
			t.Errorf("a2a-js 1.3.0 client chose protocol %q", got.ProtocolVersion)
		}
		// The plain fetch sends nothing; ClientFactory says 1.0.
		if diff := cmp.Diff([]string{"", a2a.ProtocolVersion}, fetched()); diff != "" {
			t.Errorf("a2a-js 1.3.0 card fetches A2A-Version (-want +got):\n%s", diff)
		}
	})

	t.Run("a2a-js-03", func(t *testing.T) {
		out := runNodeModule(t, `
			import { ClientFactory } from 'a2a-js-03/client';
			import { randomUUID } from 'node:crypto';
			const client = await new ClientFactory().createFromUrl(process.argv[1]);
			const card = await client.getAgentCard();
			const res = await client.sendMessage({ message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'message' }] } });
			console.log(JSON.stringify({ card, res }));`, srv.URL)
		var got struct {
			Card a2av03.AgentCard `json:"card"`
			Res  json.RawMessage  `json:"res"`
		}
		if err := a2av03.Unmarshal(out, &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if got.Card.URL != peer03 || got.Card.PreferredTransport != a2a.BindingJSONRPC || got.Card.SecuritySchemes["key"].Type != "apiKey" {
			t.Errorf("0.3 reading: %+v", got.Card)
		}
		reply, err := a2av03.DecodeResult(a2a.MethodSendMessage, got.Res)
		if err != nil || reply.(*a2a.SendMessageResponse).Message.Text() != "echo: message" {
			t.Errorf("reply %s: %v", got.Res, err)
		}
		// A 0.3 client names no version: absent A2A-Version is what a
		// server can tell a 0.3 card fetch by (a2a-go's v1 resolver sends
		// none either).
		if diff := cmp.Diff([]string{""}, fetched()); diff != "" {
			t.Errorf("a2a-js 0.3 card fetch A2A-Version (-want +got):\n%s", diff)
		}
	})
}

// runNodeModule runs an ES module in js/ with arguments and returns its
// standard output.
func runNodeModule(t *testing.T, src string, args ...string) []byte {
	t.Helper()
	node, dir := jsPeer(t)
	cmd := exec.Command(node, append([]string{"--input-type=module", "-e", strings.TrimSpace(src)}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\nstderr:\n%s", err, stderr.String())
	}
	return stdout.Bytes()
}
