package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"

	"novaos.dev/novaos/ext/usercontext"
	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/registry"
)

func ExampleMatchCapability() {
	fmt.Println(registry.MatchCapability("web scraping", []string{"Web Scraping", "Data Analysis"}, 0.8))
	fmt.Println(registry.MatchCapability("api", []string{"API Integration", "Data Analysis"}, 0.5))
	fmt.Println(registry.NormalizeCapability("API Integration"))
	// Output:
	// Web Scraping 1 true
	// API Integration 0.6 true
	// api-integration
}

func ExamplePolicy_Check() {
	p := &registry.Policy{AllowedHostSuffixes: []string{".agents.example.com"}}
	fmt.Println(p.Check("https://weather.agents.example.com/a2a"))
	fmt.Println(p.Check("https://weather.example.net/a2a"))
	fmt.Println(p.Check("http://127.0.0.1:9000/"))
	// Output:
	// <nil>
	// registry: host weather.example.net is outside the allowed host suffixes: registry: agent URL not allowed
	// registry: host 127.0.0.1 is a loopback address: registry: agent URL not allowed
}

func ExampleClient() {
	ctx := context.Background()
	// A registry service in this process; a NovaOS server serves the same
	// API at http://127.0.0.1:8080/api/v1/agents.
	srv := httptest.NewServer(registrysvc.New(registrysvc.NewMemoryStore(), nil).Handler())
	defer srv.Close()

	c, _ := registry.NewClient(srv.URL, &registry.ClientOptions{
		Policy: &registry.Policy{AllowedHostSuffixes: []string{".agents.example.com"}},
	})
	for _, a := range []*registry.Agent{
		{Name: "scraper", URL: "https://scraper.agents.example.com/", Capabilities: []string{"Web Scraping"}},
		{Name: "analyst", URL: "https://analyst.agents.example.com/", Capabilities: []string{"Data Analysis", "web scrape"}},
	} {
		if _, err := c.Register(ctx, a); err != nil {
			fmt.Println(err)
		}
	}
	_, err := c.Register(ctx, &registry.Agent{Name: "stray", URL: "https://stray.example.net/"})
	fmt.Println(errors.Is(err, registry.ErrURLNotAllowed))

	matches, _ := c.Find(ctx, registry.FindQuery{Capabilities: []string{"web_scraping"}, Fuzzy: true})
	for _, m := range matches {
		fmt.Printf("%s %.2f\n", m.Agent.Name, m.Score)
	}
	// Output:
	// true
	// scraper 1.00
	// analyst 0.82
}

func ExampleAgent_Recipient() {
	key, _ := usercontext.GenerateKey() // the agent's; its private half stays in its key directory
	pub, _ := key.PublicJWK()
	a := &registry.Agent{Name: "mailer", URL: "https://mailer.agents.example.com/a2a", RecipientKeys: []json.RawMessage{pub}}
	fmt.Println(registry.Validate(a, nil))

	to, _ := a.Recipient("") // what a sender seals to
	fmt.Println(to.KID == key.KID())

	private, _ := key.PrivateJWK()
	a.RecipientKeys = []json.RawMessage{private}
	fmt.Println(registry.Validate(a, nil))
	// Output:
	// <nil>
	// true
	// registry: invalid agent: recipientKeys[0]: holds a private key (member "d"): register the public JWK only (novaos keys public prints it)
}
