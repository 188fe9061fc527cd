package registry_test

import (
	"fmt"

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
