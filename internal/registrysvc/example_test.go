package registrysvc_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/registry"
)

func Example() {
	ctx := context.Background()
	svc := registrysvc.New(registrysvc.NewMemoryStore(), &registrysvc.Options{
		Policy: &registry.Policy{AllowedHostSuffixes: []string{".agents.example.com"}},
	})
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()

	c, _ := registry.NewClient(srv.URL, nil)
	if _, err := c.Register(ctx, &registry.Agent{Name: "scraper", URL: "https://scraper.agents.example.com/",
		Capabilities: []string{"Web Scraping", "API Integration"}}); err != nil {
		fmt.Println(err)
	}
	_, err := svc.Register(ctx, &registry.Agent{Name: "evil", URL: "https://evil.example.net/"})
	fmt.Println(err)

	res, _ := c.Find(ctx, registry.FindQuery{Capabilities: []string{"web_scraping"}})
	for _, m := range res {
		fmt.Println(m.Agent.Name, m.Score)
	}
	// Output:
	// registry: invalid agent: url: host evil.example.net is outside the allowed host suffixes: registry: agent URL not allowed
	// scraper 1
}
