// Package registry is the client side and record model of the NovaOS agent
// registry.
//
// It is the "agent DNS" of the NovaOS Python SDK: the Agent record, the
// rules a record must meet, the URL Policy that keeps callers from being
// sent to hosts they never named, fuzzy capability matching, a Client for
// the registry API a NovaOS server serves under /api/v1/agents, and Store,
// the contract of the records' store (store/sqlite, store/postgres, or one
// of your own, checked by store/storetest.TestRegistryStore).
//
//	c, _ := registry.NewClient("http://127.0.0.1:8080", &registry.ClientOptions{
//		Policy: &registry.Policy{AllowedHostSuffixes: []string{".agents.example.com"}},
//	})
//	a, _ := c.Register(ctx, &registry.Agent{Name: "weather", URL: "https://weather.agents.example.com/a2a",
//		Capabilities: []string{"Weather Forecast"}})
//	matches, _ := c.Find(ctx, registry.FindQuery{Capabilities: []string{"weather_forecast"}})
//	rec, _ := c.Resolve(ctx, "weather") // looked up and its URL checked against the Policy
//
// # Capability matching
//
// Names are compared after NormalizeCapability ("Web Scraping",
// "web_scraping" and "web-scraping" are one name). Fuzzy matching scores
// pairs with Similarity (Ratcliff/Obershelp, with a floor of 0.6 when one
// name's words appear in a row in the other) and keeps scores at or above
// a threshold, 0.8 by default. The reference SDK documents no synonyms and
// no prefix rules, so there are none.
//
// # URL policy
//
// An agent URL must be an absolute http or https URL without user
// information or fragment, with a port from 1 to 65535 if any. A Policy
// may restrict hosts to suffixes; it refuses loopback and private
// addresses unless told otherwise, and metadata endpoints always. Hosts
// are classified by novaos.dev/novaos/netguard, which also looks through
// IPv6 forms carrying an IPv4 address (NAT64, 6to4, Teredo, …) and
// refuses numeric spellings such as 0177.0.0.1 or 127.1. Host names are
// checked as written (ASCII; IDNA A-labels for international names) and
// not resolved; a public name that resolves to a private address is
// caught when Connect dials it instead: the Client checks every agent
// connection's address against the Policy (see ClientOptions.Policy).
//
// # Recipient keys
//
// The registry is the control plane's key store for sealed secrets
// (ext/usercontext): Agent.RecipientKeys holds an agent's public X25519
// JWKs, each with its RFC 7638 thumbprint as kid, and Agent.Recipient
// picks the one to seal to. Validate refuses a JWK with a private member
// without repeating it. The private halves never leave the agent's key
// directory. A key is rotated by registering the new one next to the old,
// then removing the old once no sender uses it.
//
//	pub, _ := key.PublicJWK() // a *usercontext.PrivateKey made by usercontext.GenerateKey
//	a.RecipientKeys = append(a.RecipientKeys, pub)
//	c.Update(ctx, a.ID, a)     // a write: ClientOptions.AdminToken goes with it
//	to, _ := rec.Recipient("") // the first key of a resolved record
//	act, err := usercontext.SealRequest(req, to, run, secrets) // send with a2aclient.WithExtensions(act.Extensions...)
package registry
